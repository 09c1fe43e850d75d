"""``warm_up_views`` loads every kernel the steps of the views it runs call: after it, a
fresh process's views of the same kinds step without loading a kernel. Each case runs in
a process of its own (kernels already loaded by other tests would hide a miss), and the
same script without the warm-up is the control: there the first steps do load kernels."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r"""
import sys
import numpy as np
from wcoj import kernel_load_seconds
from queries.database import Database
from queries.warmup import warm_up_views

if sys.argv[1] == "warm":
    warm_up_views()
rng = np.random.default_rng(7)
n = 2000
db = Database()
db.transact('[{:db/ident :name :db/valueType :db.type/string :db/unique :db.unique/identity}'
            ' {:db/ident :f :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}'
            ' {:db/ident :up :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]')
# each person with its parent (a lower number) and the people it follows, as maps
people = [{":db/id": f"x{i}", ":name": f"x{i}", ":f": [f"x{j}" for j in rng.integers(0, n, 8).tolist()]}
          for i in range(n)]
for i in range(1, n):
    people[i][":up"] = f"x{int(rng.integers(0, i))}"
ids = db.transact(people).tempids
e = np.array([ids[f"x{i}"] for i in range(n)], dtype=np.int64)
views = [db.view('[:find ?a ?b ?c :where [?a :f ?b] [?b :f ?c] [?c :f ?a]]'),
         db.view('[:find (count ?b) . :in $ % :where (up ?a ?b)]',
                 '[[(up ?a ?b) [?a :up ?b]] [(up ?a ?b) [?a :up ?x] (up ?x ?b)]]'),
         db.view('[:find ?b :in $ % ?n :where [?a :name ?n] (r ?a ?b)]',
                 '[[(r ?a ?b) [?a :f ?b]] [(r ?a ?b) [?a :f ?x] (r ?x ?b)]]', "x3")]
loaded = kernel_load_seconds()
for size in (1, 100, 1):
    a, b = rng.integers(0, n, size), rng.integers(0, n, size)
    tx = [[":db/add", int(e[x]), ":f", int(e[y])] for x, y in zip(a, b)]
    tx += [[":db/add", int(e[max(x, y)]), ":up", int(e[min(x, y)])] for x, y in zip(a, b) if x != y]
    tx += [[":db/retract", d.e, ":f", d.v] for d in db.datoms(":aevt", ":f")[:size]]
    db.transact(tx)
    for v in views:
        v.result()
print("LOADED", kernel_load_seconds() - loaded)
"""


def _loaded_during_steps(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT}, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return float([x for x in out.stdout.splitlines() if x.startswith("LOADED ")][-1].split()[1])


def test_views_step_without_loading_a_kernel_after_warm_up_views():
    assert _loaded_during_steps("warm") == 0.0
    assert _loaded_during_steps("cold") > 0.0  # the control: without it, the first steps load kernels
