"""Soufflé's own test programs as a conformance suite: ``q`` gives the output Soufflé
recorded, and views registered before any fact arrives equal ``q`` after every
transaction (the facts in three shuffled batches, a retraction of some, their re-adding)
and Soufflé's output at the end.

The programs are the test cases of Soufflé's repository (``tests/data/souffle``, with its
licence and the list of what was left out) that ``tests/queries/souffle.py`` translates:
plain relations of numbers and symbols, recursion, stratified negation, arithmetic and
comparisons, disjunction, several heads, and aggregates (``count``, ``sum``, ``min``,
``max`` over a body, as nested ``q`` calls).

A program whose rules derive for ever without a fact that bounds them (``gen(x+1) :-
gen(x), !lim(x)`` before ``lim(100)`` arrives), or that divides by a count still 0, makes
a transaction fail: the test then asserts that nothing changed and that ``q`` of that
state fails the same way. The
iteration limit is lowered for these tests so that such a state fails in a second, not
ten; the programs here need at most a few hundred iterations.
"""

import random
from pathlib import Path

import pytest

from queries import circuits
from queries.database import Database
from tests.queries import souffle
from wcoj.errors import NoFixedPointError, QueryError

DATA = Path(__file__).resolve().parents[1] / "data" / "souffle"
CASES = sorted(d.name for d in DATA.iterdir() if d.is_dir())


@pytest.fixture(autouse=True)
def short_limit(monkeypatch):
    monkeypatch.setattr(circuits, "RECURSION_LIMIT", 2000)


def test_the_suite_is_here():
    assert len(CASES) >= 100


def program(name: str):
    """The translated program, its rules' text, and a database holding only its schema."""
    p = souffle.load(DATA / name)
    db = Database()
    db.transact(p.schema())
    return p, p.rules_edn(), db


@pytest.mark.parametrize("name", CASES)
def test_q_gives_souffles_output(name):
    p, rules, db = program(name)
    for rel, rows in p.facts.items():
        if rows:
            db.transact(p.fact_maps(rel, sorted(rows)))
    for rel, want in p.expected.items():
        assert db.q(p.query(rel), rules) == want, rel


@pytest.mark.parametrize("name", CASES)
def test_views_equal_q_after_every_transaction(name):
    p, rules, db = program(name)
    views = {rel: db.view(p.query(rel), rules) for rel in p.expected}
    facts = [(rel, row) for rel, rows in p.facts.items() for row in sorted(rows)]
    random.Random(name).shuffle(facts)
    eids = {}

    def check(step):
        for rel, v in views.items():
            assert set(v.result()) == db.q(p.query(rel), rules), f"{rel} after {step}"

    def add(part, step):
        tx = [dict(p.fact_maps(rel, [row])[0], **{":db/id": f"f{j}"}) for j, (rel, row) in enumerate(part)]
        if not tx:
            return
        try:
            r = db.transact(tx)
        except (NoFixedPointError, QueryError) as e:  # a state that derives for ever, or
            check(step + " (refused)")                 # divides by zero: unchanged, and q
            with pytest.raises(type(e)):                # of that state fails the same way
                after = db.with_(tx).db_after
                for rel in views:
                    after.q(p.query(rel), rules)
            return
        eids.update({f: r.tempids[f"f{j}"] for j, f in enumerate(part)})
        check(step)

    third = len(facts) // 3
    add(facts[:third], "batch 1")
    add(facts[third:2 * third], "batch 2")
    gone = [f for f in facts[:third:2] if f in eids]
    if gone:
        db.transact([[":db/retractEntity", eids.pop(f)] for f in gone])
        check("a retraction")
    add([f for f in facts if f not in eids], "batch 3")
    assert set(eids) == set(facts)
    for rel, v in views.items():
        assert set(v.result()) == p.expected[rel], rel
