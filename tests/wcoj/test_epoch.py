"""Compiled epochs (``wcoj.epoch``): which children get a program, that a kept step's
epoch runs as one kernel call, and that every error leaves the same message and the same
state as the interpreter's. (Their answers are checked against the oracles with both
routes by ``test_recursion.py`` and ``tests/queries/test_database_views.py``.)"""

import contextlib

import pytest

from wcoj import config
from wcoj.circuit import Circuit
from wcoj.epoch import program_for
from wcoj.errors import CircuitError, WeightOverflowError
from wcoj.kernels import epoch as kernel
from wcoj.recursion import closure, transitive_closure_circuit
from wcoj.zset import ZSet

PATH = [(i, i + 1) for i in range(10)]


def _child(c: Circuit) -> Circuit:
    return next(n.child for n in c.nodes if n.kind == "child")


@contextlib.contextmanager
def counted_runs():
    """The statuses of the kernel's runs within the block, in a list."""
    seen, run = [], kernel.run_epoch

    def counted(*args):
        out = run(*args)
        seen.append(out[0])
        return out
    kernel.run_epoch = counted
    try:
        yield seen
    finally:
        kernel.run_epoch = run


@pytest.fixture
def calls():
    with counted_runs() as seen:
        yield seen


@pytest.fixture(params=["kernel", "interpreter"])
def route(request, monkeypatch):
    if request.param == "interpreter":
        monkeypatch.setattr(config, "EPOCH_KERNEL_MAX_ROWS", 0)
    return request.param


def test_a_closure_child_has_a_program_and_a_python_map_has_none():
    assert program_for(_child(transitive_closure_circuit())) is not None
    c = Circuit()
    edges = c.source(arity=2, name="edges")
    child = c.child()
    e = child.import_(edges)
    seed = e.map(lambda k: k[:, ::-1], arity=2)  # a Python function: no kernel form
    c.sink(child.export(closure(child, seed, e)), "out")
    assert program_for(_child(c)) is None
    assert c.step({"edges": ZSet.from_rows([(1, 2), (2, 3)])})["out"].to_dict() == \
        {(2, 1): 1, (3, 2): 1, (2, 2): 1, (2, 3): 1, (3, 3): 1}


def test_kept_steps_run_one_kernel_call_per_epoch_and_q_like_steps_do_not(calls):
    c = transitive_closure_circuit()
    assert len(c.step({"edges": ZSet.from_rows(PATH)})["closure"]) == 55
    assert calls == [kernel.DONE]
    assert c.step({"edges": ZSet.from_dict({(4, 5): -1})}, keep=False)["closure"].to_dict() == \
        {(i, j): -1 for i in range(5) for j in range(5, 11)}
    assert calls == [kernel.DONE]  # a step that keeps nothing: the interpreter
    assert c.step({"edges": ZSet.from_dict({(4, 5): -1})})["closure"].to_dict() == \
        {(i, j): -1 for i in range(5) for j in range(5, 11)}
    assert calls == [kernel.DONE, kernel.DONE]


def test_a_change_larger_than_the_limit_takes_the_interpreter(calls, monkeypatch):
    monkeypatch.setattr(config, "EPOCH_KERNEL_MAX_ROWS", 9)
    c = transitive_closure_circuit()
    c.step({"edges": ZSet.from_rows(PATH)})  # 10 rows imported
    assert calls == []
    c.step({"edges": ZSet.from_rows([(10, 11)])})
    assert calls == [kernel.DONE]


def test_no_fixed_point_within_the_limit_is_the_same_error_and_changes_nothing(route):
    c = transitive_closure_circuit(max_iterations=5)
    c.step({"edges": ZSet.from_rows(PATH[:2])})
    with pytest.raises(CircuitError, match=r"reached no fixed point within 5 iterations at time 1"):
        c.step({"edges": ZSet.from_rows(PATH[2:])})  # a path of 10 edges: 11 iterations
    assert c.step({"edges": ZSet.from_rows([(20, 21)])})["closure"].to_dict() == {(20, 21): 1}


def test_a_weight_that_leaves_int64_raises_as_the_interpreter_does(route, calls):
    c = transitive_closure_circuit()
    c.step({"edges": ZSet.from_dict({(0, 1): 1, (1, 2): 2 ** 62})})
    with pytest.raises(WeightOverflowError):  # the edge's weight summed over both ticks: 2**63
        c.step({"edges": ZSet.from_dict({(1, 2): 2 ** 62})})
    assert calls == ([kernel.DONE, kernel.FAILED] if route == "kernel" else [])
    assert c.step({"edges": ZSet.from_rows([(5, 6)])})["closure"].to_dict() == {(5, 6): 1}


def test_a_kernel_failure_leaves_the_epoch_to_the_interpreter(monkeypatch):
    def failed(*args):
        return (kernel.FAILED,) + (None,) * 9  # what a kernel returns when it fails
    monkeypatch.setattr(kernel, "run_epoch", failed)
    c = transitive_closure_circuit()
    assert len(c.step({"edges": ZSet.from_rows(PATH)})["closure"]) == 55
