"""Compiled epochs: a child circuit's fixed point for one parent tick in one kernel call.

A positive recursive rule compiles to a child circuit of a few node kinds: imports of the
rule's base relations, ``z^-1`` delays, ``index_with``, projections, ``trace_append``, the
nested join (``join_lattice``), ``plus`` and ``distinct_trace``. ``EpochProgram`` writes
such a child as a program of ``wcoj.kernels.epoch``, one row per node, and ``run`` does
what ``Circuit._run_epoch`` does for one epoch: iterate to the fixed point (skipping idle
iterations by the same next-busy rules), and leave the traces, delays and exports as the
interpreter would, from the same lattice kernels. The interpreter's cost per node and
iteration (Python objects for each batch, trace and run table) was most of a small
update: 1.6 of 2.1 ms for a one-datom change of an ancestors view, ~10 iterations.

``program_for`` answers None for a child with any other node (a Python function in a
``map`` or ``filter``, a ``minus``, a nested child ...); ``run`` answers None, leaving
the epoch to the interpreter, when the step keeps no state (``q``'s first tick, whose
distinct keeps a running integral instead), when the imported changes hold more than
``config.EPOCH_KERNEL_MAX_ROWS`` rows, or when a kernel reports an error (the interpreter
then raises it, with its message, from the same unchanged state).

Relies on ``wcoj.kernels.epoch``, the operators it recognises (``wcoj.operators``) and
``wcoj.trace``. Used by ``wcoj.circuit``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wcoj import config
from wcoj.indexed import IndexedZSet, _join_maps
from wcoj.kernels import epoch as k
from wcoj.kernels.memory import RUN_FIELDS, read_only
from wcoj.operators.distinct import DistinctTrace
from wcoj.operators.join import JoinLattice
from wcoj.operators.linear import IndexWith, Map, Plus
from wcoj.operators.traces import TraceAppend
from wcoj.rows import NO_PACKING, Columns
from wcoj.schedule import FEEDBACK, GIVEN, OPERATOR
from wcoj.time import as_row, extend
from wcoj.zset import ZSet

__all__ = ["EpochProgram", "program_for"]

TABLE_WIDTH = RUN_FIELDS + 4  # a run table's row at (epoch, iteration) times


class _Unsupported(Exception):
    """A node the kernel does not know."""


def program_for(circuit: Any) -> EpochProgram | None:
    """The child's program, or None when a node of it has no kernel form."""
    if circuit.n_dims != 2 or circuit.fixedpoint != "empty" or \
            any(m != "sum" or circuit.nodes[j].schema.kind != "zset" for j, m in circuit._exports):
        return None
    try:
        return EpochProgram(circuit)
    except _Unsupported:
        return None


class EpochProgram:
    """A child circuit as a ``wcoj.kernels.epoch`` program (module docstring)."""

    def __init__(self, circuit: Any):
        sched = circuit._schedule()
        if sched.pending or sched.has_child:
            raise _Unsupported
        nodes = circuit.nodes
        rows, params = [], []
        self.imports: list[tuple[int, int]] = []  # (parent node, arity) per import slot
        self.zsets: list[tuple[int, int]] = []  # (delay node, arity) per Z-set delay slot
        self.traces: list[int] = []  # delay node per trace slot
        slot_z, slot_t = {}, {}
        for j, n in enumerate(nodes):
            if n.kind == "feedback":
                if n.schema.kind == "trace":
                    slot_t[j] = len(self.traces)
                    self.traces.append(j)
                else:
                    slot_z[j] = len(self.zsets)
                    self.zsets.append((j, n.schema.arity))
        for j, code, node, inputs, op, _, _ in sched.steps:
            row = [0] * k.PROG_FIELDS
            row[k.NODE], row[k.ARITY] = j, node.schema.arity
            if code == GIVEN:
                if node.kind != "import" or node.mode not in ("delta0", "const"):
                    raise _Unsupported
                row[k.CODE], row[k.IN0], row[k.AUX] = k.IMPORT, len(self.imports), node.mode == "const"
                self.imports.append((int(node.name), node.schema.arity))
            elif code == FEEDBACK:
                row[k.CODE], row[k.IN0] = (k.FEEDT, slot_t[j]) if j in slot_t else (k.FEEDZ, slot_z[j])
            elif code == OPERATOR:
                self._operator(row, params, op, node, inputs, nodes, slot_t)
            else:
                raise _Unsupported
            rows.append(row)
        self.prog = read_only(np.array(rows, dtype=np.int64).reshape(-1, k.PROG_FIELDS))
        self.params = read_only(np.array(params, dtype=np.int64))
        self.n_nodes = len(nodes)
        self.fbz_in = read_only(np.array([nodes[j].inputs[0] for j, _ in self.zsets], dtype=np.int64))
        self.fbz_arity = read_only(np.array([a for _, a in self.zsets], dtype=np.int64))
        self.fbt_in = read_only(np.array([nodes[j].inputs[0] for j in self.traces], dtype=np.int64))
        self.exports = read_only(np.array([j for j, _ in circuit._exports], dtype=np.int64))
        self.export_arity = [nodes[j].schema.arity for j, _ in circuit._exports]

    @staticmethod
    def _operator(row: list, params: list, op: Any, node: Any, inputs: tuple, nodes: list, slot_t: dict) -> None:
        kind = type(op)
        row[k.IN0:k.IN0 + len(inputs)] = inputs
        if kind is IndexWith or (kind is Map and isinstance(op.fn, Columns) and not op.rowwise):
            cols = op.key_columns if kind is IndexWith else list(op.fn.cols)
            row[k.CODE] = k.INDEX if kind is IndexWith else k.MAP
            row[k.AUX] = cols == list(range(len(cols)))
            row[k.P_OFF], row[k.P_LEN] = len(params), len(cols)
            params.extend(cols)
        elif kind is TraceAppend:
            tr = inputs[1]
            if tr not in slot_t or nodes[tr].inputs[0] != node.local_id:
                raise _Unsupported  # only the integrate_trace loop: a delay of this append
            row[k.CODE], row[k.AUX], row[k.ARITY] = k.APPEND, slot_t[tr], nodes[inputs[0]].schema.arity
        elif kind is JoinLattice and (op.fn is None or isinstance(op.fn, Columns)):
            ta, tb = nodes[inputs[2]].schema, nodes[inputs[3]].schema
            nk = ta.n_key
            width = ta.arity + tb.arity - nk
            a_map, b_map = _join_maps(ta.arity, nk, width, None if op.fn is None else op.fn.cols)
            row[k.CODE], row[k.AUX], row[k.AUX2], row[k.AUX3] = k.JOIN, nk, ta.arity, tb.arity
            row[k.P_OFF], row[k.P_LEN], row[k.ARITY] = len(params), a_map.shape[1], a_map.shape[1] + b_map.shape[1]
            if ta.kind != "trace" or tb.kind != "trace" or row[k.ARITY] != node.schema.arity:
                raise _Unsupported
            params.extend(a_map.ravel().tolist())
            params.extend(b_map.ravel().tolist())
        elif kind is Plus and len(inputs) == 2:
            row[k.CODE] = k.PLUS
        elif kind is DistinctTrace:
            row[k.CODE] = k.DISTINCT
        else:
            raise _Unsupported

    def run(self, circuit: Any, parent_time: Any, parent_values: dict[int, Any], cstate: dict) -> tuple | None:
        """One epoch, as ``Circuit._run_epoch`` returns it, or None for the interpreter."""
        if not circuit._root()._keep:
            return None
        given = []
        for p, arity in self.imports:
            v = parent_values[p]
            given.append(v.zset if isinstance(v, IndexedZSet) else v)
        if sum(len(z) for z in given) > config.EPOCH_KERNEL_MAX_ROWS:
            return None
        state = dict(cstate["nodes"])
        t0 = as_row(parent_time)[0]
        sizes = np.array([len(z) for z in given], dtype=np.int64)
        at = np.zeros((len(given), 3), dtype=np.int64)
        at[:, 2] = sizes
        at[1:, 1] = np.cumsum(sizes)[:-1]
        at[1:, 0] = np.cumsum(sizes * np.array([a for _, a in self.imports], dtype=np.int64))[:-1]
        given_k = np.concatenate([z.keys.ravel() for z in given]) if given else np.zeros(0, dtype=np.int64)
        given_w = np.concatenate([z.weights for z in given]) if given else np.zeros(0, dtype=np.int64)
        priors = [t for t in (state[j].run_table().table for j in self.traces) if len(t)]  # (an empty
        off = np.zeros(len(self.traces) + 1, dtype=np.int64)                                  # one is narrower)
        off[1:] = np.cumsum([len(state[j]._all_runs()) for j in self.traces])
        tables = np.concatenate(priors) if priors else np.zeros((0, TABLE_WIDTH), dtype=np.int64)
        status, i, evaluated, traces_k, traces_w, its, keep_k, keep_w, exp_meta, n_exp = k.run_epoch(
            self.prog, self.params, self.n_nodes, self.fbz_in, self.fbz_arity, self.fbt_in,
            read_only(np.ascontiguousarray(tables, dtype=np.int64)), read_only(off),
            read_only(np.ascontiguousarray(given_k, dtype=np.int64)),
            read_only(np.ascontiguousarray(given_w, dtype=np.int64)), read_only(at),
            t0, cstate["horizon"], circuit.max_iterations, self.exports, NO_PACKING[0])
        if status == k.FAILED:
            return None
        if status == k.LIMIT:
            raise circuit._no_fixed_point(i, parent_time)
        for slot, (j, (lo, hi)) in enumerate(zip(self.traces, its.tolist())):
            if lo >= 0:  # the epoch's appends, one run
                state[j] = state[j].with_run(ZSet(traces_k[slot + 1], traces_w[slot + 1]), (t0, lo), (t0, hi))
        circuit._clock_end(state, extend(parent_time, 0), epoch_end=True)  # (empties the delays, drops plans)
        parts: list[list[int]] = [[] for _ in self.export_arity]
        for e, idx, _ in exp_meta[:n_exp].tolist():
            parts[e].append(idx)
        out = {}
        for e, arity in enumerate(self.export_arity):
            got = parts[e]
            if not got:
                out[e] = ZSet.empty(arity)
            elif len(got) == 1:
                out[e] = ZSet(keep_k[got[0]], keep_w[got[0]])
            else:
                out[e] = ZSet.from_arrays(np.concatenate([keep_k[x] for x in got]),
                                          np.concatenate([keep_w[x] for x in got]), arity=arity)
        return {"nodes": state, "horizon": max(cstate["horizon"], i), "iterations": i, "evaluated": evaluated}, out
