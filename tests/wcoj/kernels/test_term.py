"""The whole-join kernels (``wcoj.kernels.term``) against the nested-loop oracle
(``tests/reference_joins.py``).

Relations are given as several tries (the runs of an index plus a tick's delta), with
negative weights, multiplicities and rows that cancel across parts. ``generic_join`` reaches
the kernels through ``_TrieRun.whole``; a spy on ``wcoj.generic_join.run_levels`` proves it
did, and hands the tests the slot table to call ``run_levels``, ``count_tail`` and
``count_tail_parallel`` directly at every frontier width.

Also run with ``NUMBA_DISABLE_JIT=1`` (the kernels then read memory through ctypes), so
keep the inputs small.
"""

from contextlib import contextmanager

import numpy as np
import pytest
import reference_joins as ref
from hypothesis import example, given, settings
from hypothesis import strategies as st

import indexes.trie
import wcoj.generic_join as gj
from indexes.trie import Trie, TrieView
from tests.wcoj.test_generic_join import nodes, weights
from wcoj.errors import WeightOverflowError
from wcoj.generic_join import Atom, generic_join
from wcoj.kernels.term import COL, DN, TOO_BIG, UNIT, count_tail, count_tail_parallel, run_levels
from wcoj.zset import ZSet

NO_LIMIT = 1 << 40
NO_MARK = (-1, 0, 0)
MARK_LO, MARK_SIZE = -1, 130  # a byte map covering every value the tests use (0..~100)
VARS = ("a", "b", "c", "d")


# ------------------------------------------------------------------ helpers
def total_of(parts: list[dict]) -> dict:
    """The relation the parts add up to (zero weights dropped), as the oracle sees it."""
    out: dict = {}
    for p in parts:
        out = ref.zadd(out, p)
    return out


def atoms_over(spec, rels, order):
    """``Atom``s over ``TrieView``s of the parts, columns permuted to follow ``order``
    (constants first); ``spec`` holds ``(relation index, terms)`` in natural column order."""
    pos = {v: i for i, v in enumerate(order)}
    out = []
    for r, terms in spec:
        consts = [j for j, t in enumerate(terms) if not isinstance(t, str)]
        vars_ = sorted((j for j, t in enumerate(terms) if isinstance(t, str)), key=lambda j: pos[terms[j]])
        cols = consts + vars_
        tries = [Trie.from_zset(ZSet.from_dict({tuple(row[j] for j in cols): w for row, w in part.items()},
                                               arity=len(terms)))
                 for part in rels[r]]
        out.append(Atom(TrieView(tries, arity=len(terms)), tuple(terms[j] for j in cols)))
    return out


def oracle(spec, rels, output, filters=()):
    less = [((x, y), lambda a, b: a < b) for _, x, y in filters]
    return ref.join([(total_of(rels[r]), terms) for r, terms in spec], output, less)


@contextmanager
def spying(name: str):
    """Record ``(args, result)`` of every call of ``wcoj.generic_join.<name>``."""
    calls = []
    real = getattr(gj, name)

    def spy(*args):
        out = real(*args)
        calls.append((args, out))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gj, name, spy)
        yield calls


@st.composite
def relations(draw, arity: int):
    """One relation as 1-3 parts; some rows get +k in one part and -k in another."""
    rows = st.tuples(*[nodes] * arity)
    parts = [draw(st.dictionaries(rows, weights, max_size=6)) for _ in range(draw(st.integers(1, 3)))]
    if len(parts) > 1:
        for row, k in draw(st.dictionaries(rows, st.integers(1, 3), max_size=3)).items():
            i, j = draw(st.lists(st.integers(0, len(parts) - 1), min_size=2, max_size=2, unique=True))
            for p in parts:
                p.pop(row, None)
            parts[i][row], parts[j][row] = k, -k
    return parts


@st.composite
def queries(draw, max_atoms: int = 3):
    """``(spec, rels, order, output, filters)``: 1-3 relations of arity 1-3, atoms with
    optional constants (never all constants), an order, a projection, ``<`` filters."""
    arities = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    rels = [draw(relations(k)) for k in arities]
    spec = []
    for _ in range(draw(st.integers(1, max_atoms))):
        r = draw(st.integers(0, len(rels) - 1))
        k = arities[r]
        vs = draw(st.lists(st.sampled_from(VARS), min_size=k, max_size=k, unique=True))
        const = draw(st.lists(st.sampled_from([False, False, False, True]), min_size=k, max_size=k))
        const[-1] = const[-1] and not all(const)
        spec.append((r, tuple(draw(nodes) if c else v for v, c in zip(vs, const))))
    variables = sorted({t for _, terms in spec for t in terms if isinstance(t, str)})
    order = list(draw(st.permutations(variables)))
    output = draw(st.lists(st.sampled_from(variables), min_size=1, max_size=len(variables), unique=True))
    filters = []
    if len(variables) > 1:
        pairs = st.lists(st.sampled_from(variables), min_size=2, max_size=2, unique=True)
        filters = [("<", x, y) for x, y in draw(st.lists(pairs, max_size=2))]
    return spec, rels, order, output, filters


def mark_slots(prog) -> list[int]:
    """Last-level slots ``count_tail`` may count through a byte map: the level has two
    atoms of one part each, both sets, and the slot's part is not in the level before."""
    S, level_slots, level_atoms, atom_bounds = prog[:4]
    if len(level_slots) < 3:
        return []
    t0, t1 = int(level_slots[-2]), int(level_slots[-1])
    n_atoms = int(level_atoms[-1] - level_atoms[-2]) - 1
    if t1 - t0 != 2 or n_atoms != 2 or not all(S[t0:t1, UNIT]):
        return []
    before = set(S[int(level_slots[-3]):t0, COL].tolist())
    return [f for f in (t0, t0 + 1) if int(S[f, COL]) not in before]


def check_kernels(args, n_levels: int, want: dict) -> None:
    """With the slot table ``generic_join`` passed to ``run_levels`` (for a count, so the
    set flags are filled in): the full frontier is the oracle's rows in lexicographic
    order, and every count over a frontier of width ``n_levels - 1`` or ``n_levels - 2``
    (serial and parallel, with and without a byte map) is the materialised total."""
    prog, lo0, hi0 = args[:-4], args[-4], args[-3]  # run_levels(*prog, LO0, HI0, stop, limit)
    status, bound, w, LO, HI = run_levels(*prog, lo0, hi0, n_levels, NO_LIMIT)
    rows = [tuple(r) for r in bound.tolist()]
    assert status == len(rows) == w.shape[0] == LO.shape[0] == HI.shape[0]
    assert bound.shape[1] == n_levels
    assert rows == sorted(set(rows))                    # breadth first: sorted, unique
    assert dict(zip(rows, w.tolist())) == want          # no zero weights, none missing
    total = sum(w.tolist())
    for width in (n_levels - 1, n_levels - 2):
        if width < 0:
            continue
        status, bound, w, LO, HI = run_levels(*prog, lo0, hi0, width, NO_LIMIT)
        assert status == bound.shape[0] and bound.shape[1] == width
        marks = [NO_MARK]
        if width == n_levels - 2:  # the byte map serves the fused two-level count only
            marks += [(f, MARK_LO, MARK_SIZE) for f in mark_slots(prog)]
        for kernel in (count_tail, count_tail_parallel):
            for mark in marks:
                bad, got = kernel(*prog, bound, w, LO, HI, *mark)
                assert (int(bad), int(got)) == (-1, total), (kernel, width, mark)


def is_empty(atoms) -> bool:
    return any(not a.extender.trie_parts() for a in atoms)


# ------------------------------------------------------------------ 1. random queries
@given(queries())
@example(([(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))],
          [[{(1, 2): 2, (2, 3): 1, (1, 3): 3}, {(2, 3): -1, (3, 4): 2}]],
          ["a", "b", "c"], ["a", "b", "c"], []))
@example(([(0, ("a",))], [[{(0,): 2, (1,): -3}, {(0,): -2, (4,): 1}]], ["a"], ["a"], []))
def test_whole_join_equals_nested_loops(q):
    spec, rels, order, output, filters = q
    atoms = atoms_over(spec, rels, order)
    want = oracle(spec, rels, output, filters)
    with spying("run_levels") as calls:
        z = generic_join(atoms, order, output, fused=True, filters=filters)
        z.check()
        assert z.to_dict() == want
        assert generic_join(atoms, order, fused=True, filters=filters, count_only=True) == sum(want.values())
    assert len(calls) == (0 if is_empty(atoms) else 2)
    if calls:
        check_kernels(calls[1][0], len(order), oracle(spec, rels, order, filters))


@given(queries())
def test_whole_returns_the_frontier_itself(q):
    spec, rels, order, _, filters = q
    atoms = atoms_over(spec, rels, order)
    run = gj._TrieRun(atoms, gj._plan(atoms, order, filters))
    if run.empty:
        return
    want = oracle(spec, rels, order, filters)
    bound, w = run.whole(False)
    assert dict(zip(map(tuple, bound.tolist()), w.tolist())) == want
    assert run.whole(True) == sum(want.values())


def test_worked_example_rows_cancelling_across_parts_vanish():
    # E = {(1,2): 2, (2,3): 1, (1,3): 3} + a delta that deletes (2,3) and adds (3,4)
    rels = [[{(1, 2): 2, (2, 3): 1, (1, 3): 3}, {(2, 3): -1, (3, 4): 5}]]
    tri = [(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))]
    atoms = atoms_over(tri, rels, "abc")
    assert generic_join(atoms, "abc", fused=True).to_dict() == {}
    path = [(0, ("a", "b")), (0, ("b", "c"))]
    atoms = atoms_over(path, rels, "abc")
    assert generic_join(atoms, "abc", fused=True).to_dict() == {(1, 3, 4): 15}
    assert generic_join(atoms, "abc", fused=True, count_only=True) == 15


# ------------------------------------------------------------------ 2. level-0 directories
def dense_parts(n: int = 80) -> list[dict]:
    """A base run over sources 1..n-1 and a delta that cancels and adds edges. No source is
    a multiple of 7 (holes in the directory), targets run past its end (up to n + 5) and
    0 lies before it; steps back by 5 close 4-cycles."""
    base = {}
    for i in range(1, n):
        if i % 7:
            for step, wt in ((1, 1), (2, 2), (3, -1), (-5, 1)):
                base[(i, (i + step) % (n + 6))] = wt
    delta = {(1, 2): -1, (2, 4): -2, (0, 1): 3, (n + 5, 1): 1, (5, 6): 4}
    return [base, delta]


def _build(parts: list[dict], dense: bool, spec, order):
    with pytest.MonkeyPatch.context() as mp:
        if not dense:
            mp.setattr(indexes.trie, "DENSE_SPAN", 0)
        else:  # small tries too
            mp.setattr(indexes.trie, "DIRECTORY_ROWS", 0)
        atoms = atoms_over(spec, [parts], order)
    for a in atoms:
        if a.terms and isinstance(a.terms[0], str):
            assert (a.extender.trie_parts()[0].dense0.shape[0] > 0) == dense
    return atoms


DENSE_QUERIES = {
    "triangle": ([(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))], "abc", []),
    "triangle a<b<c": ([(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))], "abc",
                       [("<", "a", "b"), ("<", "b", "c")]),
    "triangle c first": ([(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))], "cab", []),
    "4-cycle b<d": ([(0, ("a", "b")), (0, ("b", "c")), (0, ("c", "d")), (0, ("d", "a"))], "abcd",
                    [("<", "b", "d")]),
    "path with a constant": ([(0, (3, "b")), (0, ("b", "c")), (0, ("c", "d"))], "bcd", []),
    "self-join on level 0": ([(0, ("a", "b")), (0, ("a", "c"))], "abc", [("<", "b", "c")]),
}


@pytest.mark.parametrize("name", sorted(DENSE_QUERIES))
def test_dense_directories_change_nothing(name):
    spec, order, filters = DENSE_QUERIES[name]
    order = list(order)
    parts = dense_parts()
    want = oracle(spec, [parts], order, filters)
    assert want, "the data should give results"
    results = []
    for dense in (True, False):
        atoms = _build(parts, dense, spec, order)
        with spying("run_levels") as calls:
            z = generic_join(atoms, order, fused=True, filters=filters)
            count = generic_join(atoms, order, fused=True, filters=filters, count_only=True)
        assert calls and all(out[0] >= 0 for _, out in calls)
        assert z.to_dict() == want and count == sum(want.values())
        check_kernels(calls[1][0], len(order), want)
        results.append(gj._TrieRun(atoms, gj._plan(atoms, order, filters)).whole(False))
    (b1, w1), (b2, w2) = results
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(w1, w2)


@settings(max_examples=10)
@given(st.sets(st.tuples(st.integers(0, 79), st.integers(0, 79)), min_size=70, max_size=110),
       st.dictionaries(st.tuples(st.integers(0, 85), st.integers(0, 85)), weights, max_size=6))
def test_dense_directories_on_random_graphs(edges, delta):
    base = {e: 1 + (e[0] + e[1]) % 3 for e in edges}
    base.update({(i, (i * 5 + 1) % 80): 1 for i in range(80)})  # >= 64 distinct sources
    parts = [base, delta]
    spec, order, filters = DENSE_QUERIES["triangle a<b<c"]
    order = list(order)
    want = oracle(spec, [parts], order, filters)
    for dense in (True, False):
        atoms = _build(parts, dense, spec, order)
        assert generic_join(atoms, order, fused=True, filters=filters).to_dict() == want
        assert generic_join(atoms, order, fused=True, filters=filters, count_only=True) == sum(want.values())


# ------------------------------------------------------------------ 3. fused counts
CYCLE4 = [(0, ("a", "b")), (0, ("b", "c")), (0, ("c", "d")), (0, ("d", "a"))]
edge_sets = st.frozensets(st.tuples(nodes, nodes), max_size=14).map(lambda es: [dict.fromkeys(es, 1)])
graph_parts = st.one_of(relations(2), edge_sets)   # sets take the byte-map count


@given(graph_parts, st.permutations("abcd"),
       st.lists(st.sampled_from([("<", "a", "c"), ("<", "b", "d"), ("<", "d", "a"), ("<", "a", "b")]),
                max_size=2, unique=True),
       st.sampled_from([0, NO_LIMIT]))
def test_four_cycle_counts_equal_the_materialised_count(parts, order, filters, tail_rows):
    """count_only runs the first two levels, then the fused two-level count, serial or
    parallel (PARALLEL_TAIL_ROWS 0 forces the parallel kernel, and the byte map on sets)."""
    order = list(order)
    rels = [parts]
    want = oracle(CYCLE4, rels, order, filters)
    atoms = atoms_over(CYCLE4, rels, order)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gj, "PARALLEL_TAIL_ROWS", tail_rows)
        with spying("count_tail") as serial, spying("count_tail_parallel") as parallel, \
                spying("run_levels") as levels:
            count = generic_join(atoms, order, fused=True, filters=filters, count_only=True)
            rows = generic_join(atoms, order, fused=True, filters=filters)
    assert rows.to_dict() == want
    assert count == rows.total() == sum(want.values())
    if not is_empty(atoms):
        assert levels[0][0][-2] == 2                        # count_only stops two levels short
        assert len(parallel if tail_rows == 0 else serial) == 1
        check_kernels(levels[0][0], 4, want)


def hub_parts(weight) -> list[dict]:
    """Hub 1 points at 2..79; node 0 at 1, 2, 5, 9 and 79; a few edges among the hub's targets.
    The hub's list is far longer than the others (the galloping counts and the byte map's
    merge of a long list against a short one), and its first and last targets close triangles."""
    edges = [(1, t) for t in range(2, 80)]
    edges += [(0, 1), (0, 2), (0, 5), (0, 9), (0, 79), (5, 9), (9, 40), (5, 40), (2, 5)]
    return [{e: weight(e) for e in edges}]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tail_rows", [0, NO_LIMIT])
@pytest.mark.parametrize("order, filters", [("abc", []), ("abc", [("<", "b", "c")]), ("bca", []),
                                            ("acb", [("<", "a", "b")])])
def test_triangle_counts_around_a_hub(weighted, tail_rows, order, filters):
    order = list(order)
    rels = [hub_parts((lambda e: 1 + (e[0] + e[1]) % 3) if weighted else (lambda e: 1))]
    tri = [(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))]
    want = oracle(tri, rels, order, filters)
    assert want
    atoms = atoms_over(tri, rels, order)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gj, "PARALLEL_TAIL_ROWS", tail_rows)
        with spying("run_levels") as levels:
            count = generic_join(atoms, order, fused=True, filters=filters, count_only=True)
    assert count == sum(want.values())
    assert generic_join(atoms, order, fused=True, filters=filters).to_dict() == want
    check_kernels(levels[0][0], 3, want)


def directory_graph(seed: int, shape: str) -> list[tuple[int, int]]:
    """Oriented edges ``u < v`` over 150 nodes: random, or a 20-clique plus a star whose
    hub sits in the middle of the ids (the benchmark's skewed shape, small)."""
    rng = np.random.default_rng(seed)
    if shape == "random":
        e = rng.integers(0, 150, (700, 2))
    else:
        clique = [(u, v) for u in range(20) for v in range(u + 1, 20)]
        star = [(75, v) for v in range(150) if v != 75]
        e = np.array(clique + star + rng.integers(0, 150, (60, 2)).tolist())
    return sorted({(int(min(u, v)), int(max(u, v))) for u, v in e if u != v})


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("shape", ["random", "clique+star"])
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("filters", [[], [("<", "b", "c")]])
def test_triangle_count_through_the_directory_probe(seed, shape, split, filters):
    """Tries with a level-0 directory (forced at this size) take ``_probe_row``, the
    prefetching loop of a triangle's last two levels, when each atom is one part; split
    into a base run and a tick's change (some rows deleted) they take the general loop
    (two parts at the last level: no byte map).
    Both equal a count by neighbour sets, with and without the byte map."""
    edges = directory_graph(seed, shape)
    out: dict = {}
    for u, v in edges:
        out.setdefault(u, set()).add(v)
    want = sum(len(out.get(a, set()) & out.get(b, set())) for a, b in edges)
    parts = [dict.fromkeys(edges, 1)]
    if split:  # the last 40 edges arrive in a tick that also deletes 10 earlier ones
        parts = [dict.fromkeys(edges[:-40], 1), {**dict.fromkeys(edges[-40:], 1), **dict.fromkeys(edges[:10], -1)}]
        for a, b in edges[:10]:
            out[a].discard(b)
        want = sum(len(out.get(a, set()) & out.get(b, set())) for a, b in edges[10:])
    tri = [(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexes.trie, "DIRECTORY_ROWS", 0)  # small kernel-built tries get one too
        atoms = atoms_over(tri, [parts], ["a", "b", "c"])
        mp.setattr(gj, "PARALLEL_TAIL_ROWS", 0)
        with spying("count_tail_parallel") as calls, spying("run_levels") as levels:
            assert generic_join(atoms, ["a", "b", "c"], fused=True, filters=filters, count_only=True) == want
    args = calls[0][0]
    S, level_slots, mark = args[0], args[1], args[-3:]
    level_b = range(int(level_slots[1]), int(level_slots[2]))
    assert len(level_b) == (4 if split else 2)            # one part per atom, or two
    if not split:
        assert mark[0] >= 0                               # the byte map was used
        assert any(S[s, DN] > 0 for s in level_b)         # and the directory is there to probe
    bad, got = count_tail(*args[:-3], *NO_MARK)            # the general loop, no byte map
    assert (int(bad), int(got)) == (-1, want)
    assert levels


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("order", ["abc", "bca", "cab"])
def test_triangle_rows_through_level0_bit_sets(seed, order):
    """Runs built by a kernel carry a bit set of level 0 (``level0_bits``; forced at this size) and
    the join's searches of a whole level test it first: a base run, a middle run that
    also deletes base rows and adds some twice, and a tick's change, as an index's
    ``curr`` view holds them. Rows and weights equal a neighbour-set oracle."""
    rng = np.random.default_rng(seed)

    def pairs(m: int) -> set:
        return {(int(min(u, v)), int(max(u, v))) for u, v in rng.integers(0, 150, (m, 2)) if u != v}

    base = sorted(pairs(500))
    middle = {**dict.fromkeys(sorted(pairs(120)), 1), **dict.fromkeys(base[:20], -1), **dict.fromkeys(base[20:30], 1)}
    parts = [dict.fromkeys(base, 1), middle, dict.fromkeys(sorted(pairs(90)), 1)]
    rel = total_of(parts)
    out: dict = {}
    for (u, v), w in rel.items():
        out.setdefault(u, {})[v] = w
    want = {}
    for (a, b), w in rel.items():
        for c in out.get(a, {}).keys() & out.get(b, {}).keys():
            want[(a, b, c)] = w * out[a][c] * out[b][c]
    tri = [(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexes.trie, "BITS_ROWS", 64)
        atoms = atoms_over(tri, [parts], list(order))
    assert all(p.bits0.shape[0] for a in atoms for p in a.extender.trie_parts())  # every part has one
    got = generic_join(atoms, list(order), output=["a", "b", "c"], fused=True)
    assert got.to_dict() == want and want


def test_byte_map_count_of_a_variable_only_one_two_part_atom_has():
    """Regression: ``_TrieRun._mark`` took a last level of ONE atom with two parts (a
    variable no other atom has) for two atoms, and ``count_tail`` then counted the
    intersection of the two parts instead of their sum (0 instead of 12 here)."""
    a_rows = [{(x,): 1 for x in range(4)}]
    b_rows = [{(1,): 1, (2,): 1}, {(3,): 1}]         # a base run and a tick's insert
    spec = [(0, ("a",)), (1, ("b",))]                 # a cross product: 4 * 3 rows
    atoms = atoms_over(spec, [a_rows, b_rows], ["a", "b"])
    assert generic_join(atoms, ["a", "b"], fused=True).total() == 12
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gj, "PARALLEL_TAIL_ROWS", 0)      # what a frontier of 2,000 rows gets
        assert generic_join(atoms, ["a", "b"], fused=True, count_only=True) == 12


@given(st.lists(st.dictionaries(st.tuples(nodes), weights, max_size=5), min_size=1, max_size=3))
def test_one_variable_counts_equal_the_materialised_count(parts):
    rels = [parts]
    spec = [(0, ("a",)), (0, ("a",))]
    want = oracle(spec, rels, ["a"])
    atoms = atoms_over(spec, rels, ["a"])
    with pytest.MonkeyPatch.context() as mp:
        for tail_rows in (0, NO_LIMIT):
            mp.setattr(gj, "PARALLEL_TAIL_ROWS", tail_rows)
            with spying("run_levels") as levels:
                assert generic_join(atoms, ["a"], fused=True, count_only=True) == sum(want.values())
            if levels:
                assert levels[0][0][-2] == 0
                check_kernels(levels[0][0], 1, want)
    assert generic_join(atoms, ["a"], fused=True).to_dict() == want


def test_count_worked_example_with_a_constant_and_one_variable():
    # S(1, b) joined with T(b): one variable after the constant
    rels = [[{(1, 2): 2, (1, 3): 1, (2, 3): 7}, {(1, 3): -1, (1, 4): 3}], [{(2,): 5, (4,): -1}]]
    spec = [(0, (1, "b")), (1, ("b",))]
    atoms = atoms_over(spec, rels, ["b"])
    assert generic_join(atoms, ["b"], fused=True).to_dict() == {(2,): 10, (4,): -3}
    assert generic_join(atoms, ["b"], fused=True, count_only=True) == 7


# ------------------------------------------------------------------ 4. TOO_BIG
@given(queries(), st.integers(1, 3))
def test_tiny_slice_rows_fall_back_to_the_sliced_path(q, slice_rows):
    spec, rels, order, output, filters = q
    atoms = atoms_over(spec, rels, order)
    want = oracle(spec, rels, output, filters)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gj, "SLICE_ROWS", slice_rows)
        assert generic_join(atoms, order, output, fused=True, filters=filters).to_dict() == want
        assert generic_join(atoms, order, fused=True, filters=filters, count_only=True) == sum(want.values())


def test_too_big_status_and_the_fallback():
    rels = [[{(1, 2): 1, (1, 3): 2, (2, 3): 1, (3, 1): 1}, {(2, 1): 3, (3, 1): -1}]]
    spec = [(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))]
    order = ["a", "b", "c"]
    atoms = atoms_over(spec, rels, order)
    want = oracle(spec, rels, order)
    assert want
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gj, "SLICE_ROWS", 1)
        with spying("run_levels") as calls:
            assert gj._TrieRun(atoms, gj._plan(atoms, order)).whole(False) is None
            assert generic_join(atoms, order, fused=True).to_dict() == want
        assert calls and all(out[0] == TOO_BIG for _, out in calls)
    # the limit bounds the rows each level materialises (not the candidates it looks at:
    # level 0 proposes 3 + 2 values over two parts, and has 3 rows)
    args = calls[0][0]
    sizes = [run_levels(*args[:-2], stop, NO_LIMIT)[0] for stop in (1, 2, 3)]
    assert sizes[0] == 3 and sizes[2] == len(want)
    for stop in (1, 2, 3):
        need = max(sizes[:stop])
        assert run_levels(*args[:-2], stop, need)[0] == sizes[stop - 1]
        assert run_levels(*args[:-2], stop, need - 1)[0] == TOO_BIG


# ------------------------------------------------------------------ 5. overflow
BIG = 2**62


def _raises_both(spec, rels, order):
    atoms = atoms_over(spec, rels, order)
    with spying("run_levels") as calls:
        with pytest.raises(WeightOverflowError):
            generic_join(atoms, order, fused=True)
        with pytest.raises(WeightOverflowError):
            generic_join(atoms, order, fused=True, count_only=True)
    assert len(calls) == 2


@pytest.mark.parametrize("rels, spec, order", [
    # 2**62 * 4 along a path (the product at level b; the fused count's tail product)
    ([[{(1, 2): BIG}, {(2, 3): 4}]], [(0, ("a", "b")), (0, ("b", "c"))], "abc"),
    # the same with negative weights: -2**62 * 4 < -2**63
    ([[{(1, 2): -BIG}, {(2, 3): 4}]], [(0, ("a", "b")), (0, ("b", "c"))], "abc"),
    # two relations, the product at the last level, under a constant
    ([[{(7, 1): BIG}], [{(1,): -3}]], [(0, (7, "x")), (1, ("x",))], "x"),
    # a row's parts sum past int64 before any product
    ([[{(1, 2): BIG}, {(1, 2): BIG}]], [(0, ("a", "b"))], "ab"),
    # 4 variables: the frontier weight times the two-level count
    ([[{(1, 2): BIG, (2, 3): 1, (3, 4): 1, (4, 1): 2}]], CYCLE4, "abcd"),
    # a triangle: the two atoms that end at its last level multiply past int64 there
    ([[{(1, 2): 1, (2, 3): 2**32, (1, 3): 2**32}]], [(0, ("a", "b")), (0, ("b", "c")), (0, ("a", "c"))], "abc"),
])
def test_weight_overflow_raises_for_rows_and_counts(rels, spec, order):
    _raises_both(spec, rels, list(order))


@pytest.mark.parametrize("spec, order", [([(0, ("a",))], "a"), ([(0, ("a", "b"))], "ab"),
                                         ([(0, ("a", "b")), (1, ("b",))], "ab")])
def test_counts_that_overflow_raise_though_every_row_fits(spec, order):
    order = list(order)
    rels = [[{(1, 1): BIG, (1, 2): BIG}] if len(spec[0][1]) == 2 else [{(1,): BIG, (2,): BIG}],
            [{(1,): 1, (2,): 1}]]
    atoms = atoms_over(spec, rels, order)
    assert generic_join(atoms, order, fused=True).to_dict() == oracle(spec, rels, order)
    with pytest.raises(WeightOverflowError):
        generic_join(atoms, order, fused=True, count_only=True)


def test_products_at_the_int64_boundary_fit():
    """-2**62 * 2 is exactly -2**63: no overflow; 2**62 * 2 is one past int64's maximum."""
    spec = [(0, ("a", "b")), (0, ("b", "c"))]
    rels = [[{(1, 2): -BIG}, {(2, 3): 2}]]
    atoms = atoms_over(spec, rels, "abc")
    assert generic_join(atoms, "abc", fused=True).to_dict() == {(1, 2, 3): -(2**63)}
    assert generic_join(atoms, "abc", fused=True, count_only=True) == -(2**63)
    _raises_both(spec, [[{(1, 2): BIG}, {(2, 3): 2}]], list("abc"))


big_weights = st.sampled_from([1, -1, 3, -2, 2**31, -(2**31), BIG, -BIG, 2**63 - 1, -(2**63)])


@given(queries(max_atoms=2), st.data())
def test_big_weights_raise_or_equal_the_oracle(q, data):
    """Never a silent wrap: the result equals the exact (Python int) oracle or raises, and it
    raises whenever the exact answer does not fit in int64."""
    spec, rels, order, _, filters = q
    rels = [[{row: data.draw(big_weights) for row in p} for p in parts] for parts in rels]
    atoms = atoms_over(spec, rels, order)
    want = oracle(spec, rels, order, filters)
    try:
        got = generic_join(atoms, order, fused=True, filters=filters).to_dict()
    except WeightOverflowError:
        got = None
    if not all(map(ref.fits, want.values())):
        assert got is None
    elif got is not None:
        assert got == want
    total = sum(want.values())
    try:
        count = generic_join(atoms, order, fused=True, filters=filters, count_only=True)
    except WeightOverflowError:
        count = None
    if not ref.fits(total):
        assert count is None
    elif count is not None:
        assert count == total


# ------------------------------------------------------------------ row_weights
@given(st.integers(1, 3).flatmap(lambda k: st.tuples(st.just(k), relations(k))), st.booleans(), st.data())
def test_row_weights_sum_every_part(rel, dense, data):
    """``TrieView.weight`` (``kernels.term.row_weights``): each row's weight over all parts,
    0 for rows no part holds, with and without level-0 directories."""
    k, parts = rel
    if dense:  # a dense run beside the drawn ones: 64 ids, with the others' values among them
        parts = parts + [{(i,) + (i % 5,) * (k - 1): 1 + i % 2 for i in range(64)}]
    rows = data.draw(st.lists(st.tuples(*[st.integers(-1, 70)] * k), max_size=8))  # most absent
    rows += list(total_of(parts))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexes.trie, "DIRECTORY_ROWS", 0)  # small tries get directories too
        view = atoms_over([(0, tuple(VARS[:k]))], [parts], VARS[:k])[0].extender
    assert any(t.dense0.shape[0] for t in view.trie_parts()) == dense
    want = total_of(parts)
    got = view.weight(np.array(rows, dtype=np.int64).reshape(-1, k))
    assert got.tolist() == [want.get(r, 0) for r in rows]


def test_row_weights_refuse_a_sum_past_int64():
    view = atoms_over([(0, ("a", "b"))], [[{(1, 2): BIG, (3, 4): 1}, {(1, 2): BIG}]], "ab")[0].extender
    assert view.weight(np.array([[3, 4], [1, 3]])).tolist() == [1, 0]
    with pytest.raises(WeightOverflowError):
        view.weight(np.array([[3, 4], [1, 2]]))


# ------------------------------------------------------------------ 6. != filters in the kernel
@given(queries(), st.data())
def test_unequal_filters_run_in_the_kernel_and_equal_the_oracle(q, data):
    """``(x, y), np.not_equal`` filters are checked inside ``run_levels``/``count_tail``
    (a candidate equal to the named column is skipped), so 4-cycles and directed cycles
    stay on the whole-join path; rows and counts equal the nested loops."""
    spec, rels, order, output, less = q
    variables = sorted(set(order))
    if len(variables) < 2:
        return
    pairs = st.lists(st.sampled_from(variables), min_size=2, max_size=2, unique=True)
    ne = [tuple(p) for p in data.draw(st.lists(pairs, min_size=1, max_size=2))]
    filters = list(less) + [(p, np.not_equal) for p in ne]
    want = ref.join([(total_of(rels[r]), terms) for r, terms in spec], output,
                    [((x, y), lambda a, b: a < b) for _, x, y in less]
                    + [(p, lambda a, b: a != b) for p in ne])
    atoms = atoms_over(spec, rels, order)
    with spying("run_levels") as calls:
        got = generic_join(atoms, order, output, fused=True, filters=filters).to_dict()
        count = generic_join(atoms, order, output, fused=True, filters=filters, count_only=True)
    assert got == want
    assert count == sum(want.values())
    assert calls or is_empty(atoms)                  # the kernel, not the sliced fallback


# ------------------------------------------------------------------ all terms of a delta
DELTA_QUERIES = {
    "triangle": ([("a", "b"), ("b", "c"), ("a", "c")], ["a", "b", "c"], ()),
    "4-cycle, < and !=": ([("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")], ["a", "b", "c", "d"],
                          (("<", "a", "c"), (("b", "d"), np.not_equal))),
    "projected path": ([("a", "b"), ("b", "c")], ["c", "a"], ()),
    "mutual edge": ([("a", "b"), ("b", "a")], ["a", "b"], ()),  # the other atom ends inside the seed levels
    "path, < and != on the delta's columns": ([("a", "b"), ("b", "c")], ["a", "b", "c"],
                                              (("<", "a", "b"), (("b", "c"), np.not_equal))),
}


@given(st.sampled_from(sorted(DELTA_QUERIES)),
       st.dictionaries(st.tuples(nodes, nodes), weights, max_size=12),
       st.dictionaries(st.tuples(nodes, nodes), weights, max_size=6))
@settings(max_examples=60)
def test_run_terms_gives_the_delta_of_the_oracle(name, before, change):
    """Every term of the delta rule in one ``run_terms`` call (through ``run_program``):
    ΔQ = Q(after) - Q(before)."""
    from indexes import Relation
    from wcoj.generic_join import IncrementalGenericJoin

    shape, output, filters = DELTA_QUERIES[name]
    E = Relation("E", 2)
    E.load(ZSet.from_dict(before, arity=2))
    join = IncrementalGenericJoin([(E, terms) for terms in shape], output, filters=filters)
    E.stage(ZSet.from_dict(change, arity=2))
    after = ref.zadd(before, change)
    tests = [((x, y), (lambda a, b: a < b) if f == "<" else (lambda a, b: a != b))
             for f, x, y in ((f[0], f[1], f[2]) if f[0] == "<" else ("!=",) + tuple(f[0]) for f in filters)]
    atoms = lambda rel: [(rel, terms) for terms in shape]  # noqa: E731
    want = ref.zadd(ref.join(atoms(after), output, tests),
                    {k: -w for k, w in ref.join(atoms(before), output, tests).items()})
    with spying("run_program") as calls:
        got = join._fused_delta()
    assert got is not None and len(calls) == (0 if E.delta_is_empty() else 1)
    got.check()
    assert got.to_dict() == want
    if calls:  # a row limit of 0 stops the first level that has a candidate
        (args, out), = calls
        seed = args[-3]  # run_program(..., first_part, term_seed, share, shares)
        assert seed.any(), "the delta atoms of these queries bind their terms' first levels"
        generic = gj.run_program(*args[:-3], np.zeros_like(seed), 0, 1)  # every level by run_levels
        assert ZSet.from_arrays(generic[2], generic[3], arity=len(output)).to_dict() == want
        status, _, _, _ = gj.run_program(*args[:16], 0, *args[17:])
        if out[0] > 0:
            assert status == TOO_BIG
        for shares in (2, 3):  # shares of the terms' rows partition them
            outs = [gj.run_program(*args[:-2], i, shares) for i in range(shares)]
            keys = np.concatenate([o[2] for o in outs])
            w = np.concatenate([o[3] for o in outs])
            assert ZSet.from_arrays(keys, w, arity=len(output)).to_dict() == want


def test_an_overflow_in_the_seeded_levels_raises():
    """A weight product that overflows where ``_seed`` multiplies it (the other atom ends
    at the delta's last column) makes ``run_program`` fail and the delta rule raise."""
    from indexes import Relation
    from wcoj.generic_join import IncrementalGenericJoin

    E = Relation("E", 2)
    E.load(ZSet.from_dict({(1, 2): BIG}, arity=2))
    join = IncrementalGenericJoin([(E, ("a", "b")), (E, ("b", "a"))], ["a", "b"])
    E.stage(ZSet.from_dict({(2, 1): 2}, arity=2))
    with spying("run_program") as calls:
        assert join._fused_delta() is None
    (args, out), = calls
    assert args[-3].tolist() == [2, 2] and out[0] < 0 and out[0] != TOO_BIG
    with pytest.raises(WeightOverflowError):
        join.delta()
    E.rollback()
    assert join.delta().to_dict() == {}
