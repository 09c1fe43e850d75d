"""Crash tests: a child process writes to a durable database (or graph) in a loop and
prints every acknowledged transaction; the parent SIGKILLs it at random moments, some of
them inside a snapshot, reopens, and checks the state against an in-memory oracle that
replays the same transactions.

Each test makes 20 kills and takes about half a minute.
"""

import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

from queries.database import Database
from queries.graph import Graph

ROOT = Path(__file__).resolve().parents[2]
KILLS = 20

DB_CHILD = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from queries import durable
    from queries.database import Database
    from tests.queries.test_durable_crash import SCHEMA, VIEWS, db_tx

    def hook(stage):
        print("snap", stage, flush=True)
        time.sleep(0.03)  # widen the window, so that kills land inside snapshots

    durable.SNAPSHOT_HOOK = hook
    db = Database.open(sys.argv[1], snapshot_every=40)
    if not db.store.has_attribute(":k/i"):
        db.transact(SCHEMA)
    for name, q in VIEWS.items():
        if name not in db.views:
            db.view(q, name=name)
    last = db.q('[:find ?i . :where [?c :k/id "counter"] [?c :k/last ?i]]')
    i = -1 if last is None else last
    print("open", i, flush=True)
    while True:
        i += 1
        db.transact(db_tx(i))
        print("ack", i, flush=True)
''')

SCHEMA = """[{:db/ident :k/i :db/valueType :db.type/long :db/unique :db.unique/identity}
             {:db/ident :k/tag :db/valueType :db.type/string :db/cardinality :db.cardinality/many}
             {:db/ident :k/id :db/valueType :db.type/string :db/unique :db.unique/identity}
             {:db/ident :k/last :db/valueType :db.type/long}
             {:db/ident :k/next :db/valueType :db.type/ref}]"""
VIEWS = {
    "tags": '[:find ?i ?t :where [?e :k/i ?i] [?e :k/tag ?t]]',
    "chain": '[:find ?a ?b :where [?x :k/next ?y] [?x :k/i ?a] [?y :k/i ?b]]',
    "untagged": '[:find ?i :where [?e :k/i ?i] (not [?e :k/tag "t0"])]',
}
ALL = '[:find ?e ?a ?v ?tx :where [?e ?a ?v ?tx] [(not= ?a :db/txInstant)]]'


def db_tx(i: int) -> list:
    """Transaction i: a new entity with tags, a counter set to i (cardinality one,
    upserted), a reference to the previous entity, and now and then a retraction."""
    forms = [{":db/id": "x", ":k/i": i, ":k/tag": [f"t{i % 5}", f"u{i % 3}"]},
             {":k/id": "counter", ":k/last": i}]
    if i:
        forms.append([":db/add", "x", ":k/next", [":k/i", i - 1]])
    if i % 4 == 3:
        forms.append([":db/retractEntity", [":k/i", i - 2]])
    if i % 5 == 4:
        forms.append([":db/retract", [":k/i", i - 1], ":k/tag", f"t{(i - 1) % 5}"])
    return forms


GRAPH_CHILD = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from queries import durable
    from queries.graph import Graph
    from tests.queries.test_durable_crash import GRAPH_VIEWS, graph_tick

    def hook(stage):
        print("snap", stage, flush=True)
        time.sleep(0.03)

    durable.SNAPSHOT_HOOK = hook
    g = Graph.open(sys.argv[1], snapshot_every=60)
    for name in GRAPH_VIEWS:
        g.view(name)
    print("open", g.n_ticks, flush=True)
    while True:
        ins, dels = graph_tick(g.n_ticks + 1)
        g.apply(inserts=ins, deletes=dels)
        print("ack", g.n_ticks, flush=True)
''')
GRAPH_VIEWS = ("triangle", "4-cycle")


def graph_tick(t: int):
    """Tick t's inserts and deletes (seeded by t) on 40 nodes."""
    rng = np.random.default_rng(t)
    return rng.integers(0, 40, (6, 2)), rng.integers(0, 40, (4, 2))


class Child:
    """A child process whose stdout lines are collected by a thread."""

    def __init__(self, script: str, path: Path):
        self.proc = subprocess.Popen([sys.executable, "-c", script, str(path), str(ROOT)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=ROOT)
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.endswith("\n") and line.split():  # a SIGKILL may cut the last line short
                self.lines.append(line.split())

    def wait_for(self, pred, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while not any(pred(x) for x in list(self.lines)):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.thread.join(5)
                raise AssertionError(f"child ended or stalled: {self.proc.stderr.read()[-3000:]}")
            time.sleep(0.005)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.thread.join(10)
        self.proc.stdout.close()
        self.proc.stderr.close()

    def acked(self) -> list[int]:
        return [int(x[1]) for x in self.lines if x[0] == "ack"]


def kill_somewhere(child: Child, rng: random.Random) -> bool:
    """SIGKILL the child at a random moment after it opened; every third kill waits for a
    snapshot stage first (the child sleeps there). Whether the kill was inside a snapshot."""
    child.wait_for(lambda x: x[0] == "open")
    inside = False
    if rng.random() < 0.35:
        stage = rng.choice(["written", "renamed", "recorded"])
        n = sum(1 for x in child.lines if x[:2] == ["snap", stage])
        child.wait_for(lambda x: False or sum(1 for y in child.lines if y[:2] == ["snap", stage]) > n)
        inside = True
    else:
        time.sleep(rng.uniform(0.05, 0.4))
        last = [x for x in child.lines if x[0] == "snap"]
        inside = bool(last) and last[-1][1] != "recorded"
    child.kill()
    return inside


def test_database_survives_sigkill(tmp_path):
    rng = random.Random(22)
    path = tmp_path / "db"
    oracle = Database()
    oracle.transact(SCHEMA)
    done, inside, max_ack = -1, 0, -1
    for kill in range(KILLS):
        child = Child(DB_CHILD, path)
        inside += kill_somewhere(child, rng)
        acked = child.acked()
        max_ack = max([max_ack] + acked)
        with Database.open(path) as db:
            last = db.q('[:find ?i . :where [?c :k/id "counter"] [?c :k/last ?i]]')
            last = -1 if last is None else last
            # every acknowledged (and every formerly seen) transaction is there; at most one
            # more: committed, not yet acknowledged when the kill came
            assert max(max_ack, done) <= last <= max(max_ack, done) + 1, (kill, child.lines[-8:], last)
            for i in range(done + 1, last + 1):
                oracle.transact(db_tx(i))
            done = last
            assert db.q(ALL) == oracle.q(ALL), f"kill {kill}: state differs from the replay"
            assert set(db.views) == set(VIEWS)
            for name, q in VIEWS.items():
                assert db.views[name].result() == db.q(q) == oracle.q(q), (kill, name)
            assert len(db.transactions()) == len(oracle.transactions())
    assert inside >= 3, f"only {inside} kills landed inside a snapshot"
    with Database.open(path) as db:
        hist = '[:find ?e ?a ?v ?tx ?added :where [?e ?a ?v ?tx ?added] [(not= ?a :db/txInstant)]]'
        assert db.history().q(hist) == oracle.history().q(hist)


def test_graph_survives_sigkill(tmp_path):
    rng = random.Random(23)
    path = tmp_path / "graph"
    oracle = Graph()
    for name in GRAPH_VIEWS:
        oracle.view(name)
    inside, max_ack = 0, 0
    for kill in range(KILLS):
        child = Child(GRAPH_CHILD, path)
        inside += kill_somewhere(child, rng)
        max_ack = max([max_ack] + child.acked())
        with Graph.open(path) as g:
            seen = max(max_ack, oracle.n_ticks)
            assert seen <= g.n_ticks <= seen + 1, (kill, child.lines[-8:], g.n_ticks)
            while oracle.n_ticks < g.n_ticks:
                ins, dels = graph_tick(oracle.n_ticks + 1)
                oracle.apply(inserts=ins, deletes=dels)
            assert np.array_equal(g.edges(), oracle.edges()), f"kill {kill}: edges differ"
            g.check_views()  # every view equals a recomputation
            assert {n: v.count for n, v in g.views.items()} == \
                {n: v.count for n, v in oracle.views.items()}
    assert inside >= 3, f"only {inside} kills landed inside a snapshot"
