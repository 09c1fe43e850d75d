"""Distinct and its incremental forms: distinct, distinct_incremental, distinct_trace.

``distinct(a)[r] = 1 if a[r] > 0 else 0`` is not linear, so its incremental forms need the
history of the input, kept in a trace (``H(w) = [w > 0]`` below):

- ``distinct_incremental(Δ, tr)[r] = H(tr[r] + Δ[r]) - H(tr[r])`` with ``tr[r]`` the sum
  of all of ``r``'s weights in the trace (one time dimension, the root).
- ``distinct_trace(Δ, tr)`` at a nested time ``t = (e, i)``, with ``w`` the batch weight and

  - ``w1 = Σ tr[r] at (e0, i0), e0 < e, i0 < i``
  - ``w2 = Σ tr[r] at (e0, i),  e0 < e``
  - ``w3 = Σ tr[r] at (e, i0),  i0 < i``

  the change of ``distinct`` of the doubly integrated input is
  ``d1 - d0`` with ``d1 = H(w1 + w2 + w3 + w) - H(w1 + w3)`` and
  ``d0 = H(w1 + w2) - H(w1)``: the four corners ``V(e, i) - V(e, i-1) - V(e-1, i) +
  V(e-1, i-1)`` of the integral. (The RhizomeDB notes print d0's first condition as
  "w1 <= ∧ ..." and d1's second with a "w4"; the Elixir listing beside them has the
  right ``w1 <= 0`` and ``w1 + w2 + w3 + w``.) ``lattice_delta`` computes exactly this, for
  any depth, via inclusion–exclusion over the corners.

Relies on ``wcoj.operators.traces`` (``lattice_delta``) and ``wcoj.trace``. Used by the
recursion (``wcoj.recursion``) and query compilation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wcoj.circuit import Context, Operator, Schema, Stream
from wcoj.errors import CircuitError, WeightOverflowError
from wcoj.protocol import never_busy
from wcoj.operators.traces import (first_epoch_distinct, first_epoch_integral, integrate_trace,
                                   lattice_delta, scheduled_distinct)
from wcoj.time import Time, as_row
from wcoj.trace import Trace, align_weights
from wcoj.zset import ZSet

__all__ = ["Distinct", "DistinctIncremental", "DistinctTrace", "distinct_incremental",
           "distinct_trace", "distinct_nested"]


def _heaviside(w: np.ndarray) -> np.ndarray:
    return (w > 0).astype(np.int64)


def distinct_incremental(batch: ZSet, trace: Trace) -> ZSet:
    """``H(tr[r] + Δ[r]) - H(tr[r])`` for the rows of the batch (RhizomeDB notes §2.9.18).

    >>> batch = ZSet.from_dict({(0,): 2, (2,): 1, (3,): -1})
    >>> distinct_incremental(batch, Trace.from_batches([(0, ZSet.from_rows([(0,)]))])).to_dict()
    {(2,): 1}
    """
    if batch.is_empty():
        return ZSet.empty(batch.arity)
    old = align_weights(batch.keys, trace.select(keys=batch.keys))
    new = old + batch.weights  # int64 sums of checked weights; H only needs the sign
    if np.any((batch.weights > 0) & (new < old)) or np.any((batch.weights < 0) & (new > old)):
        raise WeightOverflowError("distinct_incremental: a row's accumulated weight does not fit in int64")
    d = _heaviside(new) - _heaviside(old)
    keep = d != 0
    return ZSet(batch.keys[keep], d[keep])


def distinct_trace(batch: ZSet, trace: Trace, time: Time) -> ZSet:
    """The change of ``distinct`` at ``time`` given the prior deltas in ``trace`` (module
    docstring: the w1/w2/w3 rule; at the root it equals ``distinct_incremental``).

    >>> tr = Trace(1, n_dims=2).insert(ZSet.from_rows([(0,), (2,)]), (0, 0))
    >>> distinct_trace(ZSet.from_rows([(5,)]), tr, (0, 1)).to_dict()
    {(5,): 1}
    """
    return lattice_delta(ZSet.distinct, batch, trace, time, batch.arity)


class Distinct(Operator):
    """``distinct(a)[r] = 1 if a[r] > 0`` (not incremental: applied to whole values).

    >>> ZSet.from_dict({(0,): 1, (1,): 2, (2,): -1}).distinct().to_dict()
    {(0,): 1, (1,): 1}
    """

    name = "distinct"
    input_kinds = ("zset",)
    next_busy = never_busy

    def output_schema(self, inputs: list[Schema]) -> Schema:
        return inputs[0]

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return values[0].distinct(), state


class _WithTrace(Operator):
    input_kinds = ("zset", "trace")

    def output_schema(self, inputs: list[Schema]) -> Schema:
        a, tr = inputs
        if (tr.arity, tr.n_key) != (a.arity, a.arity):
            raise CircuitError(f"{self.name}: trace {tr} is not a trace of {a} rows")
        return a


class DistinctIncremental(_WithTrace):
    """Node form of ``distinct_incremental(Δ, prior trace)``: ``H(prior + Δ) - H(prior)``.

    >>> prior = Trace(1).insert(ZSet.from_rows([(1,)]), 0)
    >>> DistinctIncremental().eval([ZSet.from_dict({(1,): -1}), prior], None, None)[0].to_dict()
    {(1,): -1}
    """

    name = "distinct_incremental"
    next_busy = never_busy

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        return distinct_incremental(values[0], values[1]), state


class DistinctTrace(_WithTrace):
    """Node form of ``distinct_trace(Δ, prior trace)`` at the node's current time
    (the w1/w2/w3 rule of the module docstring).

    In a child circuit (times (epoch, iteration)) its state is the epoch's plan
    (``scheduled_distinct``): which rows of earlier iterations can change at which later
    iteration, found when each row first came in. So an iteration looks up the batch and
    the planned rows, not every row the epoch touched, and ``next_busy`` is the plan's
    next iteration. At the first epoch, where nothing is planned, the state is the epoch's
    running integral of the rows instead (``traces.Integral``). Either is dropped at the
    end of the epoch.

    >>> from wcoj.circuit import Context
    >>> prior = Trace(1, n_dims=2).insert(ZSet.from_rows([(5,)]), (0, 1))
    >>> DistinctTrace().eval([ZSet.from_rows([(5,)]), prior], None, Context((1, 0), 2, ()))[0].to_dict()
    {(5,): 1}
    """

    name = "distinct_trace"

    def eval(self, values: list[Any], state: Any, ctx: Context) -> tuple[Any, Any]:
        batch, prior = values
        if first_epoch_integral(ctx):  # (the same test tells TraceAppend the trace goes unread)
            return first_epoch_distinct(batch, state, prior.arity)
        t = as_row(ctx.time)
        if len(t) != 2:
            return distinct_trace(batch, prior, ctx.time), state
        return scheduled_distinct(batch, prior, t, state)

    def reset(self, state: Any, inputs: list[Schema], n_dims: int) -> Any:
        return None

    def next_busy(self, values: list[Any], state: Any, ctx: Context) -> int | None:
        # With w = 0 from now on, a row changes only where an earlier epoch holds it at a
        # later iteration, for a row this epoch touched: the plan's next iteration.
        t = as_row(ctx.time)
        if len(t) != 2:
            return t[-1] + 1
        if not isinstance(state, dict):  # nothing planned (at the first epoch: an Integral)
            return None
        return min((i for i in state if i > t[1]), default=None)


def distinct_nested(stream: Stream) -> Stream:
    """``distinct`` incrementalised at any depth: ``distinct_trace(Δ, z1_trace(trace of Δ))``."""
    _, prior = integrate_trace(stream, first_epoch_unread=True)
    return stream.circuit.add(DistinctTrace(), stream, prior)
