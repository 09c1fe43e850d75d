"""The compiled epoch (``wcoj.kernels.epoch.run_epoch``) against its twin, the
interpreter's ``Circuit._run_epoch``: the same circuits stepped through random edge
streams (multiplicities and deletes included) give the same changes, the same iteration
counts and the same traces, tick after tick, or the same error (a weight such as -1 on a
loop makes the recursion oscillate: no fixed point). Also run with ``NUMBA_DISABLE_JIT=1``
by ``./dev test``."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import nodes
from tests.wcoj.test_epoch import counted_runs
from wcoj import config
from wcoj.errors import CircuitError
from wcoj.kernels import epoch as kernel
from wcoj.recursion import reachability_circuit, transitive_closure_circuit
from wcoj.zset import ZSet

weighted_edges = st.dictionaries(st.tuples(nodes, nodes), st.integers(-2, 3), max_size=8)


def _child(c):
    return next(n.child for n in c.nodes if n.kind == "child")


def _traces(c):
    """Every trace of the child as ``{(row, time): weight}``, merged over its runs, and
    the child's horizon (the depth its later epochs iterate to at least)."""
    state = c.state_snapshot()
    out = {}
    for gid, value in state.items():
        if gid[-1] == "horizon":
            out[gid] = value
        elif hasattr(value, "entries"):
            rows, times, w = value.entries()
            acc = {}
            for r, t, x in zip(map(tuple, rows.tolist()), map(tuple, times.tolist()), w.tolist()):
                acc[(r, t)] = acc.get((r, t), 0) + x
            out[gid] = {k: v for k, v in acc.items() if v}
    return out


@pytest.mark.parametrize("make", [transitive_closure_circuit, reachability_circuit])
@settings(deadline=None, max_examples=40)
@given(st.lists(weighted_edges, min_size=1, max_size=5), st.lists(nodes, min_size=1, max_size=2, unique=True))
def test_the_kernel_steps_like_the_interpreter(make, changes, roots):
    compiled, interpreted = make(max_iterations=40), make(max_iterations=40)
    runs = []
    saved = config.EPOCH_KERNEL_MAX_ROWS
    try:
        for n, change in enumerate(changes):
            inputs = {"edges": ZSet.from_dict(change, arity=2)}
            if make is reachability_circuit and n == 0:
                inputs["roots"] = ZSet.from_rows([(r,) for r in roots], arity=1)
            with counted_runs() as seen:
                a = _step(compiled, inputs)
            runs += seen
            config.EPOCH_KERNEL_MAX_ROWS = 0
            b = _step(interpreted, inputs)
            config.EPOCH_KERNEL_MAX_ROWS = saved
            if isinstance(a, str) or isinstance(b, str):
                assert a == b
                continue
            assert a.keys() == b.keys()
            for name in a:
                assert a[name].to_dict() == b[name].to_dict()
            assert _child(compiled).iterations() == _child(interpreted).iterations()
            assert _child(compiled).iterations(evaluated=True) == _child(interpreted).iterations(evaluated=True)
            assert _traces(compiled) == _traces(interpreted)
    finally:
        config.EPOCH_KERNEL_MAX_ROWS = saved
    assert set(runs) <= {kernel.DONE, kernel.LIMIT} and len(runs) == len(changes)


def _step(c, inputs):
    try:
        return c.step(inputs)
    except CircuitError as e:
        return str(e)
