"""Ctrl-C and threads against a graph's tick: all or nothing, and writers serialised.

An interrupt is injected as a real SIGINT (``signal.raise_signal``) at each step of both
routes of a tick, so what it meets is what a user's Ctrl-C meets: a ``KeyboardInterrupt``
at the next bytecode, unless the engine holds it back. After each, the graph must be the
graph before the tick or the graph after it, its views must equal a recomputation, and
the next tick must work. A subprocess then gets real SIGINTs at random moments mid-tick.
"""

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from indexes.index import IncrementalIndex, Relation
from indexes.transaction import ChangePlan, Transaction
from indexes.trie import Trie
from queries.graph import Graph
from wcoj import config
from wcoj import program as join_program
from wcoj.generic_join import IncrementalGenericJoin
from wcoj.interrupts import interrupts_default

pytestmark = pytest.mark.skipif(not interrupts_default(), reason="the test runner handles SIGINT itself")

# (owner, method): every step of a tick a Ctrl-C can land in
STEPS = [(ChangePlan, "run_edges"), (ChangePlan, "edge_changes"), (Transaction, "stage"),
         (Relation, "stage"), (IncrementalIndex, "stage"), (IncrementalGenericJoin, "delta"),
         (Transaction, "commit"), (Relation, "commit"), (IncrementalIndex, "commit"), (Trie, "apply"),
         (Transaction, "rollback"), (join_program, "run_shares"), (join_program, "run_terms")]


def triangles(edges: set) -> int:
    adj = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    return sum(len(adj[a] & adj[b]) for a, b in edges) // 3


def pairs(arr) -> set:
    return {(min(a, b), max(a, b)) for a, b in np.asarray(arr).tolist() if a != b}


def graph_and_tick(seed: int, n: int):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 40, size=(300, 2))
    g = Graph()
    g.load_edges(base)
    g.view("triangle")
    ins = rng.integers(0, 40, size=(n, 2))
    dels = base[rng.choice(len(base), size=n // 3)]
    before = pairs(base)
    after = (before | pairs(ins)) - pairs(dels)
    return g, ins, dels, before, after


def interrupting(monkeypatch, owner, name, nth: int, when: str):
    """Patch ``owner.name`` to raise SIGINT before or after its ``nth`` call."""
    original = getattr(owner, name)
    calls = itertools.count(1)

    def hooked(*args, **kwargs):
        hit = next(calls) == nth
        if hit and when == "before":
            signal.raise_signal(signal.SIGINT)
        out = original(*args, **kwargs)
        if hit and when == "after":
            signal.raise_signal(signal.SIGINT)
        return out

    monkeypatch.setattr(owner, name, hooked)


@pytest.mark.parametrize("route", ["change by change", "staged on threads"])
@pytest.mark.parametrize("owner,name", STEPS, ids=[f"{o.__name__.split('.')[-1]}.{n}" for o, n in STEPS])
def test_an_interrupt_at_any_step_leaves_the_tick_all_or_nothing(monkeypatch, route, owner, name):
    if route == "staged on threads":
        monkeypatch.setattr(config, "CHANGE_ROWS", 0)
        monkeypatch.setattr(config, "DELTA_SHARE_ROWS", 1)
        monkeypatch.setattr(config, "THREADS", 2)
    hits = 0
    for nth, when in itertools.product((1, 2, 3), ("before", "after")):
        g, ins, dels, before, after = graph_and_tick(nth, 60)
        with monkeypatch.context() as m:
            interrupting(m, owner, name, nth, when)
            try:
                g.apply(ins, dels)
            except KeyboardInterrupt:
                hits += 1
        now = pairs(g.edges())
        assert now in (before, after), f"half a tick applied ({name} call {nth}, {when})"
        g.check_views()
        assert g.views["triangle"].count == triangles(now)
        more = np.array([[1, 2], [2, 3], [1, 3]])
        g.apply(more)  # the next tick works and is right
        assert g.views["triangle"].count == triangles(now | pairs(more))
        g.check_views()
    if (owner, name) not in ((Transaction, "rollback"),):  # rollback runs only after a failure
        reached = route == "change by change" and owner is ChangePlan and name == "run_edges" or \
            route == "staged on threads" and not (owner is ChangePlan and name == "run_edges")
        if reached:
            assert hits, f"no interrupt reached {name}: the test injected nothing"


def test_two_threads_applying_ticks_end_where_serial_ticks_end():
    rng = np.random.default_rng(7)
    # two threads on disjoint node ranges: their ticks commute, so any interleaving ends
    # in the state of the ticks applied one thread after the other
    plans = []
    for lo in (0, 1000):
        ticks = []
        for _ in range(60):
            k = int(rng.integers(1, 300))
            ticks.append((rng.integers(lo, lo + 60, size=(k, 2)), rng.integers(lo, lo + 60, size=(k // 2, 2))))
        plans.append(ticks)
    shared, serial = Graph(), Graph()
    for g in (shared, serial):
        g.view("triangle")
        g.view("4-cycle")
    errors = []

    def run(ticks):
        try:
            for ins, dels in ticks:
                shared.apply(ins, dels)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=run, args=(p,)) for p in plans]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    for p in plans:
        for ins, dels in p:
            serial.apply(ins, dels)
    assert pairs(shared.edges()) == pairs(serial.edges())
    for name in ("triangle", "4-cycle"):
        assert shared.views[name].count == serial.views[name].count
    shared.check_views()


CHILD = textwrap.dedent("""
    import signal, sys, numpy as np
    from queries.graph import Graph
    from wcoj import config
    from queries.graphio import generate_power_law
    base = generate_power_law(60000, seed=1)
    g = Graph(); g.load_edges(base); g.view("triangle")
    rng = np.random.default_rng(2)
    caught = 0
    for k, rows in ((2000, 1 << 20), (20000, 0)):  # both routes' kernels loaded (or compiled)
        config.CHANGE_ROWS = rows                  # before any interrupt: an interrupt inside
        g.apply(rng.integers(0, 20000, size=(k, 2)), base[rng.choice(len(base), k // 2)])
    print("ready", flush=True)                     # loads: the test after this one
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for i in range(400):
        # interrupts land only inside this try (outside it, between two iterations, Python
        # could run the handler at the loop's jump, where nothing would catch it)
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            k = 2000 if i % 2 else 20000          # both routes: change by change, then staged
            config.CHANGE_ROWS = 1 << 20 if i % 2 else 0
            ins = rng.integers(0, 20000, size=(k, 2)); dels = base[rng.choice(len(base), k // 2)]
            g.apply(ins, dels)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the checks themselves run in peace
            caught += 1
            g.check_views()
            g.apply(np.array([[1, 2]]))
            g.check_views()
            print("checked", caught, flush=True)
        if caught >= int(sys.argv[1]):
            break
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    g.check_views()
    print("done", caught, flush=True)
""")


def interrupted_child(source: str, args: list[str], rng, pause: tuple[float, float], most: int) -> str:
    """Run ``source`` in a child; once it prints "ready", send it SIGINT after every pause
    (uniform in ``pause`` seconds) until it exits or ``most`` were sent. Its output, once
    it exited with 0."""
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.Popen([sys.executable, "-c", source, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "ready"
        sent = 0
        while child.poll() is None and sent < most:
            try:
                child.wait(timeout=float(rng.uniform(*pause)))
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGINT)
                sent += 1
        out, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err[-3000:]
    return out + err[-2000:]


def test_real_interrupts_mid_tick_leave_a_graph_that_checks():
    want = 8
    out = interrupted_child(CHILD, [str(want)], np.random.default_rng(3), (0.01, 0.15), 200)
    assert f"done {want}" in out, out[-4000:]


LOADING_CHILD = textwrap.dedent("""
    import signal, numpy as np
    from queries.graph import Graph
    print("ready", flush=True)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    caught = 0
    while True:
        try:  # interrupts land only inside this try, as in CHILD above
            signal.signal(signal.SIGINT, signal.default_int_handler)
            rng = np.random.default_rng(1)
            g = Graph()
            g.load_edges(rng.integers(0, 300, size=(3000, 2)))
            g.view("triangle"); g.view("4-cycle")
            for i in range(20):
                g.apply(rng.integers(0, 300, size=(1 + 7 * i, 2)), rng.integers(0, 300, size=(i, 2)))
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            caught += 1
    g.check_views()
    print("done", caught, flush=True)
""")


def test_real_interrupts_while_kernels_load_leave_numba_working():
    # Before the kernels' loads held Ctrl-C back, each of 25 such runs failed: Numba's
    # registries half imported ("KeyError: duplicate registration" at every later load),
    # or a KeyboardInterrupt "ignored" in llvmlite's object-cache callback, then a hang.
    rng = np.random.default_rng(4)
    for _ in range(3):
        out = interrupted_child(LOADING_CHILD, [], rng, (0.002, 0.03), 150)
        assert out.startswith("done"), out[-4000:]
