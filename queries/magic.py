"""Demand (magic-set) rewriting: bound arguments of a rule call restrict the rule's work.

Bottom-up evaluation computes every fact of a rule, even when the query asks about one
person: ``[?a :name "p1"] (reach ?a ?b)`` would build the whole transitive closure and
then keep one row of it. The magic-set rewrite (Bancilhon, Maier, Sagiv, Ullman, "Magic
sets and other strange ways to implement logic programs", 1986) adds rules that compute
the *demand*, the argument values a call can be asked about, and guards each rule with
it. For the call above, with its first argument bound (adornment ``bf``)::

    (reach__bf__magic ?a)  :- [?a :name "p1"]                          ; the seed
    (reach__bf__magic ?x)  :- (reach__bf__magic ?a) [?a :follows ?x]   ; demand spreads
    (reach__bf ?a ?b)      :- (reach__bf__magic ?a) [?a :follows ?b]
    (reach__bf ?a ?b)      :- (reach__bf__magic ?a) [?a :follows ?x] (reach__bf ?x ?b)

and the query calls ``(reach__bf ?a ?b)``. Every ``reach__bf`` fact is a ``reach`` fact
whose first argument is demanded, and every demanded ``reach`` fact is derived, so the
answers are the same; the rewrite is just more rules, so the circuit keeps them exact
under retractions like any other rules.

For right-linear recursion like this one, whose free arguments pass through unchanged,
plain magic sets would still build ``reach`` for every node reachable from p1 (each one
is demanded in turn). Such rules are *factored* instead (``_Rewriter.factor``): the
demand becomes ``reach__bf__from(s, ?x)``, the nodes reachable from each demanded ``s``,
and ``(reach__bf s ?b)`` is an exit rule applied to them, so the work is the rows
reachable from the seed only.

Sideways information passing is by data patterns: in a query or a rule body, an argument
of a call counts as bound when it is connected to a bound variable (a head's bound
parameter, a constant named by ``[(ground c) ?k]``, an ``:in`` variable at the query's
top level) or to a *selective* pattern (one with a constant entity or value, or an ``:in``
variable: a scalar, or each value of a collection or relation, which the seed then reads
as the query does) through a chain of patterns that share variables. Those patterns (and
the plain predicates over their variables) form the magic rule's body. Patterns that connect
to nothing bound would only enumerate their whole attribute, so they do not count; a call
without any bound argument keeps the original rule, which stays in the program. Calls
inside ``not``, ``or`` and friends keep the original rules too.

Relies on ``queries.ast``; used by ``queries.circuits`` before it compiles rules.

>>> from queries.parse import parse_query, parse_rules
>>> q = parse_query('[:find ?b :in $ % :where [?a :name "p1"] (reach ?a ?b)]')
>>> rs = parse_rules('[[(reach ?a ?b) [?a :follows ?b]] '
...                  '[(reach ?a ?b) [?a :follows ?x] (reach ?x ?b)]]')
>>> q2, rs2, seeds = demand(q, rs)
>>> q2.where[1].edn()
'(reach__bf ?a ?b)'
>>> sorted({r.name for r in rs2})
['reach', 'reach__bf', 'reach__bf__from', 'reach__bf__magic']
>>> [r.name for r in seeds]
['reach__bf__magic']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from queries.ast import (
    DEFAULT_SRC,
    Const,
    FnCall,
    Pattern,
    Predicate,
    Query,
    Rule,
    RuleCall,
    Var,
    bound_vars,
    free_vars,
)
from queries.functions import FUNCTIONS
from queries.scope import _calls

__all__ = ["demand", "canonical", "renamed"]

Adornment = tuple[bool, ...]


def _names(node: Any) -> set[str]:
    return {v.name for v in free_vars(node)}


def _selective(p: Pattern, known: set[str]) -> bool:
    """A pattern that pins down its entity or value: a constant there, or a known input."""
    for i, t in enumerate(p.terms):
        if i == 1:  # the attribute: every pattern has one
            continue
        if isinstance(t, Const) or (isinstance(t, Var) and t.name in known):
            return True
    return False


def _binding_patterns(clauses: Iterable[Any], bound: set[str], known: set[str]) -> tuple[set[str], list]:
    """The variables bound through patterns connected to ``bound`` or to a selective
    pattern, and those patterns (plus the plain predicates over their variables)."""
    patterns = [c for c in clauses if isinstance(c, Pattern) and c.src == DEFAULT_SRC]
    # [(ground 6) ?k], a constant given a name (queries.rewrite does so for a call's ints)
    grounds = [c for c in clauses if isinstance(c, FnCall) and c.fn == "ground"
               and all(isinstance(a, Const) for a in c.args)]
    reached = set(bound) | {v.name for g in grounds for v in bound_vars(g)}
    used: list[Any] = list(grounds)
    changed = True
    while changed:
        changed = False
        for p in patterns:
            if p in used:
                continue
            vs = _names(p)
            if vs & reached or _selective(p, known):
                used.append(p)
                reached |= vs
                changed = True
    preds = [c for c in clauses if isinstance(c, Predicate) and c.fn in FUNCTIONS
             and c not in used and _names(c) <= reached]
    return reached, used + preds


def _adornment(call: RuleCall, bound: set[str]) -> Adornment | None:
    """Which arguments are bound; None when none is (or a bound variable repeats)."""
    ad = tuple(isinstance(a, Var) and a.name in bound for a in call.args)
    if not any(ad):
        return None
    names = [a.name for a, b in zip(call.args, ad) if b]
    if len(set(names)) != len(names):
        return None
    return ad


def _tag(ad: Adornment) -> str:
    return "".join("b" if b else "f" for b in ad)


def _bound_args(call_args: tuple, ad: Adornment) -> tuple:
    return tuple(a for a, b in zip(call_args, ad) if b)


class _Rewriter:
    def __init__(self, rules: list[Rule], known: set[str]):
        self.by_name: dict[str, list[Rule]] = {}
        for r in rules:
            self.by_name.setdefault(r.name, []).append(r)
        self.known = known
        self.out: list[Rule] = []
        self.done: set[tuple[str, Adornment]] = set()
        self.todo: list[tuple[str, Adornment]] = []

    def adorned(self, name: str, ad: Adornment) -> str:
        if (name, ad) not in self.done:
            self.done.add((name, ad))
            self.todo.append((name, ad))
        return f"{name}__{_tag(ad)}"

    def magic(self, name: str, ad: Adornment) -> str:
        return f"{name}__{_tag(ad)}__magic"

    def demand(self, call: RuleCall, ad: Adornment, guard: list[Any]) -> RuleCall:
        """Emit ``magic(bound args) :- guard`` and return the adorned call."""
        args = _bound_args(call.args, ad)
        self.out.append(Rule(self.magic(call.name, ad), (), args, tuple(guard)))
        return RuleCall(self.adorned(call.name, ad), call.args)

    def calls(self, clauses: tuple, bound: set[str], head_guard: list[Any]) -> tuple:
        """Rewrite the top-level calls of ``clauses`` whose arguments are bound."""
        reached, patterns = _binding_patterns(clauses, bound, self.known)
        out = []
        for c in clauses:
            if isinstance(c, RuleCall) and c.name in self.by_name and c.src == DEFAULT_SRC:
                ad = _adornment(c, reached)
                if ad is not None:
                    # the caller's demand joins in only through shared variables: a
                    # guard that shares none would make a cross product (still exact)
                    touches = any(_names(p) & bound for p in patterns)
                    direct = {a.name for a in _bound_args(c.args, ad)} & bound
                    guard = head_guard if touches or direct else []
                    c = self.demand(c, ad, guard + patterns)
            out.append(c)
        return tuple(out)

    def run(self) -> None:
        while self.todo:
            name, ad = self.todo.pop()
            if self.factor(name, ad):
                continue
            for r in self.by_name[name]:
                params = r.params
                bound = {p.name for p, b in zip(params, ad) if b}
                guard = RuleCall(self.magic(name, ad), _bound_args(params, ad))
                body = self.calls(r.body, bound, [guard])
                self.out.append(Rule(f"{name}__{_tag(ad)}", (), params, (guard,) + body))


    # ---------------------------------------------------------------- factoring
    def _reaches(self, start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            n = todo.pop()
            if n == goal:
                return True
            if n in seen or n not in self.by_name:
                continue
            seen.add(n)
            todo.extend(c.name for r in self.by_name[n] for c in _calls(r.body))
        return False

    def _linear_call(self, r: Rule, name: str, ad: Adornment) -> RuleCall | None | bool:
        """The recursive call of a right-linear rule (None for an exit rule, False when
        ``r`` is neither)."""
        own = [c for c in r.body if isinstance(c, RuleCall) and c.name == name]
        nested = [c for c in _calls(r.body) if c.name == name]
        if len(nested) != len(own) or len(own) > 1:
            return False
        if any(c.name != name and self._reaches(c.name, name) for c in _calls(r.body)):
            return False  # mutual recursion
        if not own:
            return None
        call = own[0]
        if call.src != DEFAULT_SRC or not all(isinstance(a, Var) for a in call.args):
            return False
        params = r.params
        free = {p.name for p, b in zip(params, ad) if not b}
        if any(not b and a != p for a, p, b in zip(call.args, params, ad)):
            return False  # a free argument changes on the way down
        rest = [c for c in r.body if c is not call]
        if free & set().union(*(_names(c) for c in rest)) or \
                free & {a.name for a, b in zip(call.args, ad) if b}:
            return False  # the step would depend on a free argument
        have = {p.name for p, b in zip(params, ad) if b} | {v.name for v in bound_vars(rest)}
        if not {a.name for a, b in zip(call.args, ad) if b} <= have:
            return False
        return call

    def factor(self, name: str, ad: Adornment) -> bool:
        """Right-linear recursion whose free arguments pass through unchanged (Naughton,
        Ramakrishnan, Sagiv, Ullman, "Argument reduction by factoring", 1995)::

            (p ?x ?y) :- exit(?x, ?y)            (p ?x ?y) :- step(?x, ?z) (p ?z ?y)

        answers ``(p s ?y)`` as ``from(s, ?z), exit(?z, ?y)`` where ``from`` is the
        closure of ``step`` from each demanded ``s``: it never builds ``p`` for the
        intermediate ``?z`` (plain magic sets would, for every reachable ``?z``).
        """
        rules = self.by_name[name]
        calls = [self._linear_call(r, name, ad) for r in rules]
        if any(c is False for c in calls) or all(c is None for c in calls):
            return False
        n_b = sum(ad)
        seeds = tuple(Var(f"?__s{i}") for i in range(n_b))
        magic, frm = self.magic(name, ad), f"{name}__{_tag(ad)}__from"
        if len(rules) == 2 and sum(c is None for c in calls) == 1:
            (step, call), = ((r, c) for r, c in zip(rules, calls) if c is not None)
            exit_rule, = (r for r, c in zip(rules, calls) if c is None)
            if _exit_is_step(exit_rule, step, call, ad):
                self._closure(name, ad, step, call, seeds, magic, frm)
                return True
        self.out.append(Rule(frm, (), seeds + seeds, (RuleCall(magic, seeds),)))
        for r, call in zip(rules, calls):
            xb = _bound_args(r.params, ad)
            guard = RuleCall(frm, seeds + xb)
            rest = tuple(c for c in r.body if c is not call)
            body = self.calls(rest, {v.name for v in xb}, [guard])
            if call is None:
                it = iter(seeds)
                head = tuple(next(it) if b else p for p, b in zip(r.params, ad))
                self.out.append(Rule(f"{name}__{_tag(ad)}", (), head, (guard,) + body))
            else:
                self.out.append(Rule(frm, (), seeds + _bound_args(call.args, ad), (guard,) + body))
        return True


    def _closure(self, name: str, ad: Adornment, step: Rule, call: RuleCall, seeds: tuple, magic: str,
                 frm: str) -> None:
        """Factoring when the exit rule is the step itself (a transitive closure,
        ``(p ?x ?y) :- step(?x, ?y)``, ``(p ?x ?y) :- step(?x, ?z) (p ?z ?y)``): ``from``
        is the closure of ``step`` from each demanded ``s`` taken one step or more, which
        is ``(p s ?y)`` itself, so no exit join follows it::

            (from ?x ?z) :- (magic ?x) step(?x, ?z)
            (from s ?z)  :- (from s ?x) step(?x, ?z)
            (p s ?y)     :- (from s ?y)
        """
        xb, zb = _bound_args(step.params, ad), _bound_args(call.args, ad)
        rest = tuple(c for c in step.body if c is not call)
        bound = {v.name for v in xb}
        first = RuleCall(magic, xb)
        self.out.append(Rule(frm, (), xb + zb, (first,) + self.calls(rest, bound, [first])))
        guard = RuleCall(frm, seeds + xb)
        self.out.append(Rule(frm, (), seeds + zb, (guard,) + self.calls(rest, bound, [guard])))
        ys = tuple(Var(f"?__y{i}") for i in range(len(zb)))
        it_s, it_y = iter(seeds), iter(ys)
        head = tuple(next(it_s) if b else next(it_y) for b in ad)
        self.out.append(Rule(f"{name}__{_tag(ad)}", (), head, (RuleCall(frm, seeds + ys),)))


def renamed(node: Any, names: dict[str, str]) -> Any:
    """``node`` (a clause, or a tuple of them) with the variables of ``names`` renamed."""
    if isinstance(node, Var):
        return Var(names[node.name]) if node.name in names else node
    if isinstance(node, (tuple, list)):
        return type(node)(renamed(x, names) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.replace(node, **{f.name: renamed(getattr(node, f.name), names)
                                            for f in dataclasses.fields(node) if f.init})
    return node


def var_order(node: Any, out: dict[str, None]) -> dict[str, None]:
    """The variables of ``node`` in the order they first occur."""
    if isinstance(node, Var):
        out.setdefault(node.name)
    elif isinstance(node, (tuple, list)):
        for x in node:
            var_order(x, out)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            var_order(getattr(node, f.name), out)
    return out


def canonical(clauses: tuple, fixed: dict[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """``(text, names)``: ``clauses`` as text with the variables of ``fixed`` renamed as
    it says and the others numbered in order of first occurrence (equal texts, equal
    clauses up to variable names), and the renaming used."""
    names = dict(fixed)
    for v in var_order(clauses, {}):
        names.setdefault(v, f"?__l{len(names)}")
    return tuple(c.edn() for c in renamed(clauses, names)), names


def _exit_is_step(exit_rule: Rule, step: Rule, call: RuleCall, ad: Adornment) -> bool:
    """Whether the exit rule's body, its free parameters read as the step's next bound
    values, is the step rule's body without its recursive call (``_Rewriter._closure``)."""
    xs, zs = _bound_args(step.params, ad), _bound_args(call.args, ad)
    ex = _bound_args(exit_rule.params, ad)
    ey = tuple(p for p, b in zip(exit_rule.params, ad) if not b)
    names = [v.name for v in xs + zs]
    if len(ey) != len(zs) or len(set(names)) != len(names) or len({v.name for v in ex + ey}) != len(ex + ey):
        return False
    rest = tuple(c for c in step.body if c is not call)
    tag = {**{x.name: f"?__x{i}" for i, x in enumerate(xs)}, **{z.name: f"?__z{i}" for i, z in enumerate(zs)}}
    tag_exit = {**{x.name: f"?__x{i}" for i, x in enumerate(ex)}, **{y.name: f"?__z{i}" for i, y in enumerate(ey)}}
    return canonical(rest, tag)[0] == canonical(exit_rule.body, tag_exit)[0]


def demand(query: Query, rules: list[Rule],
           known: Iterable[str] = ()) -> tuple[Query, list[Rule], list[Rule]]:
    """``(query, rules, seeds)``: the query and rules with demand propagated into the
    calls whose arguments are bound (``known`` names the ``:in`` variables, which make a
    pattern selective), and the seeds of the demand, the rules whose bodies are the
    query's own clauses (``(reach__bf__magic ?a) :- [?a :name ?name]``). The seeds'
    variables are the query's, ``:in`` scalars included, so they compile in the query's
    scope, where every other rule body is a scope of its own. Returns the inputs
    unchanged (and no seed) when no call has a bound argument."""
    if not rules:
        return query, rules, []
    if any(len({p.name for p in r.params}) != len(r.params) for r in rules):
        return query, rules, []
    rw = _Rewriter(list(rules), set(known))
    where = rw.calls(tuple(query.where), set(known), [])  # an input passed to a call binds it
    if where == tuple(query.where):
        return query, rules, []
    seeds = list(rw.out)
    rw.run()
    if {r.name for r in rw.out} & set(rw.by_name):  # the user named a rule like ours
        return query, rules, []
    return dataclasses.replace(query, where=where), list(rules) + rw.out, seeds
