"""Generic Join, breadth first over whole frontiers, and its incremental form.

``generic_join`` evaluates a conjunctive query ``A1 ⋈ ... ⋈ An`` one variable per level
(Ngo, Porat, Ré, Rudra; "Generic Join", Alg. 2): every prefix of a level's frontier is
extended by intersecting the candidates of every atom containing the variable, the
smallest proposing, the others searched (galloping, or one access in a dense level 0).
Intermediate levels carry no weight; an atom's weight multiplies in at its last
variable. Over tries (extenders whose ``tries()`` are not ``None``) the levels run inside
the join program (``kernels.program``; a count fuses its last two levels,
``kernels.count``); the frontier is handed back to Python only at levels with a filter
the kernels cannot run (a Python predicate), and when a level's frontier would exceed
``SLICE_ROWS`` rows the join goes on over halves of the frontier before it, so memory
stays bounded while the work does not change. Other extenders are joined through the
protocol's batched methods (numpy between levels).

``IncrementalGenericJoin`` maintains the query under changes with the telescoping delta
rule (DESIGN.md, "The incremental join, exactly")::

    ΔQ = Σ_i  A1' ⋈ ... ⋈ A(i-1)' ⋈ ΔAi ⋈ A(i+1) ⋈ ... ⋈ An

where ``X'`` is the ``curr`` view and ``X`` the ``prev`` view. Each term's variable order
starts with its delta atom's variables, so its work is bounded by the delta. All terms
of a tick run in one kernel call (``kernels.program.run_terms``), split into shares on
threads when the delta is large; ``change_program`` describes the same terms for the
change-by-change route of small ticks (``kernels.tick``).

Relies on ``wcoj.plan`` (atoms, levels), ``wcoj.extenders`` (the protocol), ``wcoj.tables``
and the kernels. Used by ``wcoj.multiway`` (the circuit operator) and by the graph and
Datalog front ends.

>>> from indexes.trie import Trie, TrieView          # doctest only: wcoj never imports indexes
>>> E = TrieView([Trie.from_zset(ZSet.from_rows([(1, 2), (1, 3), (2, 3)])).part])
>>> tri = [Atom(E, ("a", "b")), Atom(E, ("a", "c")), Atom(E, ("b", "c"))]
>>> generic_join(tri, ["a", "b", "c"]).to_dict()
{(1, 2, 3): 1}
>>> generic_join(tri, ["a", "b", "c"], count_only=True)
1
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from wcoj import config
from wcoj.errors import ArityMismatchError, PerformanceWarning, QueryError, UnboundVariableError
from wcoj.extenders import IncrementalSource
from wcoj.plan import Atom, _apply_filters, _is_var, _Level, _plan, choose_order
from wcoj.program import TermsProgram, _checked_mul, _checked_total, _TrieRun  # noqa: F401  (tests patch _TrieRun here)
from wcoj.tables import Stack
from wcoj.zset import ZSet, consolidate

__all__ = ["Atom", "generic_join", "IncrementalGenericJoin", "choose_order", "term_kinds"]

I64 = npt.NDArray[np.int64]


# ------------------------------------------------------------------------- evaluation
def _warn_protocol_route(atoms: Sequence[Atom], tries: list) -> None:
    """A ``PerformanceWarning`` that the join runs through the batched protocol methods,
    naming the first atom whose extender has no tries (shown once per extender type)."""
    i = next(i for i, t in enumerate(tries) if t is None)
    kind = type(atoms[i].extender).__qualname__
    warnings.warn(f"join: atom {i} ({kind}) has no tries(), so the whole join runs through the batched "
                  "PrefixExtender methods with numpy between levels, much slower than the compiled join "
                  "program; store its rows in an index (indexes.Index, wcoj.Relation) or return tries "
                  "from tries(); pass fused=False to choose this route without the warning",
                  PerformanceWarning, stacklevel=3)


def _generic_blocks(atoms: Sequence[Atom], plan: list[_Level], count_only: bool):
    """Evaluation through the batched protocol methods only (any extender)."""
    bound = np.zeros((1, 0), dtype=np.int64)
    w = np.ones(1, dtype=np.int64)
    for level, lv in enumerate(plan):
        n = bound.shape[0]
        if n == 0:
            bound = np.zeros((0, len(plan)), dtype=np.int64)  # the result has every column
            break
        prefixes = []
        for k, i in enumerate(lv.atoms):
            a = atoms[i]
            cols = [np.full(n, c, dtype=np.int64) for c in a.constants]
            cols += [bound[:, plan_index] for plan_index, v in
                     ((j, plan[j].var) for j in range(level)) if v in a.variables]
            prefixes.append(np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=np.int64))
        counts = np.stack([atoms[i].extender.count(prefixes[k]) for k, i in enumerate(lv.atoms)], axis=1)
        proposer = counts.argmin(axis=1)
        rows, vals = [], []
        for k, i in enumerate(lv.atoms):
            sel = np.flatnonzero(proposer == k)
            if sel.size:
                r, v = atoms[i].extender.propose(prefixes[k][sel])
                rows.append(sel[r])
                vals.append(v)
        if not rows:
            bound = np.zeros((0, len(plan)), dtype=np.int64)
            w = np.zeros(0, dtype=np.int64)
            break
        r = np.concatenate(rows)
        v = np.concatenate(vals)
        order = np.lexsort((v, r))
        r, v = r[order], v[order]
        keep = np.ones(r.shape[0], dtype=bool)
        for k, i in enumerate(lv.atoms):
            keep &= atoms[i].extender.intersect(prefixes[k][r], v)
        r, v = r[keep], v[keep]
        bound = np.concatenate([bound[r], v.reshape(-1, 1)], axis=1)
        w = w[r]
        fkeep = _apply_filters(lv, bound)
        if fkeep is not None:
            bound, w = bound[fkeep], w[fkeep]
        for k, i in enumerate(lv.atoms):
            if lv.last[k]:
                a = atoms[i]
                full = [np.full(bound.shape[0], c, dtype=np.int64) for c in a.constants]
                full += [bound[:, j] for j in range(level + 1) if plan[j].var in a.variables]
                aw = a.extender.weight(np.stack(full, axis=1))
                w = _checked_mul(w, aw)
                nz = aw != 0
                bound, w = bound[nz], w[nz]
    if count_only:
        yield _checked_total(w)
    else:
        yield bound, w


def generic_join(atoms: Sequence[Atom], order: Sequence[str], output: Sequence[str] | None = None,
                 count_only: bool = False, fused: bool | None = None,
                 filters: Sequence[tuple[Sequence[str], object]] = (), plan: list | None = None) -> ZSet | int:
    """Evaluate ``A1 ⋈ ... ⋈ An`` with Generic Join in variable order ``order``.

    Parameters
    ----------
    atoms : the atoms; each atom's variables must appear in ``order`` in its column order.
    order : every variable, in binding order.
    output : the variables to return (default ``order``); weights of rows that agree on
        them add up (a multiset projection).
    count_only : return the sum of all output weights (an ``int``) without building rows.
    fused : force (True) or forbid (False) the join program's kernels; default: use them
        when every extender's ``tries()`` is not ``None``.
    filters : ``(variables, fn)`` pairs, where ``fn(*columns)`` returns a boolean mask
        over frontier rows and runs at the first level where all its variables are bound;
        or ``("<", x, y)`` triples, which also narrow the later variable's candidate ranges
        (tries are sorted), so they cost nothing and keep ``count_only`` fast.

    Raises
    ------
    QueryError, UnboundVariableError : a malformed order or atom.
    WeightOverflowError : a weight product or sum does not fit in int64.
    """
    order = list(order)
    if not atoms:
        raise QueryError("a join needs at least one atom")
    if plan is None:  # callers that run the same query every tick pass their cached plan
        plan = _plan(atoms, order, filters)
    tries = [a.extender.tries() for a in atoms] if fused is not False else None
    if fused is None:
        fused = all(t is not None for t in tries)
        if not fused:
            _warn_protocol_route(atoms, tries)
    out_cols = [order.index(v) for v in (output if output is not None else order)]
    if fused and len(atoms) == 1 and not filters and not count_only and not atoms[0].constants:
        return _atom_rows(tries[0], len(order), out_cols)
    if fused:
        run = _TrieRun(atoms, plan, tries)
        if run.empty:
            return 0 if count_only else ZSet.empty(len(out_cols))
        result = run.run(count_only)
        if count_only:
            return result
        blocks = list(result)
        if len(blocks) == 1 and out_cols == list(range(len(order))):
            # one breadth-first pass emits its rows sorted, unique and without zero
            # weights: already a consolidated Z-set
            b, w = blocks[0]
            return ZSet(np.ascontiguousarray(b), np.ascontiguousarray(w))
    else:
        blocks = _generic_blocks(atoms, plan, count_only)
        if count_only:
            return _checked_total(np.array(list(blocks), dtype=np.int64))
    keys, ws = [], []
    for b, w in blocks:
        keys.append(b[:, out_cols])
        ws.append(w)
    if not keys:
        return ZSet.empty(len(out_cols))
    return ZSet.from_arrays(np.concatenate(keys), np.concatenate(ws), arity=len(out_cols))


def _atom_rows(parts: list, width: int, out_cols: list[int]) -> ZSet:
    """A join of one atom of variables only: its rows, walked out of its tries (the
    variable order is the atom's column order), instead of a frontier of ranges per row."""
    rows = [p.rows_arrays() for p in parts]
    if len(rows) == 1 and out_cols == list(range(width)):
        return ZSet(*rows[0])  # one trie's rows: sorted, unique, no zero weights
    if not rows:
        return ZSet.empty(len(out_cols))
    return ZSet.from_arrays(np.concatenate([k[:, out_cols] for k, _ in rows]),
                            np.concatenate([w for _, w in rows]), arity=len(out_cols))


# ------------------------------------------------------------------------- incremental
def term_kinds(n: int, i: int) -> tuple[str, ...]:
    """The views term ``i`` of the delta rule reads for ``n`` atoms: ``curr`` before atom
    ``i``, its ``delta``, ``prev`` after it.

    >>> term_kinds(3, 1)
    ('curr', 'delta', 'prev')
    """
    return ("curr",) * i + ("delta",) + ("prev",) * (n - i - 1)


class IncrementalGenericJoin:
    """A conjunctive query over incremental sources, maintained with the telescoping delta rule.

    Parameters
    ----------
    atoms : ``(source, terms)`` pairs; ``terms`` name the source's columns in its natural
        order (variables as ``str``, constants as ``int``).
    output : the variables of the result.
    orders : optional variable order per term (term ``i`` must start with atom ``i``'s
        variables); default from ``choose_order``.
    filters : ``(variables, fn)`` predicates, as in ``generic_join``.
    """

    def __init__(self, atoms: Sequence[tuple[IncrementalSource, tuple]], output: Sequence[str],
                 orders: Sequence[Sequence[str]] | None = None, batch_order: Sequence[str] | None = None,
                 filters: Sequence[tuple[Sequence[str], object]] = ()):
        self.atoms = [(src, tuple(terms)) for src, terms in atoms]
        self.filters = list(filters)
        for src, terms in self.atoms:
            if len(terms) != src.arity:
                raise ArityMismatchError(f"atom {terms}", src.arity, len(terms))
        allv = {t for _, terms in self.atoms for t in terms if _is_var(t)}
        missing = [v for v in output if v not in allv]
        if missing:
            raise UnboundVariableError(list(output), missing, "no atom binds it")
        self.output = list(output)
        varlists = [[t for t in terms if _is_var(t)] for _, terms in self.atoms]
        self.orders = [list(o) for o in orders] if orders else [
            choose_order(varlists, start=varlists[i]) for i in range(len(self.atoms))]
        for i, o in enumerate(self.orders):
            if set(o[: len(varlists[i])]) != set(varlists[i]):
                raise QueryError(f"term {i}'s order {o} must start with its delta atom's variables {varlists[i]}")
        self.batch_order = list(batch_order) if batch_order else choose_order(varlists)
        self._specs: dict = {}
        self._programs: dict = {}  # TermsProgram per (live terms, parts per atom)
        self._layout = None  # see _fused_layout

    def __repr__(self) -> str:
        return f"IncrementalGenericJoin({[terms for _, terms in self.atoms]}, output={self.output})"

    def _spec(self, kinds: tuple[str, ...], order: tuple[str, ...]):
        """Per atom ``(source, kind, columns, terms in column order)`` and the join plan; cached."""
        key = (kinds, order)
        if key not in self._specs:
            pos = {v: i for i, v in enumerate(order)}
            spec = []
            for (src, terms), kind in zip(self.atoms, kinds):
                consts = [j for j in range(len(terms)) if not _is_var(terms[j])]
                vars_ = sorted((j for j in range(len(terms)) if _is_var(terms[j])), key=lambda j: pos[terms[j]])
                cols = tuple(consts + vars_)
                spec.append((src, kind, cols, tuple(terms[j] for j in cols)))
            probe = [Atom(_Shape(len(t)), t) for _, _, _, t in spec]   # validates once
            plan = _plan(probe, order, self.filters)
            plan.fusable = all(lv.in_kernel for lv in plan) and not any(a.constants for a in probe)
            self._specs[key] = (spec, plan)
        return self._specs[key]

    def prepare(self) -> None:
        """Build, now, every index and plan the delta terms will read (each term's column
        orders), so that the first tick does not pay for them."""
        n = len(self.atoms)
        for i in range(n):
            spec, _ = self._spec(term_kinds(n, i), tuple(self.orders[i]))
            for src, kind, cols, _ in spec:
                src.view(kind, cols)

    def atoms_for(self, kinds: Sequence[str], order: Sequence[str]) -> list[Atom]:
        """The join atoms of one term: atom ``i`` over view ``kinds[i]``, columns in ``order``."""
        spec, _ = self._spec(tuple(kinds), tuple(order))
        return [Atom(src.view(kind, cols), terms) for src, kind, cols, terms in spec]

    def _run(self, kinds: tuple[str, ...], order: tuple[str, ...], count_only: bool):
        _, plan = self._spec(kinds, order)
        atoms = self.atoms_for(kinds, order)
        return generic_join(atoms, order, self.output, count_only=count_only,
                            filters=self.filters, plan=plan)

    def batch(self, kind: str = "prev", count_only: bool = False) -> ZSet | int:
        """The whole result over one view of every source (``prev`` by default)."""
        return self._run((kind,) * len(self.atoms), tuple(self.batch_order), count_only)

    def _fused_layout(self):
        """Per term ``(the source of its delta atom, its spec)``, or ``None`` when some
        term's plan cannot run in ``run_terms`` (a Python filter, a constant). Cached."""
        if self._layout is None:
            n = len(self.atoms)
            terms = []
            for i in range(n):
                spec, plan = self._spec(term_kinds(n, i), tuple(self.orders[i]))
                if not plan.fusable:
                    self._layout = False
                    return None
                terms.append((self.atoms[i][0], spec))
            self._layout = terms
        return self._layout or None

    def _fused_delta(self) -> ZSet | None:
        """ΔQ's rows through one ``run_terms`` call (split into shares on threads when the
        delta is large), or ``None`` when some term cannot run there (see
        ``_fused_layout``; an extender without tries; a frontier past ``SLICE_ROWS``
        rows or an overflow, which the term-by-term path then streams or reports)."""
        terms = self._fused_layout()
        if terms is None:
            return None
        live, parts, n_parts = [], [], []
        rows = 0
        for i, (src, spec) in enumerate(terms):
            if src.delta_is_empty():
                continue
            views = [s.view(kind, cols) for s, kind, cols, _ in spec]
            tries = [v.tries() for v in views]
            if any(t is None for t in tries):
                return None
            if any(not t for t in tries):  # an atom without rows: the term is empty
                continue
            live.append(i)
            n_parts.append(tuple(len(t) for t in tries))
            parts.extend(p for t in tries for p in t)
            rows += sum(p.rows for p in tries[i])
        if not live:
            return ZSet.empty(len(self.output))
        prog = self._program(tuple(live), tuple(n_parts))
        stack = Stack(parts)
        use = config.DELTA_SHARE_ROWS <= rows and config.THREADS > 1
        status, keys, w = prog.run(stack.table, config.SLICE_ROWS,
                                   config.SHARES_PER_THREAD * config.THREADS if use else 1)
        del stack  # the tries were alive while the kernel read them
        if status < 0:
            return None
        return self.rows_change(keys, w)

    def _program(self, live: tuple[int, ...], n_parts: tuple[tuple[int, ...], ...]) -> TermsProgram:
        """The ``TermsProgram`` of the terms ``live`` whose atoms' views have ``n_parts``
        parts (cached: built once per shape)."""
        key = (live, n_parts)
        prog = self._programs.get(key)
        if prog is None:
            programs = []
            for i, counts in zip(live, n_parts):
                spec, plan = self._spec(term_kinds(len(self.atoms), i), tuple(self.orders[i]))
                programs.append((plan, self.orders[i], counts, [len(cols) for _, _, cols, _ in spec], i))
            prog = self._programs[key] = TermsProgram(programs, self.output)
        return prog

    def change_terms(self) -> list | None:
        """The delta rule as the change-by-change route runs it (``wcoj.tickgen``), or
        ``None`` when some term cannot (see ``_fused_layout``): per term ``(the source of
        its delta atom, its atoms as (source, view kind, column order), its plan, the
        delta atom's index, the level of each output variable)``."""
        terms = self._fused_layout()
        if terms is None:
            return None
        out = []
        for i, (src, spec) in enumerate(terms):
            _, plan = self._spec(term_kinds(len(self.atoms), i), tuple(self.orders[i]))
            atoms = [(s, kind, cols) for s, kind, cols, _ in spec]
            out.append((src, atoms, plan, i, [list(self.orders[i]).index(v) for v in self.output]))
        return out

    def rows_change(self, keys, w) -> ZSet:
        """ΔQ from the rows a program wrote (several terms may emit one row)."""
        return ZSet(*consolidate(keys, w)) if keys.shape[0] else ZSet.empty(len(self.output))

    def delta(self, count_only: bool = False) -> ZSet | int:
        """ΔQ for the staged tick: one generic join per atom whose delta is not empty.

        Rows are computed for all terms in one kernel call (``run_terms``) when every term
        can run there; otherwise (Python filters, constants, extenders without tries, a
        frontier too big to hold) term by term through ``generic_join``.
        """
        if not count_only:
            fused = self._fused_delta()
            if fused is not None:
                return fused
        n = len(self.atoms)
        results = []
        for i in range(n):
            if self.atoms[i][0].delta_is_empty():
                continue
            results.append(self._run(term_kinds(n, i), tuple(self.orders[i]), count_only))
        if count_only:
            return _checked_total(np.array(results, dtype=np.int64))
        out = ZSet.empty(len(self.output))
        for r in results:
            out = out + r
        return out


class _Shape:
    """A stand-in extender of a given arity, for validating atoms before any data exists."""

    def __init__(self, arity: int):
        self.arity = arity

    def tries(self):
        return None
