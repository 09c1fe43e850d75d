"""The join program's kernels against the nested-loop oracle: batch levels over parts of
every layout (mutable tries with a sorted or dense level 0, compact tries), the fused
count of the last two levels with and without its byte map, and the shares of a delta
rule. ``tests/wcoj/test_generic_join.py`` drives the same kernels through the Python
driver on random queries. Also run with ``NUMBA_DISABLE_JIT=1``."""

import numpy as np
import pytest
import reference_joins as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes import Relation
from indexes.trie import Trie, TrieView
from wcoj import config
from wcoj.generic_join import Atom, IncrementalGenericJoin, generic_join
from wcoj.tables import TrieTable
from wcoj.zset import ZSet

edges = st.sets(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=30)


def parts(rows: dict, layout: str):
    """``rows`` split over two parts of the given layout."""
    items = sorted(rows.items())
    halves = [dict(items[::2]), dict(items[1::2])]
    out = []
    for h in halves:
        z = ZSet.from_dict(h, arity=2)
        out.append(TrieTable.compact(z.keys, z.weights) if layout == "compact" else Trie.from_zset(z).part)
    return out


@pytest.mark.parametrize("layout", ["mutable", "dense", "compact"])
@settings(max_examples=25)
@given(edges)
def test_triangles_over_parts_equal_nested_loops(layout, es):
    with pytest.MonkeyPatch.context() as mp:
        if layout == "dense":
            mp.setattr(config, "DENSE_MIN", 1)
        E = {e: 1 for e in es}
        v = TrieView(parts(E, layout), 2)
        atoms = [Atom(v, ("a", "b")), Atom(v, ("a", "c")), Atom(v, ("b", "c"))]
        want = ref.join([(E, ("a", "b")), (E, ("a", "c")), (E, ("b", "c"))], ["a", "b", "c"])
        assert generic_join(atoms, ["a", "b", "c"]).to_dict() == want
        assert generic_join(atoms, ["a", "b", "c"], count_only=True) == sum(want.values())


@pytest.mark.parametrize("mark", [True, False], ids=["byte map", "merge"])
def test_the_fused_count_with_a_byte_map_equals_the_rows(monkeypatch, mark):
    """A count of triangles on a graph large enough for the fused count's byte map (and,
    with ``MARK_SPAN`` 0, without it) equals the number of rows the levels produce."""
    import wcoj.generic_join as gj
    monkeypatch.setattr(config, "COUNT_SHARE_ROWS", 10)
    if not mark:
        monkeypatch.setattr(config, "MARK_SPAN", 0)
    chosen = []
    real = gj._TrieRun._mark
    monkeypatch.setattr(gj._TrieRun, "_mark", staticmethod(lambda *a: chosen.append(real(*a)) or chosen[-1]))
    rng = np.random.default_rng(1)
    e = rng.integers(0, 60, (400, 2))
    e = np.unique(np.sort(e[e[:, 0] != e[:, 1]], axis=1), axis=0)
    R = Relation("E", 2)
    R.load(ZSet.from_arrays(e, arity=2))
    v, vt = R.view("prev", (0, 1)), R.view("prev", (1, 0))
    atoms = [Atom(v, ("a", "b")), Atom(v, ("a", "c")), Atom(v, ("b", "c"))]
    rows = generic_join(atoms, ["a", "b", "c"])
    assert generic_join(atoms, ["a", "b", "c"], count_only=True) == len(rows) > 0
    atoms = [Atom(vt, ("c", "a")), Atom(v, ("a", "b")), Atom(vt, ("c", "b"))]   # another shape
    assert generic_join(atoms, ["c", "a", "b"], count_only=True) == len(rows)
    assert chosen and all((m[0] >= 0) == mark for m in chosen)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_delta_rule_in_shares_equals_it_in_one_call(monkeypatch, threads):
    monkeypatch.setattr(config, "DELTA_SHARE_ROWS", 1)
    monkeypatch.setattr(config, "THREADS", threads)
    rng = np.random.default_rng(2)
    E = Relation("E", 2)
    E.load(ZSet.from_arrays(rng.integers(0, 40, (300, 2)), arity=2).distinct())
    join = IncrementalGenericJoin([(E, ("a", "b")), (E, ("b", "c")), (E, ("c", "a"))], ["a", "b", "c"])
    E.stage(ZSet.from_arrays(rng.integers(0, 40, (80, 2)), rng.integers(-2, 3, 80), arity=2))
    got = join.delta()
    want = sum((join._run(kinds, tuple(join.orders[i]), False)
                for i, kinds in enumerate([("delta", "prev", "prev"), ("curr", "delta", "prev"),
                                           ("curr", "curr", "delta")])), ZSet.empty(3))
    assert got == want
    E.rollback()
