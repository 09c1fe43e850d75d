"""Hypothesis strategies for circuits: snapshots of small sets, and their deltas.

Following STYLE.md §8 we generate *snapshots* (the whole set at each tick) and feed the
circuit their differences, so the integrated input stays a set while deletions happen.
Small domains force collisions and cancellations.
"""

from __future__ import annotations

import reference as ref  # noqa: F401  (puts the project root on sys.path first)
from hypothesis import strategies as st

from wcoj.zset import ZSet

__all__ = ["values", "row_sets", "snapshots", "weighted", "weighted_snapshots", "graphs",
           "graph_snapshots", "zdelta", "to_z"]

values = st.integers(0, 4)


def row_sets(arity: int, max_size: int = 8, vals=values):
    return st.frozensets(st.tuples(*[vals] * arity), max_size=max_size)


def snapshots(arity: int, max_ticks: int = 5, max_size: int = 8):
    """Lists of sets of rows, one per tick."""
    return st.lists(row_sets(arity, max_size), min_size=1, max_size=max_ticks)


def weighted(arity: int, max_size: int = 6):
    """A multiset snapshot: ``{row: positive weight}``."""
    return st.dictionaries(st.tuples(*[values] * arity), st.integers(1, 3), max_size=max_size)


def weighted_snapshots(arity: int, max_ticks: int = 5):
    return st.lists(weighted(arity), min_size=1, max_size=max_ticks)


nodes = st.integers(0, 6)
graphs = st.frozensets(st.tuples(nodes, nodes), max_size=12)
graph_snapshots = st.lists(graphs, min_size=1, max_size=6)


def to_z(d: dict, arity: int) -> ZSet:
    """A ZSet from a reference dict."""
    return ZSet.from_dict(d, arity=arity)


def zdelta(before: dict | frozenset, after: dict | frozenset, arity: int) -> ZSet:
    """The ZSet that turns snapshot ``before`` into ``after`` (sets or weighted dicts)."""
    b = before if isinstance(before, dict) else {r: 1 for r in before}
    a = after if isinstance(after, dict) else {r: 1 for r in after}
    return to_z(ref.sub(a, b), arity)
