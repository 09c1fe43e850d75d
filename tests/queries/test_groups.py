"""``Groups`` (an aggregate view's state) against a brute-force group-by after every change
of random add/retract streams: running values (count, sum, avg, min, max of longs), the
rows read back when an extreme is retracted, other aggregates (median, count-distinct),
values that are not longs, one global group, and undo."""

from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes.interner import Interner
from queries.aggregates import Groups
from queries.functions import aggregate
from queries.parse import parse_query
from wcoj.zset import ZSet

FINDS = {
    "grouped": ('[:find ?g (count ?x) (sum ?x) (avg ?x) (min ?x) (max ?x) (median ?x) (count-distinct ?x) '
                ':with ?e :where [?e :g ?g] [?e :x ?x]]', ["?g", "?x", "?e"]),
    "global": ('[:find (count ?x) (min ?x) (max ?x) :with ?e :where [?e :x ?x]]', ["?x", "?e"]),
}
rows = st.tuples(st.integers(0, 2), st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b"])),
                 st.integers(0, 4))
steps = st.lists(st.frozensets(rows, max_size=8), min_size=1, max_size=6)


def brute(kind, current):
    groups = defaultdict(list)
    for g, x, _ in current:
        groups[g if kind == "grouped" else ()].append(x)
    out = set()
    for g, xs in groups.items():
        if kind == "grouped":
            fns = ["count", "sum", "avg", "min", "max", "median", "count-distinct"]
            vals = [aggregate(fn, None, xs) for fn in fns]
            out.add((g, *vals))
        else:
            out.add(tuple(aggregate(fn, None, xs) for fn in ("count", "min", "max")))
    return out


def encode(it, kind, rows_):
    """Id rows; in the global group, values >= 0 as entity refs (they decode to the same
    ints, and numeric aggregates read both), the others as longs."""
    if kind == "grouped":
        return [(it.encode(g), it.encode(x), it.encode(e)) for g, x, e in rows_]
    return [(it.ref(x) if isinstance(x, int) and x >= 0 else it.encode(x), it.encode(e)) for _, x, e in rows_]


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(sorted(FINDS)), steps, st.data())
def test_groups_equal_a_brute_force_group_by(kind, snapshots, data):
    it = Interner()
    text, cols = FINDS[kind]
    groups = Groups(parse_query(text), cols, interner=it)
    current = frozenset()
    for snap in snapshots:
        # numbers only per group where a median or sum would need them: strings raise there
        if kind == "grouped":
            snap = frozenset(r for r in snap if isinstance(r[1], int))
        else:  # one group: the rows are (x, e)
            snap = frozenset((0, x, e) for _, x, e in snap)
        adds, dels = snap - current, current - snap
        keys = encode(it, kind, sorted(adds, key=repr)) + encode(it, kind, sorted(dels, key=repr))
        if not keys:
            continue
        z = ZSet.from_rows(keys, [1] * len(adds) + [-1] * len(dels))
        before = set(groups.rows())
        removed, added, undo = groups.apply(z)
        if data.draw(st.booleans()):  # a failed transaction: undo, then apply again
            groups.undo(undo)
            assert set(groups.rows()) == before
            removed, added, undo = groups.apply(z)
        current = snap
        want = brute(kind, current)
        assert set(groups.rows()) == want
        assert set(added) == want - before and set(removed) == before - want
        got_rows = {tuple(r) for r in groups.id_rows().keys.tolist()}
        assert got_rows == set(encode(it, kind, current))


def test_retracting_the_maximum_reads_the_group_back():
    it = Interner()
    g = Groups(parse_query('[:find ?g (max ?x) :with ?e :where [?e :g ?g] [?e :x ?x]]'), ["?g", "?x", "?e"],
               interner=it)
    rows = [(it.encode(1), it.encode(x), it.encode(e)) for e, x in enumerate([3, 9, 9, 4])]
    g.apply(ZSet.from_rows(rows))
    assert g.rows() == [(1, 9)]
    g.apply(ZSet.from_rows(rows[1:2], [-1]))  # one of the two 9s
    assert g.rows() == [(1, 9)]
    g.apply(ZSet.from_rows(rows[2:3], [-1]))  # the other
    assert g.rows() == [(1, 4)]
    g.apply(ZSet.from_rows([rows[0], rows[3]], [-1, -1]))
    assert g.rows() == [] and np.asarray(g.id_rows().keys).shape[0] == 0
