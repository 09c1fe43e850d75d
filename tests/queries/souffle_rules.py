"""The rules half of the Soufflé translation (``tests/queries/souffle.py`` reads the
programs): one Soufflé rule body as Datomic clauses. Atoms are rule calls, negations
``not-join`` over the variables bound outside them, ``x = 5`` is written into the atoms,
``x = e`` binds ``x`` once ``e``'s inputs are bound, comparisons come after the atoms, and
an aggregate (``Y = count : { .. }``, ``min``, ``max``, ``sum``) is a nested ``q`` over the
rules given the variables it shares with the rest of the body (``count`` and ``sum`` of
nothing are 0 there, as in Soufflé, where ``q`` answers nil: an ``or-join`` with the body's
negation gives the 0).

>>> from tests.queries.souffle import parse_program
>>> p = parse_program('.decl e(a:number, b:number) .decl p(a:number, b:number) .output p '
...                   'e(1,2). e(2,3). p(x,y) :- e(x,y). p(x,z) :- p(x,y), e(y,z).')
>>> p.rules_edn()
'[[(r_e ?c0 ?c1) [?f :e/c0 ?c0] [?f :e/c1 ?c1]] [(r_p ?v_x ?v_y) (r_e ?v_x ?v_y)] [(r_p ?v_x ?v_z) (r_p ?v_x ?v_y) (r_e ?v_y ?v_z)]]'
"""

from __future__ import annotations

import json

from tests.queries.souffle import ARITH, FUNCTORS, RELOPS, Agg, Atom, Cmp, Const, Op, Unsupported, Var

__all__ = ["rule_edn"]


def _term(t) -> str:
    if isinstance(t, Var):
        return f"?v_{t.name}"
    if isinstance(t.value, str):
        return json.dumps(t.value)
    return str(t.value)


def _vars(e) -> set:
    """The variables ``e`` needs bound: an aggregate's are those it shares (``outer``)."""
    if isinstance(e, Var):
        return {e.name}
    if isinstance(e, Op):
        return set().union(*map(_vars, e.args))
    if isinstance(e, Agg):
        return set(e.outer)
    return set()


class _Fresh:
    def __init__(self):
        self.n = 0

    def __call__(self, prefix="t") -> str:
        self.n += 1
        return f"?_{prefix}{self.n}"


def _expr(e, clauses: list, fresh: _Fresh, bound: set | None = None) -> str:
    """The term for ``e``, with the clauses that compute it appended."""
    if isinstance(e, Agg):
        return _aggregate(e, clauses, fresh)
    if not isinstance(e, Op):
        return _term(e)
    args = [_expr(a, clauses, fresh, bound) for a in e.args]
    out = fresh()
    if e.op == "neg":
        clauses.append(f"[(- 0 {args[0]}) {out}]")
    else:
        clauses.append(f"[({ARITH.get(e.op) or FUNCTORS[e.op]} {' '.join(args)}) {out}]")
    return out


def _subst(e, name: str, c: Const):
    if isinstance(e, Var):
        return c if e.name == name else e
    if isinstance(e, Op):
        return Op(e.op, [_subst(a, name, c) for a in e.args])
    if isinstance(e, Atom):
        return Atom(e.rel, [_subst(a, name, c) for a in e.args], e.negated)
    if isinstance(e, Cmp):
        return Cmp(e.op, _subst(e.left, name, c), _subst(e.right, name, c))
    if isinstance(e, Agg):
        return Agg(e.kind, e.target and _subst(e.target, name, c), [_subst(x, name, c) for x in e.body])
    return e


def _constants_in(head: Atom, body: list) -> tuple[Atom, list]:
    """``x = 5`` written into the atoms (as Soufflé's own planner does): a pattern with a
    constant reads one value, a predicate after the join would filter a larger one."""
    while True:
        for c in body:
            if isinstance(c, Cmp) and c.op == "=":
                var, k = (c.left, c.right) if isinstance(c.right, Const) else (c.right, c.left)
                if isinstance(var, Var) and isinstance(k, Const):
                    body = [_subst(x, var.name, k) for x in body if x is not c]
                    head = _subst(head, var.name, k)
                    break
        else:
            return head, body


def _walk(x, skip: tuple = ()) -> tuple[set, list]:
    """The variables of ``x`` leaving out the subtrees in ``skip``, and the aggregates in it."""
    if x is None or any(x is y for y in skip):
        return set(), []
    kids = (x.args if isinstance(x, (Atom, Op)) else (x.left, x.right) if isinstance(x, Cmp)
            else (x.target, *x.body) if isinstance(x, Agg) else ())
    names, aggs = ({x.name} if isinstance(x, Var) else set()), ([x] if isinstance(x, Agg) else [])
    for k in kids:
        n, a = _walk(k, skip)
        names |= n
        aggs += a
    return names, aggs


def _mark_outer(head: Atom, body: list) -> None:
    """Each aggregate's ``outer``: its variables that the rest of the rule also names
    (given to its nested query); the others are its own."""
    root = Atom("", [head, *body])
    aggs = _walk(root)[1]
    outside = _walk(root, tuple(aggs))[0]  # a name only inside aggregates is each one's own
    for agg in aggs:
        agg.outer = _walk(agg)[0] & outside
    grounded = _walk(Atom("", [a for a in body if isinstance(a, Atom) and not a.negated]), tuple(aggs))[0]
    for c in body:  # in Y = min Z+Y : {..}, the aggregate binds the outer Y: the inner one is its own
        if isinstance(c, Cmp) and c.op == "=":
            for v, e in ((c.left, c.right), (c.right, c.left)):
                if isinstance(v, Var) and isinstance(e, Agg) and v.name not in grounded:
                    e.outer.discard(v.name)


def rule_edn(head: Atom, body: list) -> str:
    fresh = _Fresh()
    head, body = _constants_in(head, body)
    _mark_outer(head, body)
    clauses, bound = _conj(body, set(), fresh)
    hv = []
    for i, x in enumerate(head.args):
        if _vars(x) - bound:
            raise Unsupported("a head variable the body does not bind")
        t = _expr(x, clauses, fresh)
        if isinstance(x, Var) and t not in hv:
            hv.append(t)  # a variable once in the head is the rule's parameter
            continue
        hv.append(f"?h{i}")
        clauses.append(f"[({'ground' if isinstance(x, Const) else 'identity'} {t}) ?h{i}]")
    return f"[(r_{head.rel} {' '.join(hv)}) {' '.join(clauses)}]"


def _conj(body: list, given: set, fresh: _Fresh) -> tuple[list, set]:
    """A conjunction's clauses and the variables bound after them (``given`` bound before)."""
    atoms = [lit for lit in body if isinstance(lit, Atom) and not lit.negated]
    bound = set(given)
    clauses, late = [], []
    for a in atoms:
        if any(isinstance(x, (Op, Agg)) for x in a.args):
            late.append(a)  # an expression argument: computed once its inputs are bound
            bound |= {x.name for x in a.args if isinstance(x, Var)}  # (the query orders clauses
            continue                                                # by what they need bound)
        bound |= set().union(*map(_vars, a.args))
        clauses.append(f"(r_{a.rel} {' '.join(_term(x) for x in a.args)})")
    pending = [lit for lit in body if isinstance(lit, Cmp)]
    progress = True
    while progress:  # equalities that bind a variable, once the other side's inputs are bound
        progress = False
        for c in list(pending):
            if c.op != "=":
                continue
            for var, e in ((c.left, c.right), (c.right, c.left)):
                if isinstance(var, Var) and var.name not in bound and _vars(e) <= bound:
                    if isinstance(e, (Op, Agg)):
                        t = _expr(e, clauses, fresh, bound)
                        clauses.append(f"[(identity {t}) {_term(var)}]")
                    else:
                        clauses.append(f"[({'ground' if isinstance(e, Const) else 'identity'} {_term(e)}) {_term(var)}]")
                    bound.add(var.name)
                    pending.remove(c)
                    progress = True
                    break
    for a in late:
        if set().union(*(_vars(x) for x in a.args if not isinstance(x, Var))) - bound:
            raise Unsupported("an expression argument over unbound variables")
        clauses.append(f"(r_{a.rel} {' '.join(_expr(x, clauses, fresh, bound) for x in a.args)})")
    for c in pending:
        if (_vars(c.left) | _vars(c.right)) - bound:
            raise Unsupported("a constraint over unbound variables")
        left, right = _expr(c.left, clauses, fresh, bound), _expr(c.right, clauses, fresh, bound)
        clauses.append(f"[({RELOPS[c.op]} {left} {right})]")
    for a in body:
        if isinstance(a, Atom) and a.negated:
            if any(isinstance(x, (Op, Agg)) for x in a.args):
                raise Unsupported("an expression inside a negation")
            outer = sorted({_term(x) for x in a.args if isinstance(x, Var) and x.name in bound})
            clauses.append(f"(not-join [{' '.join(outer)}] (r_{a.rel} {' '.join(_term(x) for x in a.args)}))")
    return clauses, bound


def _aggregate(e: Agg, clauses: list, fresh: _Fresh) -> str:
    """A nested ``q`` computing the aggregate for the outer variables' values."""
    inner, _ = _conj(e.body, set(e.outer), fresh)
    body = Atom("", e.body)
    own = sorted(_walk(body, tuple(_walk(body)[1]))[0] - e.outer)  # (not a nested aggregate's)
    if e.target is None:  # count: of the body's distinct tuples
        if not own:
            inner.append("[(ground 1) ?_one]")
            own = ["_one"]
        target, own = (f"?v_{own[0]}" if own[0] != "_one" else "?_one"), own[1:]
    elif isinstance(e.target, Const):  # sum 1 : {..}: an aggregate takes a variable
        target = fresh()
        inner.append(f"[(ground {_term(e.target)}) {target}]")
    else:
        target = _expr(e.target, inner, fresh, None)
        own = [v for v in own if f"?v_{v}" != target]
    fn = {"count": "count", "sum": "sum", "min": "min", "max": "max"}[e.kind]
    ins = " ".join(f"?v_{v}" for v in sorted(e.outer))
    with_ = f" :with {' '.join(f'?v_{v}' for v in own)}" if own else ""
    out = fresh("agg")
    call = f"[(q [:find ({fn} {target}) .{with_} :in $ % {ins} :where {' '.join(inner)}] $ % {ins}) {out}]"
    if e.kind in ("count", "sum"):  # nil over no tuples in q; 0 in Soufflé
        call = (f"(or-join [{ins} {out}] {call} (and (not-join [{ins}] {' '.join(inner)}) "
                f"[(ground 0) {out}]))")
    clauses.append(call)
    return out
