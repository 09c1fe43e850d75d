"""``wcoj.shares.run_shares``: every share once, results in share order, shares really on
several threads, the first error raised only after every started share stopped, and the
helper threads pinned to CPUs other than the caller's where Linux says which CPU that is."""

import os
import random
import signal
import threading
import time
import traceback

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wcoj import shares
from wcoj.interrupts import interrupts_default
from wcoj.shares import run_shares


@given(n=st.integers(0, 40), threads=st.integers(1, 4))
def test_every_share_once_in_order(n, threads):
    seen = []
    lock = threading.Lock()

    def fn(i):
        with lock:
            seen.append(i)
        return (i, i * i)

    assert run_shares(fn, n, threads) == [(i, i * i) for i in range(n)]
    assert sorted(seen) == list(range(n))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else True,
                    reason="needs two CPUs")
def test_shares_run_on_two_threads_at_once():
    """Two shares that each wait for the other can only finish if they run together."""
    barrier = threading.Barrier(2, timeout=10)
    names = run_shares(lambda i: (barrier.wait(), threading.current_thread().name)[1], 2, 2)
    assert len(set(names)) == 2 and threading.current_thread().name in names


def test_first_error_raised_after_every_share_stopped():
    running = set()
    lock = threading.Lock()

    def fn(i):
        with lock:
            running.add(i)
        time.sleep(0.01)
        with lock:
            running.discard(i)
        if i in (1, 3):
            raise ValueError(f"share {i}")
        return i

    with pytest.raises(ValueError, match="share 1"):
        run_shares(fn, 64, 2)
    assert not running  # no share still reads the caller's arrays


def test_helpers_are_pinned_to_other_cpus():
    if shares._getcpu() is None or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the CPU of a thread cannot be read here, or there is one CPU")
    cpus = sorted(os.sched_getaffinity(0))
    out = {}

    def caller(cpu):  # a thread of its own, pinned to ``cpu``, runs two shares that meet
        os.sched_setaffinity(0, {cpu})
        barrier = threading.Barrier(2, timeout=10)
        out[cpu] = run_shares(lambda i: (barrier.wait(), os.sched_getaffinity(0))[1], 2, 2)

    for cpu in cpus[:2]:
        t = threading.Thread(target=caller, args=(cpu,))
        t.start()
        t.join()
        helper = [p for p in out[cpu] if p != {cpu}]
        assert len(helper) == 1 and len(helper[0]) == 1 and cpu not in helper[0]


def test_shares_inside_a_helper_run_on_that_helper():
    """With more CPUs, two helpers each running a nested job and handing its shares to
    the other would wait for each other for ever: a helper runs a nested job alone."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    barrier = threading.Barrier(2, timeout=10)

    def outer(i):
        barrier.wait()  # both outer shares run at once, one on a helper
        me = threading.current_thread().name
        return me, run_shares(lambda j: (i, j, threading.current_thread().name), 8, 2)

    got = run_shares(outer, 2, 2)
    assert [[x[:2] for x in inner] for _, inner in got] == [[(i, j) for j in range(8)] for i in range(2)]
    helper = [(me, inner) for me, inner in got if me != threading.current_thread().name]
    assert len(helper) == 1 and {x[2] for x in helper[0][1]} == {helper[0][0]}


@pytest.mark.skipif(not interrupts_default(), reason="the test runner handles SIGINT itself")
def test_ctrl_c_at_any_moment_is_raised_after_every_share_stopped():
    """Real SIGINTs at random moments of a job: a ``KeyboardInterrupt`` (never a broken
    ``Future`` lock's ``RuntimeError``) raised once no share runs: a helper still running
    a kernel over arrays the caller frees on the way out would crash the process."""
    running = set()
    started = []
    lock = threading.Lock()

    def fn(i):
        helper = threading.current_thread() is not threading.main_thread()
        with lock:
            started.append(i)
            if helper:  # the caller's own share stands for a kernel, which Ctrl-C cannot cut short
                running.add(i)
        time.sleep(0.0005)
        with lock:
            running.discard(i)
        return i

    rng = random.Random(7)
    inside = early = 0
    for _ in range(400):
        started.clear()
        sender = threading.Timer(rng.uniform(0, 0.006), os.kill, (os.getpid(), signal.SIGINT))
        try:
            sender.start()
            assert run_shares(fn, 16, 2) == list(range(16))
            sender.join()
            time.sleep(0.05)  # the interrupt lands here at the latest
        except KeyboardInterrupt as e:
            sender.join()
            assert not running, "a helper's share still ran when Ctrl-C was raised"
            if "run_shares" in [f.f_code.co_name for f, _ in traceback.walk_tb(e.__traceback__)]:
                inside += 1
                early += len(started) < 16
    assert inside >= 10, f"only {inside} interrupts landed inside a job"
    assert early, "Ctrl-C stopped no job before its last share"
