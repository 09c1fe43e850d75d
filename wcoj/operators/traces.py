"""Trace operators: trace_append, untimed_trace_append, z1_trace, the ``integrate_trace``
loop, and ``lattice_delta``, the nested-time rule behind distinct_trace and aggregate.

A trace stream carries the whole timed history of a delta stream. The usual loop (Dialog
spec §2.9.9, §2.9.16)::

    a ──▶ trace_append ──┬──▶ trace (every delta up to now)
              ▲          │
              └─ z1_trace┘──▶ prior (every delta before now)

``lattice_delta(f, batch, prior, t)`` is the change at time ``t`` of ``f`` applied to the
integral of a delta stream over lattice times: with ``V(s) = Σ_{u <= s} x[u]`` and ``e_S``
the unit vectors of a set S of coordinates, ``out[t] = Σ_S (-1)^|S| f(V(t - e_S))`` (the
inverse of the nested integration, DBSP §6). At the root this is ``f(V(t)) - f(V(t-1))``;
in a child it is the four-term rule with w1, w2, w3 of ``distinct_trace``. Only keys that
can change are evaluated (``candidate_keys``): the batch's keys, and keys of the current
epoch that earlier epochs touched at the same iteration, found by key and time-bound lookups.
For ``distinct`` over whole rows (the recursion's) the candidates and their corner sums are
one kernel call over the trace's runs (``wcoj.kernels.lattice.lattice_distinct``).

Relies on ``wcoj.circuit``, ``wcoj.trace`` and ``wcoj.time``. Used by ``distinct``,
``aggregate`` and the recursion.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from itertools import combinations
from typing import Any

import numpy as np

from wcoj.circuit import Circuit, Context, Operator, Schema, Stream
from wcoj.protocol import never_busy
from wcoj.errors import CircuitError, WeightOverflowError
from wcoj.indexed import IndexedZSet
from wcoj.kernels.memory import read_only
from wcoj.kernels.lattice import integral_step, lattice_distinct, lattice_next
from wcoj.rows import Packing, column_bounds, packing_within, table_fits, union_bounds
from wcoj.time import Box, Time, as_row
from wcoj.trace import Trace, align_weights
from wcoj.zset import ZSet

__all__ = ["TraceAppend", "UntimedTraceAppend", "Z1Trace", "integrate_trace", "lattice_delta",
           "candidate_keys", "next_busy_iteration", "scheduled_distinct", "Integral",
           "first_epoch_integral", "first_epoch_distinct", "zero_past_iteration_zero"]


def _rows(x: ZSet | IndexedZSet) -> ZSet:
    return x.zset if isinstance(x, IndexedZSet) else x


def candidate_keys(batch: ZSet | IndexedZSet, prior: Trace, time: Time) -> np.ndarray:
    """Key rows (sorted, unique) whose ``lattice_delta`` may be non-zero at ``time``.

    A key's corner sum cancels unless, for every coordinate j, the key has an entry at a
    time ``<= t`` whose j-th coordinate equals ``t_j``. The batch's keys have one for all
    j at once; other keys need an entry in the current epoch (j = 0, the recent runs) and,
    for each j >= 1, one found by a key lookup. Run time bounds skip the lookups early, so
    in the first epoch (no earlier epochs) only the batch's keys are candidates.
    """
    z, nk = _rows(batch), prior.n_key
    t = as_row(time)
    mine = ZSet.from_arrays(z.keys[:, :nk], arity=nk).keys
    if len(t) == 1:
        return mine
    boxes = _epoch_boxes(t)
    if not all(prior.may_have(b) for b in boxes):
        return mine
    cand = prior.keys_in(boxes[0])
    for b in boxes[1:]:
        if not len(cand):
            break
        cand = prior.keys_in(b, keys=cand)
    return _union_keys(mine, cand)


def _union_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The union of two sorted unique key matrices, by one linear merge."""
    if not len(b):
        return a
    if not len(a):
        return b
    ones = lambda k: ZSet(k, np.ones(len(k), dtype=np.int64))  # noqa: E731
    return ones(a).plus(ones(b)).keys


def next_busy_iteration(batch: ZSet | IndexedZSet | None, prior: Trace, other: Trace,
                        time: Time) -> int | None:
    """When nested rules may fire again without new input (``Operator.next_busy``): the
    least later iteration at which ``other`` holds an earlier epoch's entry for a key that
    ``prior`` (with ``batch`` at ``time``) holds in the current epoch, in one kernel call
    (``wcoj.kernels.lattice.lattice_next``); ``None`` for never. Only for (epoch,
    iteration) times; deeper times answer the next iteration."""
    t = as_row(time)
    if len(t) != 2:
        return t[-1] + 1
    # Cheap exits on run bounds first (most operators of a big child are idle): no run of
    # ``other`` holds an earlier epoch's later iteration, or the epoch has no keys yet.
    if not any(r.tlo[0] < t[0] and r.thi[1] > t[1] for r in other._all_runs()):
        return None
    if (batch is None or _rows(batch).is_empty()) and not any(r.thi[0] >= t[0] for r in prior._all_runs()):
        return None
    src = prior.run_table(batch, t)
    dst = other.run_table()
    # (run tables and time writable, as the compiled epoch passes them: ``_lattice_distinct``)
    it = lattice_next(src.table, prior.n_key, prior.arity, np.array(t, dtype=np.int64), dst.table, other.arity)
    return None if it < 0 else int(it)


def _soonest(*its: int | None) -> int | None:
    found = [i for i in its if i is not None]
    return min(found) if found else None


def _corners(t: tuple[int, ...]) -> list[tuple[int, np.ndarray]]:
    """``(|S|, t - e_S)`` for every set S of coordinates whose corner is a valid time."""
    out = []
    for n in range(len(t) + 1):
        for S in combinations(range(len(t)), n):
            s = np.array([x - (j in S) for j, x in enumerate(t)], dtype=np.int64)
            if s.min() >= 0:
                out.append((n, s))
    return out


def _entries_with(prior: Trace, batch: ZSet, t: tuple[int, ...], keys: np.ndarray):
    """``(rows, times, weights)`` of ``prior + batch at t`` up to ``t`` for ``keys``, without
    inserting the batch into the trace."""
    rows, times, w = prior.entries(Box.upto(t), keys=keys)
    if batch.is_empty():
        return rows, times, w
    bt = np.broadcast_to(np.array(t, dtype=np.int64), (len(batch), len(t)))
    return (np.concatenate([rows, batch.keys]), np.concatenate([times, bt]),
            np.concatenate([w, batch.weights]))


def scheduled_distinct(batch: ZSet, prior: Trace, t: tuple[int, ...], plan: dict | None) -> tuple[ZSet, dict | None]:
    """``distinct_trace`` at an (epoch, iteration) time ``t`` with a *plan* of the epoch:
    ``{iteration: (rows, ...)}``, the rows of this epoch's earlier batches that an earlier
    epoch holds at that iteration, which besides the batch are the only rows that can
    change there (``lattice_distinct``'s docstring). Returns the change and the plan with
    the batch's rows added (a new dict: states are never changed in place). (At a depth-1
    child's first epoch ``DistinctTrace`` takes ``first_epoch_distinct`` instead.)
    """
    rows = (plan or {}).get(t[1], ())
    extra = np.concatenate(rows) if len(rows) > 1 else rows[0] if rows else _no_rows(prior.arity)
    out, plan_rows, plan_its = _lattice_distinct(batch, prior, t, extra, True)
    if not len(plan_its):
        return out, plan
    plan = dict(plan or {})
    for it in np.unique(plan_its).tolist():
        plan[it] = plan.get(it, ()) + (np.ascontiguousarray(plan_rows[plan_its == it]),)
    return out, plan


@functools.lru_cache(maxsize=None)
def _no_rows(arity: int) -> np.ndarray:
    """An empty ``int64[0, arity]`` (shared: no kernel writes into it)."""
    return np.zeros((0, arity), dtype=np.int64)  # (writable, as ``_lattice_distinct`` passes rows)


def _lattice_distinct(batch: ZSet, prior: Trace, t: tuple[int, ...], extra: Any, scheduled: bool):
    """``distinct``'s change at ``t`` over whole rows, in one kernel call over the trace's
    runs and the batch (``wcoj.kernels.lattice.lattice_distinct``; ``extra`` and
    ``scheduled`` as there): ``(change, plan rows, plan iterations)``."""
    arity = prior.arity
    table = prior.run_table(batch, t)
    # the run table, time and rows writable, as the compiled epoch passes its own: one
    # version of the kernel for both routes (``wcoj.kernels.epoch``)
    k, w, m, bad, plan_rows, plan_its, s = lattice_distinct(
        table.table, len(prior._all_runs()), arity, np.array(t, dtype=np.int64), np.ascontiguousarray(extra),
        scheduled)
    if bad >= 0:
        raise WeightOverflowError(f"distinct: the accumulated weight of row "
                                  f"{tuple(k[m].tolist())} does not fit in int64")
    out = ZSet(k[:m], w[:m]) if m else ZSet.empty(arity)
    return out, plan_rows[:s], plan_its[:s]


def first_epoch_integral(ctx: Context) -> bool:
    """Whether ``distinct`` at this evaluation keeps its own integral instead of reading
    its trace: at a depth-1 child's first epoch (times (0, i)), where nothing earlier is
    planned. There the trace of its input is read only by later epochs."""
    return ctx.n_dims == 2 and as_row(ctx.time)[0] == 0


class Integral:
    """``distinct``'s state over a child's first epoch: every row's weight summed over the
    iterations so far. A batch's change is ``H(V + w) - H(V)`` per row, at the cost of
    the batch, where ``lattice_distinct`` seeks each row in every run of the trace.

    Held in a table of one slot per packed row once ``rows.table_fits`` allows one
    (``integral_step``), else as a few consolidated runs of rows (``_Run``), each at most
    half the size of the one before, so a batch is sought in O(log n) runs and a row is
    merged O(log n) times over the epoch (merging every batch into one Z-set made an epoch
    of many iterations quadratic). A row's weight summed over the runs that leaves int64
    raises, even when later batches would have brought it back. Changed in place by the
    epoch's iterations (nothing else holds it) and dropped at the epoch's end.

    >>> acc = Integral(1)
    >>> acc.step(ZSet.from_dict({(3,): 2})).to_dict(), acc.step(ZSet.from_dict({(3,): -2, (4,): 1})).to_dict()
    ({(3,): 1}, {(3,): -1, (4,): 1})
    """

    __slots__ = ("runs", "arity", "packing", "args", "sums", "held")

    def __init__(self, arity: int):
        self.runs: list[_Run] | None = []
        self.arity = arity
        self.packing: Packing | None = None
        self.args: tuple = ()
        self.sums: np.ndarray | None = None
        self.held = 0  # rows added so far (at least the rows with a non-zero sum)

    def step(self, batch: ZSet) -> ZSet:
        """The batch's change; its rows are added to the integral."""
        if batch.is_empty():
            return batch
        self.held += len(batch)
        if self.sums is None:
            self._to_table(batch)
        if self.sums is not None:
            out = self._table_step(batch)
            if out is not None:
                return out
            self._to_rows()  # a row outside the packing: a wider one, or rows
            self._to_table(batch)
            if self.sums is not None:
                return self._table_step(batch)
        return self._rows_step(batch)

    def _whole(self) -> ZSet:
        """The integral as one Z-set (its runs merged into one)."""
        z = ZSet.empty(self.arity)
        for r in self.runs:
            z = z.plus(r.z)
        self.runs = [_Run(z)] if len(z) else []
        return z

    def _to_table(self, batch: ZSet) -> None:
        p = packing_within(*union_bounds([column_bounds(batch.keys)] + [r.bounds for r in self.runs]))
        if not table_fits(p, self.held):
            return
        z = self._whole()
        self.packing, self.args = p, p.kernel_args()
        self.sums = np.zeros(p.slots, dtype=np.int64)
        if len(z):
            self.sums[p.pack(z.keys)] = z.weights  # consolidated: one row per slot
        self.runs = None

    def _to_rows(self) -> None:
        at = np.flatnonzero(self.sums)  # ascending, as the rows it packs
        self.runs = [_Run(ZSet(self.packing.unpack(at), self.sums[at]))] if len(at) else []
        self.sums = self.packing = None

    def _table_step(self, batch: ZSet) -> ZSet | None:
        n = len(batch)
        out_k, out_w = np.empty((n, batch.arity), dtype=np.int64), np.empty(n, dtype=np.int64)
        m, bad = integral_step(read_only(batch.keys), read_only(batch.weights), *self.args, self.sums, out_k, out_w)
        if bad == -2:
            return None
        if bad >= 0:
            _too_heavy(batch.keys[bad])
        return ZSet(out_k[:m], out_w[:m]) if m else ZSet.empty(batch.arity)

    def _rows_step(self, batch: ZSet) -> ZSet:
        old = np.zeros(len(batch), dtype=np.int64)
        for r in self.runs:
            old = _checked_sum(old, r.weights(batch.keys), batch.keys)
        d = (_checked_sum(old, batch.weights, batch.keys) > 0).astype(np.int64) - (old > 0)
        self.runs.append(_Run(batch))
        while len(self.runs) > 1 and 2 * len(self.runs[-1].z) >= len(self.runs[-2].z):
            last = self.runs.pop()
            merged = self.runs.pop().z.plus(last.z)  # raises on a sum beyond int64
            if len(merged):
                self.runs.append(_Run(merged))
        keep = d != 0
        return ZSet(batch.keys[keep], d[keep])


class _Run:
    """A consolidated run of an ``Integral``, its rows packed for lookups when they fit."""

    __slots__ = ("z", "bounds", "packing", "ids")

    def __init__(self, z: ZSet):  # (not empty)
        self.z, self.bounds = z, column_bounds(z.keys)
        self.packing = packing_within(*self.bounds)
        self.ids = self.packing.pack(z.keys) if self.packing is not None else None  # ascending

    def weights(self, keys: np.ndarray) -> np.ndarray:
        """Per row of ``keys`` (sorted unique rows), its weight in this run; 0 where absent."""
        if self.ids is None:
            return align_weights(keys, self.z)
        p = self.packing
        out = np.zeros(keys.shape[0], dtype=np.int64)
        at = np.flatnonzero(((keys >= p.lows) & (keys <= p.highs)).all(axis=1))
        if len(at):
            ids = p.pack(np.ascontiguousarray(keys[at]))
            pos = np.minimum(np.searchsorted(self.ids, ids), self.ids.shape[0] - 1)
            hit = self.ids[pos] == ids
            out[at[hit]] = self.z.weights[pos[hit]]
        return out


def _checked_sum(a: np.ndarray, b: np.ndarray, keys: np.ndarray) -> np.ndarray:
    s = a + b
    bad = np.flatnonzero(((a ^ s) & (b ^ s)) < 0)  # wrapped: both signs differ from the sum's
    if len(bad):
        _too_heavy(keys[bad[0]])
    return s


def _too_heavy(row: np.ndarray) -> None:
    raise WeightOverflowError(f"distinct: the accumulated weight of row {tuple(row.tolist())} does not fit in int64")


def first_epoch_distinct(batch: ZSet, acc: Integral | None, arity: int) -> tuple[ZSet, Integral | None]:
    """``distinct``'s change at (0, i) from its running integral (``Integral``; none
    before the first batch): the state ``DistinctTrace`` keeps where
    ``first_epoch_integral`` holds. The trace is not read."""
    if batch.is_empty():
        return ZSet.empty(arity), acc
    acc = acc if acc is not None else Integral(arity)
    return acc.step(batch), acc


def _epoch_boxes(t: tuple[int, ...]) -> list[Box]:
    """For each coordinate j, the box of the times ``<= t`` whose j-th coordinate is ``t_j``."""
    return [Box([x if k == j else None for k, x in enumerate(t)], t) for j in range(len(t))]


def lattice_delta(f: Callable[[ZSet], ZSet], batch: ZSet | IndexedZSet, prior: Trace, time: Time,
                  out_arity: int) -> ZSet:
    """``Σ_S (-1)^|S| f(V(t - e_S))`` over the keys that can change (module docstring).

    ``prior`` holds the deltas at every time processed before ``time`` (not ``batch``);
    ``f`` maps a Z-set of rows of some keys to its per-key result (``ZSet.distinct``, an
    aggregate); it must treat each key independently.

    >>> prior = Trace(1).insert(ZSet.from_rows([(1,)]), 0)
    >>> lattice_delta(ZSet.distinct, ZSet.from_dict({(1,): -1, (2,): 3}), prior, 1, 1).to_dict()
    {(1,): -1, (2,): 1}
    """
    t = as_row(time)
    if f is ZSet.distinct and prior.n_key == prior.arity == out_arity:
        return _lattice_distinct(_rows(batch), prior, t, _no_rows(prior.arity), False)[0]
    cand = candidate_keys(batch, prior, t)
    if not len(cand):
        return ZSet.empty(out_arity)
    # One key-restricted scan of the trace; the 2^d corners are masks over its times.
    rows, times, w = _entries_with(prior, _rows(batch), t, cand)
    keys, weights = [], []
    for n, s in _corners(t):
        m = np.all(times <= s, axis=1)
        part = f(ZSet.from_arrays(rows[m], w[m], arity=prior.arity))
        keys.append(part.keys)
        weights.append(part.weights if n % 2 == 0 else -part.weights)
    return ZSet.from_arrays(np.concatenate(keys), np.concatenate(weights), arity=out_arity)


class TraceAppend(Operator):
    """``trace_append(a, tr) = tr + {a at the current time}``: the trace grows by this tick's batch.

    >>> tr = TraceAppend().eval([ZSet.from_rows([(1,)]), Trace(1)], None, Context(3, 1, ()))[0]
    >>> tr.batches()
    [(3, ZSet(arity=1, {(1,): 1}))]
    """

    name = "trace_append"
    input_kinds = ("zset", "trace")
    next_busy = never_busy

    def __init__(self, first_epoch_unread: bool = False):
        # a trace that a depth-1 child's first epoch never reads (only later epochs do):
        # a tick that keeps nothing skips it there (``integrate_trace``)
        self.first_epoch_unread = first_epoch_unread

    def check_inputs(self, inputs: list[Schema]) -> None:
        kinds = tuple(s.kind for s in inputs)
        if kinds not in (("zset", "trace"), ("indexed", "trace")):
            raise CircuitError(f"{self.name} expects 2 inputs (zset or indexed, trace), got "
                               f"{len(inputs)}: {', '.join(map(str, inputs)) or 'none'}")
        a, tr = inputs
        key = a.arity if a.n_key is None else a.n_key
        if (a.arity, key) != (tr.arity, tr.n_key):
            raise CircuitError(f"{self.name}: batch {a} does not fit trace {tr}")

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return inputs[1]

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        if self.first_epoch_unread and not ctx.keep and first_epoch_integral(ctx):
            return values[1], state
        return values[1].insert(values[0], ctx.time), state


class UntimedTraceAppend(TraceAppend):
    """``untimed_trace_append(a, tr)``: add ``a`` at the least time, visible at every time.

    >>> tr = UntimedTraceAppend().eval([ZSet.from_rows([(1,)]), Trace(1, n_dims=2)], None, None)[0]
    >>> tr.upto((0, 0)).to_dict()
    {(1,): 1}
    """

    name = "untimed_trace_append"

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[1].append_untimed(values[0]), state


class Z1Trace(Operator):
    """``z1_trace(tr)[t] = tr[t-1]``: the trace as it was one tick (iteration) ago.

    Unlike ``z1``, inside a child it keeps its trace across epochs (advanced to the
    epoch's frontier), since the nested operators need the earlier epochs' history. To
    close the ``integrate_trace`` loop use ``Circuit.delay_trace`` (a feedback node with
    the same meaning).

    >>> op = Z1Trace()
    >>> st = Trace(1)
    >>> tr = Trace(1).insert(ZSet.from_rows([(4,)]), 0)
    >>> out, st = op.eval([tr], st, None)
    >>> out.is_empty(), op.eval([tr], st, None)[0].consolidate().to_dict()
    (True, {(4,): 1})
    """

    name = "z1_trace"
    input_kinds = ("trace",)
    next_busy = never_busy

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return inputs[0]

    def init_state(self, inputs: list[Schema], n_dims: int) -> Any:
        return inputs[0].empty(n_dims)

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return state, values[0]

    def advance(self, state: Any, frontier: Time) -> Any:
        return state.advance(frontier)


def zero_past_iteration_zero(stream: Stream) -> bool:
    """True when ``stream`` (in a child) is zero past iteration 0 of every epoch: a
    ``delta0`` import, or a linear operator of such streams."""
    node = stream.circuit.nodes[stream.node_id]
    if node.kind == "import":
        return node.mode == "delta0"
    if node.kind == "operator" and node.op.linear and node.inputs:
        return all(zero_past_iteration_zero(Stream(stream.circuit, i)) for i in node.inputs)
    return False


def integrate_trace(stream: Stream, first_epoch_unread: bool = False) -> tuple[Stream, Stream]:
    """Wire the loop ``trace = trace_append(stream, z1_trace(trace))``; return
    ``(trace, prior)``: the trace including the current delta, and the one before it.

    ``first_epoch_unread``: in a depth-1 child, no node reads the trace at the first
    epoch (times (0, i)) past iteration 0, where it is empty anyway: a ``DistinctTrace``
    (which keeps its own integral there), or a join whose other input is zero past
    iteration 0 (``zero_past_iteration_zero``). A tick that keeps nothing (``q``'s) then
    does not grow it: later epochs would be its only readers."""
    c: Circuit = stream.circuit
    sch = stream.schema
    if sch.kind == "trace":
        raise CircuitError("integrate_trace takes a zset or indexed stream, got a trace")
    for n in c.nodes:  # a stream has one trace, whoever reads it (unread only if unread by all)
        if (type(n.op) is TraceAppend and n.inputs[0] == stream.node_id
                and c.nodes[n.inputs[1]].kind == "feedback" and c.nodes[n.inputs[1]].inputs == [n.local_id]):
            c._check_building()
            n.op.first_epoch_unread = n.op.first_epoch_unread and first_epoch_unread
            return Stream(c, n.local_id), Stream(c, n.inputs[1])
    prior = c.delay_trace(sch.arity, sch.n_key)
    trace = c.add(TraceAppend(first_epoch_unread), stream, prior)
    prior.connect(trace)
    return trace, prior
