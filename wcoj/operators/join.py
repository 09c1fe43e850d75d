"""Joins: join_stream, join_trace, the nested join_lattice, and the incremental join.

The join of indexed Z-sets is bilinear (``(a1 + a2) ⋈ b = a1 ⋈ b + a2 ⋈ b``), so the
change of ``I(a) ⋈ I(b)`` at a root tick is (DBSP §3, Dialog notes §2.9.13)::

    Δ(a ⋈ b) = Δa ⋈ Δb  +  Δa ⋈ z^-1(I b)  +  z^-1(I a) ⋈ Δb
             = join_stream(a, b) + join_trace(a, z1_trace(b)) + join_trace(b, z1_trace(a))

with the last term's value columns put back in (a, b) order. Over nested times the change
at ``t`` is ``Σ_{t1 ⊔ t2 = t} a[t1] ⋈ b[t2]``; splitting each coordinate j into
"``a`` is at ``t_j`` and ``b`` at most ``t_j``" or "``a`` before ``t_j`` and ``b`` at ``t_j``"
gives 2^d terms, each a join of two time boxes of the traces (``join_lattice``, one kernel
call: ``wcoj.kernels.lattice``). In each term one side lies in the current epoch (small);
the other side is looked up by its keys.

Relies on ``wcoj.indexed`` (the bilinear ``join``), ``wcoj.trace`` and ``wcoj.circuit``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wcoj.circuit import Circuit, Context, Operator, Schema, Stream
from wcoj.errors import CircuitError, WeightOverflowError
from wcoj.indexed import IndexedZSet, _join_maps
from wcoj import config
from wcoj.kernels.lattice import DENSE, OK, PRODUCT_OVERFLOW, RETRY, lattice_join
from wcoj.kernels.memory import read_only
from wcoj.operators.linear import infer_arity
from wcoj.protocol import never_busy
from wcoj.operators.traces import _soonest, integrate_trace, next_busy_iteration, zero_past_iteration_zero
from wcoj.rows import NO_PACKING, Columns, Packing, packing_within, table_fits
from wcoj.time import Time, as_row
from wcoj.trace import Trace
from wcoj.zset import ZSet, raise_overflow

__all__ = ["JoinStream", "JoinTrace", "JoinLattice", "join_stream", "join_trace", "join_lattice",
           "incremental_join", "fold_map"]


def join_stream(a: IndexedZSet, b: IndexedZSet, fn: Callable | None = None) -> ZSet:
    """``join_stream(a, b)[(k, u, v)] = a[k, u] * b[k, v]`` (rows: key, a's value, b's value).

    >>> a = IndexedZSet.from_pairs([[0], [1], [2]], [[1], [2], [2]])
    >>> join_stream(a, IndexedZSet.from_pairs([[0], [1]], [[1], [3]])).to_dict()
    {(0, 1, 1): 1, (1, 2, 3): 1}
    """
    return a.join(b, fn)


def join_trace(batch: IndexedZSet, trace: Trace, fn: Callable | None = None, flip: bool = False) -> ZSet:
    """``batch ⋈ (everything in trace)``, looking up only the batch's keys.

    With ``flip=True`` the output rows are (key, trace value, batch value), so that
    ``join_trace(b, z1_trace(a), flip=True)`` lines up with ``a ⋈ b``.

    >>> tr = Trace.from_batches([(0, IndexedZSet.from_pairs([[1], [1]], [[3], [4]], [1, -1]))])
    >>> join_trace(IndexedZSet.from_pairs([[1]], [[2]], [2]), tr).to_dict()
    {(1, 2, 3): 2, (1, 2, 4): -2}
    """
    if batch.is_empty():
        out = ZSet.empty(batch.zset.arity + trace.arity - trace.n_key)
        return out if fn is None else out.map(fn)
    other = IndexedZSet(trace.select(keys=batch.group_keys()), trace.n_key)
    return other.join(batch, fn) if flip else batch.join(other, fn)


def join_lattice(a: IndexedZSet, b: IndexedZSet, a_prior: Trace, b_prior: Trace, time: Time,
                 fn: Callable | None = None, arity: int | None = None) -> ZSet:
    """``Σ_{t1 ⊔ t2 = time} a[t1] ⋈ b[t2]`` with ``a``, ``b`` the deltas at ``time`` and the
    priors the deltas before it (module docstring). Rows (key, a value, b value), or
    ``fn`` of them (applied before the one consolidation: ``map`` is linear; a
    ``Columns`` projection as the rows are written).

    >>> ta = Trace(2, 1, n_dims=2).insert(IndexedZSet.from_pairs([[1]], [[5]]), (0, 1))
    >>> tb = Trace(2, 1, n_dims=2)
    >>> e = IndexedZSet.empty(1, 1)
    >>> join_lattice(e, IndexedZSet.from_pairs([[1]], [[7]]), ta, tb, (1, 1)).to_dict()
    {(1, 5, 7): 1}
    """
    t = as_row(time)
    nk = a_prior.n_key
    cols = fn if isinstance(fn, Columns) else None  # written by the join itself
    width = a_prior.arity + b_prior.arity - nk
    if (a.is_empty() and a_prior.is_empty()) or (b.is_empty() and b_prior.is_empty()):
        return ZSet.empty(width if fn is None or arity is None else arity)  # a side with no rows at all
    a_map, b_map = _join_maps(a_prior.arity, nk, width, None if cols is None else cols.cols)
    ta, tb = a_prior.run_table(a, t), b_prior.run_table(b, t)
    p = _dense_packing(a, b, a_prior, b_prior, a_map, b_map) if fn is None or cols is not None else None
    # run tables and the time writable, as the compiled epoch passes its own (one version
    # of the kernel for both routes; ``wcoj.kernels.epoch``)
    args = (ta.table, tb.table, nk, a_prior.arity, b_prior.arity, np.array(t, dtype=np.int64),
            read_only(a_map), read_only(b_map))
    if p is None:
        k, w, m, status, x, y = lattice_join(*args, *NO_PACKING, 0)
    else:
        k, w, m, status, x, y = lattice_join(*args, *p.kernel_args(),
                                             max(config.RADIX_MIN_ROWS, (1 << p.n_bits) // config.DENSE_SUM_SLOTS))
        if status == RETRY:  # a weight that leaves int64: the row route names it
            k, w, m, status, x, y = lattice_join(*args, *NO_PACKING, 0)
    if status == DENSE:
        return ZSet.from_arrays(p.unpack(k[:m, 0]), w[:m], arity=width if fn is None else arity)
    if status == PRODUCT_OVERFLOW:
        raise_overflow("*", x, y, tuple(k[m].tolist()))
    if status != OK:
        raise WeightOverflowError("join: a row's weight summed over its times does not fit in int64")
    out_arity = width if fn is None or arity is None else arity
    if not m:
        return ZSet.empty(out_arity)
    k, w = k[:m], w[:m]
    if fn is not None and cols is None:
        k = np.asarray(fn(k)).reshape(k.shape[0], -1)
    return ZSet.from_arrays(k, w, arity=out_arity)


def _dense_packing(a: IndexedZSet, b: IndexedZSet, a_prior: Trace, b_prior: Trace, a_map, b_map) -> Packing | None:
    """A packing of the join's output rows, from the bounds of the columns they are
    copied from, when the batches are large enough that the join may write many rows
    (``lattice_join`` then sums them in a table once they pass the table's size over
    ``config.DENSE_SUM_SLOTS``) and the table has at most ``config.DENSE_SUM_MAX_BITS``
    bits."""
    if len(a) + len(b) < config.RADIX_MIN_ROWS:
        return None
    width = a_map.shape[1] + b_map.shape[1]
    lows, highs = np.empty(width, dtype=np.int64), np.empty(width, dtype=np.int64)
    for tr, batch, cmap in ((a_prior, a, a_map), (b_prior, b, b_map)):
        bounds = tr.column_bounds(batch)
        if bounds is None:
            return None
        lows[cmap[0]], highs[cmap[0]] = bounds[0][cmap[1]], bounds[1][cmap[1]]
    p = packing_within(lows, highs)
    return p if table_fits(p) else None


class _Join(Operator):
    def __init__(self, fn: Callable | None = None, arity: int | None = None):
        self.fn, self.arity = fn, arity

    def _out(self, left: Schema, right: Schema) -> Schema:
        if left.n_key != right.n_key:
            raise CircuitError(f"{self.name}: key widths differ ({left} vs {right})")
        width = left.arity + right.arity - left.n_key
        if self.fn is not None and self.arity is None:
            self.arity = infer_arity(self.fn, width)
        return Schema("zset", width if self.fn is None else self.arity)

    def _map(self, z: ZSet) -> ZSet:
        return z if self.fn is None else z.map(self.fn, arity=self.arity)


class JoinStream(_Join):
    """Node form of ``join_stream(a, b)`` (the join of this tick's two values)."""

    name = "join_stream"
    input_kinds = ("indexed", "indexed")
    next_busy = never_busy

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return self._out(*inputs)

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].join(values[1], self.fn), state


class JoinTrace(_Join):
    """Node form of ``join_trace(batch, trace)`` (``flip`` puts the trace's value first)."""

    name = "join_trace"
    input_kinds = ("indexed", "trace")
    next_busy = never_busy

    def __init__(self, fn: Callable | None = None, arity: int | None = None, flip: bool = False):
        super().__init__(fn, arity)
        self.flip = flip

    def output_schema(self, inputs: list[Schema]) -> Schema:
        batch, tr = inputs
        return self._out(tr, batch) if self.flip else self._out(batch, tr)

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return join_trace(values[0], values[1], self.fn, self.flip), state


class JoinLattice(_Join):
    """Node form of ``join_lattice(a, b, a_prior, b_prior)`` at the current (nested) time."""

    name = "join_lattice"
    input_kinds = ("indexed", "indexed", "trace", "trace")

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return self._out(inputs[0], inputs[1])

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        a, b, ta, tb = values
        return join_lattice(a, b, ta, tb, ctx.time, self.fn, self.arity), state

    def next_busy(self, values: list[Any], state: Any, ctx: Context) -> int | None:
        # With empty deltas from now on, only the terms "this epoch's a ⋈ an earlier
        # epoch's b at iteration i'" and the mirror image can fire.
        a, b, ta, tb = values
        return _soonest(next_busy_iteration(a, ta, tb, ctx.time), next_busy_iteration(b, tb, ta, ctx.time))


def incremental_join(a: Stream, b: Stream, fn: Callable | None = None, arity: int | None = None) -> Stream:
    """Wire ``Δ(I a ⋈ I b)`` for two indexed delta streams (in a child: over nested times).

    At the root: ``join_stream(a, b) + join_trace(a, z1_trace(b)) + join_trace(b,
    z1_trace(a))``; in a child: ``join_lattice`` over both traces.
    """
    c: Circuit = a.circuit
    # a side's trace is read when the other side changes: past iteration 0, not at all
    # when the other side is zero there (a recursion's base relation, imported delta0)
    _, pa = integrate_trace(a, first_epoch_unread=zero_past_iteration_zero(b))
    _, pb = integrate_trace(b, first_epoch_unread=zero_past_iteration_zero(a))
    if c.n_dims > 1:
        return c.add(JoinLattice(fn, arity), a, b, pa, pb)
    from wcoj.operators.linear import Plus

    s1 = c.add(JoinStream(fn, arity), a, b)
    s2 = c.add(JoinTrace(fn, arity), a, pb)
    s3 = c.add(JoinTrace(fn, arity, flip=True), b, pa)
    return c.add(Plus(), c.add(Plus(), s1, s2), s3)


def _unread(stream: Stream) -> bool:
    """True when no node, sink or child import reads ``stream`` yet."""
    c, j = stream.circuit, stream.node_id
    if j in c._sinks.values() or any(j in n.inputs for n in c.nodes):
        return False
    return not any(n.kind == "import" and n.name == str(j)
                   for ch in c.nodes if ch.kind == "child" for n in ch.child.nodes)


def fold_map(stream: Stream, fn: Callable, arity: int) -> Stream:
    """``stream.map(fn, arity)``, folded into the join that makes ``stream`` when it is a
    nested join (``join_lattice``) that nothing reads yet: the join then applies ``fn``
    before its one consolidation (``map`` is linear), which saves sorting the join's rows
    twice (e.g. a rule body's join projected onto the rule's head).

    The fold turns ``stream`` itself into the mapped stream, so the caller must not use
    ``stream`` for anything else afterwards.
    """
    c: Circuit = stream.circuit
    node = c.nodes[stream.node_id]
    if node.kind != "operator" or not isinstance(node.op, JoinLattice) or not _unread(stream):
        return stream.map(fn, arity=arity)
    old = node.op.fn
    if isinstance(old, Columns) and isinstance(fn, Columns):
        both = old.then(fn)
    else:
        both = fn if old is None else (lambda k, old=old: fn(old(k)))
    node.op = JoinLattice(both, arity)
    node.schema = Schema("zset", arity)
    c._invalidate()
    return stream
