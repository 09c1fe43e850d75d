"""Nested ``q``: ``[(q query arg ...) binding]`` runs a query per row and binds its answer.

As in Datomic, the first argument is the query (a form in the text, quoted or not, or a
variable holding query text or data) and the rest are its inputs: ``$`` is the database
the outer query reads (the same version of it), ``$2`` a collection source of the outer
query, ``%`` its rules, anything else a value. The answer is what ``q`` returns (a set of
tuples, a list, a tuple or a scalar), bound like any function's value::

    [:find ?name ?n
     :where [?p :name ?name]
            [(q [:find (count ?f) . :in $ ?p :where [?p :follows ?f]] $ ?p) ?n]]

The nested query is a circuit of its own, compiled once per distinct inputs (kept while
that compilation interned nothing, as ``Database.q`` keeps its cache) and run as ``q`` runs
it: its first tick. One tick of the outer circuit answers each distinct inputs once. A
nested answer depends on the whole database, so a view holding a nested ``q`` re-runs its
first tick for every transaction that changes anything (``CompiledView.volatile``).

Relies on ``queries.bind``, ``queries.parse`` and ``queries.results``; used by
``queries.circuits``.

>>> from queries.database import Database
>>> db = Database()
>>> _ = db.transact('[{:db/ident :age :db/valueType :db.type/long}]')
>>> _ = db.transact('[{:age 30} {:age 50}]')
>>> db.q("[:find ?e :where [(q '[:find (max ?a) . :where [_ :age ?a]] $) ?m] [?e :age ?m]]")
{(2,)}
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from queries.ast import Const, FnCall, Query, RulesVar, SrcVar, Var
from queries.clauses import arg_getter
from queries.bind import Binder, Inputs, bind_inputs
from queries.results import answer
from wcoj.errors import QueryError

__all__ = ["Subquery"]

_COMPILED = 64  # nested circuits kept per call site (distinct inputs)
MAX_DEPTH = 16  # nested q inside nested q ...: query text must not recurse without end
_depth = threading.local()


class Subquery:
    """The value of one nested ``q`` call for the decoded values of an outer row.

    ``outer`` is the ``CompiledView`` the call sits in: its store, registry, collection
    sources, rules and the version (``over``) its current tick reads.
    """

    def __init__(self, outer: Any, call: FnCall, vars_: tuple):
        if not call.args:
            raise QueryError(f"q needs a query: {call}")
        self.outer, self.call = outer, call
        self._args = [self._getter(a, vars_) for a in call.args]
        self._compiled: OrderedDict = OrderedDict()
        self._answers: dict = {}  # inputs -> answer, for one tick (``clear``)

    def _getter(self, a: Any, vars_: tuple) -> Callable[[list], Any]:
        if isinstance(a, (Var, Const)):
            return arg_getter(a, vars_)
        if isinstance(a, RulesVar):
            rules = self.outer.given_rules
            return lambda vals: rules
        if isinstance(a, SrcVar):
            if a.name == "$":
                return lambda vals: None  # the database: Inputs reads None as the store itself
            if a.name not in self.outer.ev.sources:
                raise QueryError(f"{self.call} passes the source {a.name}, which the query "
                                 f"was not given")
            rows = self.outer.ev.sources[a.name]
            return lambda vals: rows
        raise QueryError(f"a q argument must be a variable, a constant, a source or %: {a}")

    def clear(self) -> None:
        """Forget the answers of the last tick (the data may have changed since)."""
        self._answers.clear()

    def __call__(self, vals: list) -> Any:
        args = [g(vals) for g in self._args]
        query, inputs = args[0], tuple(args[1:])
        try:
            key = (query, inputs)
            hash(key)
        except TypeError:  # a list or map input: answer it without memo
            key = None
        if key is not None and key in self._answers:
            return self._answers[key]
        depth = getattr(_depth, "n", 0)
        if depth >= MAX_DEPTH:
            raise QueryError(f"q nested more than {MAX_DEPTH} deep (a query that runs itself?) "
                             f"at {self.call}")
        _depth.n = depth + 1
        try:
            out = answer(self._circuit(query, inputs, key), inputs, self.outer.over)
        finally:
            _depth.n = depth
        if key is not None:
            self._answers[key] = out
        return out

    def _circuit(self, query: Any, inputs: tuple, key: Any) -> Any:
        store = self.outer.store
        ck = None if key is None else (key, len(store.attributes))
        hit = self._compiled.get(ck) if ck is not None else None
        if hit is not None:
            self._compiled.move_to_end(ck)
            return hit
        if not isinstance(query, Query):
            from queries.parse import parse_query
            if not isinstance(query, (str, list, dict)):
                raise QueryError(f"q needs a query (text or a vector), got {query!r} in {self.call}")
            query = parse_query(query, registry=self.outer.ev.registry)
        marks = store.interner.marks()
        given = Inputs(query, inputs, implicit_db=False)
        ev = Binder(store, "prev", query, given.rules, given.sources, self.outer.ev.registry)
        compiled = type(self.outer)(ev, query, bind_inputs(ev, given), given.rules)
        if ck is not None and store.interner.marks() == marks:
            self._compiled[ck] = compiled
            if len(self._compiled) > _COMPILED:
                self._compiled.popitem(last=False)
        return compiled
