"""Recursion: reachability and transitive closure as child circuits run to a fixed point.

The rule ``reach(r, z) :- seed(r, z); reach(r, z) :- reach(r, y), edge(y, z)`` becomes a
child circuit whose feedback carries the newly derived pairs of each iteration (semi-naive
in effect). Its inputs are imported with δ0 (a parent tick's edge delta enters at iteration
0), and both the join and ``distinct`` are the nested incremental forms (``join_lattice``,
``distinct_trace``), which keep per-(epoch, iteration) traces. So a parent tick that inserts
or deletes edges only recomputes what changed: a deletion retracts exactly the pairs that
lost every derivation. The child exports the sum of its outputs over the epoch's
iterations, the change of the fixed point::

    parent:  edges ─┐        roots ─┐
    child:   δ0(edges)──index y──┐   δ0(roots)──map (r, r)──▶(+)──▶ distinct_trace ──┬──▶ export Σ_i
                                 ▼                               ▲                   │
                   z^-1(reach)──index y──▶ join_lattice ─map (r,z)┘                  │
                        ▲─────────────────────────────────────────────────────────────┘

Relies on ``wcoj.circuit`` and ``wcoj.operators``. Used by ``queries.demo`` and benchmarks.

>>> c = reachability_circuit()
>>> out = c.step({"edges": ZSet.from_rows([(1, 2), (2, 3), (5, 6)]), "roots": ZSet.from_rows([(1,)])})
>>> sorted(out["reach"].to_dict())
[(1, 1), (1, 2), (1, 3)]
>>> c.step({"edges": ZSet.from_dict({(2, 3): -1, (3, 5): 1})})["reach"].to_dict()
{(1, 3): -1}
"""

from __future__ import annotations

from wcoj.circuit import Circuit, Stream
from wcoj.operators import distinct_nested, incremental_join
from wcoj.rows import Columns
from wcoj.zset import ZSet  # noqa: F401  (the doctests use it)

__all__ = ["reachability_circuit", "transitive_closure_circuit", "closure"]


def closure(child: Circuit, seed: Stream, edges: Stream) -> Stream:
    """Wire, inside ``child``, the least fixed point of
    ``R = distinct(seed + π_{r,z}(R(r, y) ⋈ edges(y, z)))`` over delta streams; return R's deltas."""
    fb = child.delay(2)
    step = incremental_join(fb.index_with([1]), edges.index_with([0]), fn=Columns([1, 4]), arity=2)
    reach = distinct_nested(seed.plus(step))
    fb.connect(reach)
    return reach


def reachability_circuit(*, max_iterations: int = 10_000) -> Circuit:
    """A circuit with sources ``edges`` (src, dst) and ``roots`` (node,) and sink ``reach``:
    the change per tick of the pairs ``(root, node)`` with node reachable from root (every
    root reaches itself)."""
    c = Circuit()
    edges = c.source(arity=2, name="edges")
    roots = c.source(arity=1, name="roots")
    child = c.child(max_iterations=max_iterations)
    e = child.import_(edges)
    seed = child.import_(roots).map(Columns([0, 0]), arity=2)
    c.sink(child.export(closure(child, seed, e)), "reach")
    return c


def transitive_closure_circuit(*, max_iterations: int = 10_000) -> Circuit:
    """A circuit with source ``edges`` and sink ``closure``: the change per tick of the
    pairs ``(x, z)`` joined by a non-empty path.

    >>> c = transitive_closure_circuit()
    >>> sorted(c.step({"edges": ZSet.from_rows([(1, 2), (2, 3)])})["closure"].to_dict())
    [(1, 2), (1, 3), (2, 3)]
    """
    c = Circuit()
    edges = c.source(arity=2, name="edges")
    child = c.child(max_iterations=max_iterations)
    e = child.import_(edges)
    c.sink(child.export(closure(child, e, e)), "closure")
    return c
