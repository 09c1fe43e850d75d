"""The transaction log in queries: Datomic's ``tx-ids`` and ``tx-data``.

Pass the database's log as an input (``db.q(query, db.log, t1, t2)``, Datomic's
``(d/log conn)``), then::

    [:find ?e ?a ?v ?op
     :in ?log ?t1 ?t2
     :where [(tx-ids ?log ?t1 ?t2) [?tx ...]]
            [(tx-data ?log ?tx) [[?e ?a ?v _ ?op]]]]

``(tx-ids log start end)`` gives the transaction entity ids of the transactions from
``start`` (included) to ``end`` (excluded); each is a ``t``, a transaction id, a
``datetime`` or nil (open). ``(tx-data log tx)`` gives that transaction's datoms as
``[e a v tx added]``, ``a`` the attribute's keyword (attributes are not entities here,
unlike Datomic, whose ``a`` is the attribute's entity id) and ``added`` a boolean.

``Inputs`` keeps a log given for a variable beside the collection sources (under the
variable's name) and binds the variable itself to a placeholder; a function reads the
log by that name. These are for ``q``: a transaction joins the log only after its views
are updated, so ``Database.view`` of such a query is a ``QueryError``.

Relies on ``queries.history`` (``resolve_t``) and ``indexes.eav``; used by
``queries.bind`` and ``queries.circuits``.

>>> from queries.database import Database
>>> db = Database()
>>> r = db.transact('[{:db/ident :n :db/valueType :db.type/long}]')
>>> r = db.transact('[{:n 7}]')
>>> db.q('[:find ?a ?v ?op :in ?log ?t :where [(tx-ids ?log ?t nil) [?tx ...]] '
...      '[(tx-data ?log ?tx) [[_ ?a ?v _ ?op]]] [(!= ?a :db/txInstant)]]', db.log, r.tx)
{(Keyword(':n'), 7, True)}
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from indexes.eav import TX_BASE, tx_id
from queries.ast import FnCall, Var
from queries.clauses import arg_getter
from queries.history import resolve_t
from wcoj.errors import QueryError

__all__ = ["LOG_FUNCTIONS", "is_log", "placeholder", "log_value"]

LOG_FUNCTIONS = ("tx-ids", "tx-data")


def is_log(value: Any) -> bool:
    """A transaction log given as an input (``Database.log``: in memory or durable)."""
    return callable(getattr(value, "transactions", None)) and callable(getattr(value, "rows", None))


def placeholder(var: str) -> str:
    """What a log's variable is bound to in the query's rows (the log itself is not a value)."""
    return f"#log {var}"


def _after(bound: Any, t: int, when: datetime) -> bool:
    """Whether transaction ``t`` (at ``when``) is at or after ``bound``: a ``datetime``
    (compared with its instant), a ``t`` or transaction id, or nil (every one is)."""
    if bound is None:
        return True
    if isinstance(bound, datetime):
        return when >= (bound if bound.tzinfo else bound.replace(tzinfo=timezone.utc))
    return t >= resolve_t(None, bound)


def log_value(call: FnCall, sources: dict, vars_: tuple, store: Any) -> Callable[[list], Any]:
    """The value of ``(tx-ids log start end)`` or ``(tx-data log tx)`` for the decoded
    values ``vals`` of a row whose variables are ``vars_``."""
    args = call.args
    want = 3 if call.fn == "tx-ids" else 2
    if len(args) != want:
        raise QueryError(f"{call.fn} takes {want} arguments (a log first): {call}")
    if not isinstance(args[0], Var) or args[0].name not in sources:
        raise QueryError(f"{call.fn} needs a log given as an input (db.log) first: {call}")
    log = sources[args[0].name]
    getters = [arg_getter(a, vars_) for a in args[1:]]

    if call.fn == "tx-ids":
        def tx_ids(vals: list) -> list:
            lo, hi = (g(vals) for g in getters)
            return [tx_id(t) for t, when, _ in log.transactions()
                    if _after(lo, t, when) and (hi is None or not _after(hi, t, when))]
        return tx_ids

    decode, keyword = store.interner.decode_one, store.keyword
    idents: dict[int, Any] = {}

    def tx_data(vals: list) -> list:
        tx = getters[0](vals)
        if type(tx) is not int or tx < TX_BASE:
            raise QueryError(f"tx-data needs a transaction id, got {tx!r} in {call}")
        t = tx - TX_BASE
        out = []
        for e, a, v, x, added in log.rows(t - 1, t).tolist():
            if a not in idents:
                idents[a] = keyword(str(decode(a)))
            out.append((decode(e),  # an entity's id, an attribute's ident
                        idents[a], decode(v), x, bool(added)))
        return out
    return tx_data
