"""The change-by-change tick, compiled: a plan's delta terms as straight-line kernels.

A small tick runs its changes one after the other (``wcoj.kernels.tick``). For one
change of relation ``R`` (a row ``c`` with weight ``w``), the term of atom ``i`` over
``R`` reads ``curr`` for the atoms before it, the change for atom ``i``, and ``prev``
after it; ``prev`` is an index as it is, and ``curr`` of an atom over ``R`` is that plus
the change (over another relation it equals ``prev``). The term's levels are its plan's
(``wcoj.generic_join``): the first ones bind the delta atom's variables to the change's
values, each later one intersects the candidates of the atoms holding its variable (the
atom with the fewest proposes, a forward cursor searches each other one; ``curr`` atoms
add the change's value when it matches their prefix), ``<`` and ``!=`` filters apply at
the level where both sides are bound, and an atom's weight multiplies in at its last
column.

Interpreting that program per change (a slot table walked generically) cost about
thirty times a loop written for the terms at hand, in call and branch overhead; so
``compile_plan`` writes those loops: each term becomes one function whose levels are
nested loops over variables named for them, whose table rows are constants, and which
calls only small helpers with plain int arguments. The code is generated from the plan
alone, for any conjunctive query whose filters are ``<`` and ``!=`` (the graph patterns,
and Datalog cores without Python predicates or constants); its source is written under
``cache_dir()`` and compiled by Numba once (then cached like any kernel). A plan is one
set of views over one set of relations, so a graph compiles one per set of patterns.

``run(B, layout, rows, changes..., dcounts, counts, sets, buffers...)`` then applies a tick (``rows``:
``rows_of(terms)``): see
``wcoj.kernels.tick`` for its statuses and all-or-nothing contract. ``sets``: the
relations are sets (a graph's), so a leaf of a trie with no weight other than 1 is read
as 1 without loading it.

Used by ``indexes.transaction.ChangePlan``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from wcoj.kernels.tick import EDGE_ROWS, FULL, NEED_ROOM, OK, cycle_rate, edge_changes

__all__ = ["AtomSpec", "TermSpec", "compile_plan", "rows_of", "cache_dir",
           # what a plan's caller needs of the tick kernels (indexes.transaction)
           "edge_changes", "cycle_rate", "NEED_ROOM", "OK", "FULL", "EDGE_ROWS"]

_KERNELS = Path(__file__).resolve().parent / "kernels"
_HELPERS = ("memory.py", "search.py", "store.py", "tick.py", "zsets.py")


@dataclass(frozen=True)
class AtomSpec:
    """One atom of a term: its relation's id in the plan, the view it reads (``prev``,
    ``delta`` or ``curr``), the block row of its index's level 0 (-1 for the delta atom,
    which reads only the change) and the index's column order (natural column per
    depth)."""

    rel: int
    kind: str
    row: int
    cols: tuple[int, ...]


@dataclass(frozen=True)
class TermSpec:
    """One delta term: its view, its delta atom's relation and index, its atoms, its
    levels (the plan's ``_Level`` records: ``atoms``, ``depth``, ``last``, ``bounds``,
    ``unequal``) and the level of each output column."""

    view: int
    rel: int
    delta: int
    atoms: tuple[AtomSpec, ...]
    levels: tuple
    out: tuple[int, ...]


def cache_dir() -> Path:
    """Where generated kernels are written (``WCOJ_CACHE_DIR``, else ``~/.cache/wcoj-engine``)."""
    d = Path(os.environ.get("WCOJ_CACHE_DIR") or Path.home() / ".cache" / "wcoj-engine") / "kernels"
    d.mkdir(parents=True, exist_ok=True)
    return d


class _Code:
    """Lines of source at an indentation level."""

    def __init__(self):
        self.lines: list[str] = []
        self.ind = 0

    def __call__(self, s: str) -> None:
        self.lines.append("    " * self.ind + s)


class _Term:
    """The generator of one term's function. Its atoms' block rows are read from the
    argument ``rows`` from ``rbase + first`` on, and its view's number is an argument too,
    so the code depends on the view's query alone: one compiled module serves the view in
    every graph and every set of views."""

    def __init__(self, t: int, spec: TermSpec, first: int):
        self.t, self.spec, self.first = t, spec, first
        self.seed = len(spec.atoms[spec.delta].cols)
        self.code = _Code()

    def _has_change(self, a: int) -> bool:
        at = self.spec.atoms[a]
        return at.kind == "curr" and at.rel == self.spec.rel

    def source(self) -> str:
        c, sp = self.code, self.spec
        c("@row_kernel")
        c(f"def _t{self.t}(B, rows, rbase, ch, ci, w, sets, out, m, dcounts, view):")
        c.ind += 1
        state = {}
        for a, at in enumerate(sp.atoms):
            if a == sp.delta:
                continue
            c(f"R{a} = rows[rbase + {self.first + a}]")
            c(f"u{a} = sets and B[R{a} + {len(at.cols) - 1}, NONUNIT] == 0")
            state[a] = ("0", f"B[R{a}, N]", "True", "True" if self._has_change(a) else None)
        c("wt_0 = 1")
        self._level(0, state, "wt_0", in_loop=False)
        c("return OK, m")
        return "\n".join(c.lines)

    def _fail(self, in_loop: bool) -> str:
        return "continue" if in_loop else "return OK, m"

    def _filters(self, l: int, x: str, fail: str) -> None:
        lv = self.spec.levels[l]
        for j, upper in lv.bounds:
            self.code(f"if not ({x} {'<' if upper else '>'} x{j}):")
            self.code(f"    {fail}")
        for j in lv.unequal:
            self.code(f"if {x} == x{j}:")
            self.code(f"    {fail}")

    def _take(self, l: int, a: int, k: int, pos: str, hit: str | None, state: dict, wt: str, fail: str) -> str:
        """The atom ``a`` (its ``k``-th place at level ``l``) holds ``x{l}`` at state
        position ``pos`` (-1: not in its state) and/or in the change (``hit``): descend,
        or multiply its weight in. Returns the weight variable after it."""
        c, lv = self.code, self.spec.levels[l]
        d, last = lv.depth[k], lv.last[k]
        if not last:
            c(f"lo{a}_{l}, hi{a}_{l} = kids(B, R{a} + {d}, {pos})")
            state[a] = (f"lo{a}_{l}", f"hi{a}_{l}", f"{pos} >= 0", hit)
            return wt
        c(f"ok, f{a}_{l} = leaf(B, R{a} + {d}, {pos}, u{a}, {hit or 'False'}, w)")
        c("if not ok:")
        c("    return OVERFLOW, m")
        c(f"if f{a}_{l} == 0:")
        c(f"    {fail}")
        return self._mul(wt, f"f{a}_{l}", f"wt{a}_{l}")

    def _mul(self, wt: str, f: str, out: str) -> str:
        c = self.code
        c(f"ok, {out} = times({wt}, {f})")
        c("if not ok:")
        c("    return OVERFLOW, m")
        return out

    def _level(self, l: int, state: dict, wt: str, in_loop: bool) -> None:
        sp, c = self.spec, self.code
        if l == len(sp.levels):
            self._emit(wt)
            return
        lv = sp.levels[l]
        fail = self._fail(in_loop)
        state = dict(state)
        if l < self.seed:  # bound by the change: look its value up in the other atoms
            dcol = sp.atoms[sp.delta].cols[l]
            c(f"x{l} = ch[ci, {2 + dcol}]")
            self._filters(l, f"x{l}", fail)
            for k, a in enumerate(lv.atoms):
                if a == sp.delta:
                    if lv.last[k]:
                        wt = self._mul(wt, "w", f"wd_{l}")
                    continue
                lo, hi, st, ch = state[a]
                d, last = lv.depth[k], lv.last[k]
                if d == 0:
                    c(f"p{a}_{l} = at0(B, R{a}, {last}, x{l})")
                else:
                    c(f"p{a}_{l} = find_in(B[R{a} + {d}, V], {lo}, {hi}, x{l}) if {st} else -1")
                hit = None
                if ch is not None:
                    hit = f"h{a}_{l}"
                    c(f"{hit} = {ch} and ch[ci, {2 + sp.atoms[a].cols[d]}] == x{l}")
                    c(f"if p{a}_{l} < 0 and not {hit}:")
                else:
                    c(f"if p{a}_{l} < 0:")
                c(f"    {fail}")
                wt = self._take(l, a, k, f"p{a}_{l}", hit, state, wt, fail)
            self._level(l + 1, state, wt, in_loop)
            return
        # a free level: intersect the atoms' candidates, the fewest proposing
        atoms = list(lv.atoms)
        for k, a in enumerate(atoms):
            lo, hi, st, ch = state[a]
            d = lv.depth[k]
            c(f"L{a}_{l}, H{a}_{l} = ({lo}, {hi}) if {st} else (0, 0)")
            for j, upper in lv.bounds:
                c(f"L{a}_{l}, H{a}_{l} = narrow(B[R{a} + {d}, V], L{a}_{l}, H{a}_{l}, x{j}, {upper})")
            if ch is not None:
                c(f"E{a}_{l} = {ch}")
                c(f"e{a}_{l} = ch[ci, {2 + sp.atoms[a].cols[d]}]")
                c(f"n{a}_{l} = H{a}_{l} - L{a}_{l} + (1 if E{a}_{l} else 0)")
            else:
                c(f"n{a}_{l} = H{a}_{l} - L{a}_{l}")
            c(f"if n{a}_{l} == 0:")
            c(f"    {fail}")
        c(f"pa_{l} = {atoms[0]}")
        c(f"nb_{l} = n{atoms[0]}_{l}")
        for a in atoms[1:]:
            c(f"if n{a}_{l} < nb_{l}:")
            c(f"    pa_{l}, nb_{l} = {a}, n{a}_{l}")
        for a in atoms:
            c(f"cur{a}_{l} = L{a}_{l}")
            c(f"ex{a}_{l} = E{a}_{l}" if state[a][3] is not None else f"ex{a}_{l} = False")
            if state[a][3] is None:
                c(f"e{a}_{l} = 0")
        c("while True:")
        c.ind += 1
        for k, a in enumerate(atoms):  # the proposer's next candidate: its state merged with the change
            d, last = lv.depth[k], lv.last[k]
            c(f"{'if' if k == 0 else 'elif'} pa_{l} == {a}:")
            if d == 0:
                c(f"    ok, x{l}, p{a}_{l}, cur{a}_{l}, h{a}_{l} = fetch0(B, R{a}, {last}, cur{a}_{l}, H{a}_{l}, "
                  f"ex{a}_{l}, e{a}_{l})")
            else:
                c(f"    ok, x{l}, p{a}_{l}, cur{a}_{l}, h{a}_{l} = fetch(B[R{a} + {d}, V], cur{a}_{l}, H{a}_{l}, "
                  f"ex{a}_{l}, e{a}_{l})")
            if state[a][3] is not None:
                c(f"    ex{a}_{l} = ex{a}_{l} and not h{a}_{l}")
        c("if not ok:")
        c("    break")
        self._filters(l, f"x{l}", "continue")
        for k, a in enumerate(atoms):  # every other atom must hold it
            d, last = lv.depth[k], lv.last[k]
            ch = state[a][3]
            c(f"if pa_{l} != {a}:")
            if d == 0:
                c(f"    p{a}_{l} = at0(B, R{a}, {last}, x{l}) if H{a}_{l} > L{a}_{l} else -1")
            else:
                c(f"    p{a}_{l}, cur{a}_{l} = member(B[R{a} + {d}, V], cur{a}_{l}, H{a}_{l}, x{l})")
            if ch is not None:
                c(f"    h{a}_{l} = E{a}_{l} and e{a}_{l} == x{l}")
                c(f"    if p{a}_{l} < 0 and not h{a}_{l}:")
            else:
                c(f"    if p{a}_{l} < 0:")
            c("        continue")
        for k, a in enumerate(atoms):
            wt = self._take(l, a, k, f"p{a}_{l}", f"h{a}_{l}" if state[a][3] is not None else None, state, wt,
                            "continue")
        self._level(l + 1, state, wt, True)
        c.ind -= 1

    def _emit(self, wt: str) -> None:
        c, sp = self.code, self.spec
        c("if m == out.shape[0]:")
        c("    return FULL, m")
        c("out[m, 0] = view")
        c(f"out[m, 1] = {wt}")
        for j, lvl in enumerate(sp.out):
            c(f"out[m, {j + 2}] = x{lvl}")
        c(f"for j in range({len(sp.out) + 2}, out.shape[1]):")
        c("    out[m, j] = 0")
        c("ok, dcounts[view] = plus(dcounts[view], " + wt + ")")
        c("if not ok:")
        c("    return OVERFLOW, m")
        c("m += 1")


_DRIVER = '''
@row_kernel
def _terms(B, rows, ch, ci, w, sets, out, m, dcounts):
    rel = ch[ci, 0]
{dispatch}
    return OK, m


@kernel
def run(B, layout, rows, ch, edge, ins, dels, start, m, dcounts, counts, sets, out, res, work):
    """The changes ``start ..`` of ``ch`` (rows ``(relation, weight, row...)``), or, when
    ``edge``, a graph tick of the edge inserts ``ins`` and deletes ``dels`` (``start``
    0; its changes are written to ``ch``, ``EDGE_ROWS`` rows per edge, by
    ``edge_changes_into``, ``dcounts`` zeroed and the primary relation's row count change
    put in ``dcounts[-1]``). One kernel for both, so a cold start compiles the tick's code
    once. ``out``, ``res`` (as many rows as ``out``) and ``work`` are the caller's
    buffers, kept from tick to tick: ``out`` the views' rows ``(view, weight, keys...)``,
    its first ``m`` already written by a call before; ``res`` their consolidation;
    ``work`` ``int64[5, max(max arity, len(dcounts))]`` whose fourth row is zeros. Only
    ints are returned, so a single-edge tick boxes no array: ``(bad, n_primary, n,
    status, change, level, need, state row, m, a, b, w)``: ``bad`` >= 0 the position of
    an id out of range (nothing done); ``n`` the changes in ``ch``; ``status``,
    ``change``, ``level``, ``need`` and ``state row`` as in ``wcoj.kernels.tick``, with
    ``FULL`` when ``out`` has no room (``m`` rows kept: grow both buffers and call again
    from ``change``); ``m`` the rows of ``res`` when ``status`` is ``OK``, else those of
    ``out`` to keep; ``(a, b, w)`` the first primary change (``n_primary`` > 0)."""
    n_primary = 0
    n = ch.shape[0]
    if edge:
        for v in range(dcounts.shape[0]):
            dcounts[v] = 0
        bad, n, n_primary = edge_changes_into(layout, B, ins, dels, ch)
        if bad >= 0:
            return bad, 0, 0, OK, 0, 0, 0, 0, 0, 0, 0, 0
        total = 0
        for i in range(n_primary):
            total += ch[i, 1]
        dcounts[dcounts.shape[0] - 1] = total
    a, b, w = (ch[0, 2], ch[0, 3], ch[0, 1]) if n_primary > 0 else (0, 0, 0)
    rel_idx, idx_state = _sec(layout, 0), _sec(layout, 1)
    mx = {max_arity}
    path, prow, reserve, none, saved = work[0, :mx], work[1, :mx], work[2, :mx], work[3, :mx], work[4]
    i = start
    while i < n:
        if i + 2 < n:
            prefetch_change(B, layout, ch, i + 2, False)
        if i + 1 < n:
            prefetch_change(B, layout, ch, i + 1, True)
        rel, wi = ch[i, 0], ch[i, 1]
        m0 = m
        for v in range(dcounts.shape[0]):
            saved[v] = dcounts[v]
        status, m = _terms(B, rows, ch, i, wi, sets, out, m, dcounts)
        if status == OK:
            for r in range(mx):
                reserve[r] = MIN_CAP * (i + 1)
            status, done, level, need = apply_change(B, layout, ch, i, wi, reserve, path, prow, 0,
                                                     rel_idx[rel + 1] - rel_idx[rel])
            if status != OK:  # the indexes before `done` took it: give it back
                apply_change(B, layout, ch, i, -wi, none, path, prow, 0, done)
                if status == NEED_ROOM:
                    for v in range(dcounts.shape[0]):
                        dcounts[v] = saved[v]
                    return -1, n_primary, n, NEED_ROOM, i, level, need, idx_state[rel_idx[rel] + done], m0, a, b, w
        if status == FULL:  # nothing of this change is kept: the caller grows the buffers
            for v in range(dcounts.shape[0]):
                dcounts[v] = saved[v]
            return -1, n_primary, n, FULL, i, 0, 0, 0, m0, a, b, w
        if status != OK:
            undo_changes(B, layout, ch, i, path, prow, none)
            for v in range(dcounts.shape[0]):
                dcounts[v] = 0
            return -1, n_primary, n, OVERFLOW, i, 0, 0, 0, 0, a, b, w
        i += 1
    for v in range(dcounts.shape[0]):
        counts[v] += dcounts[v]
    return -1, n_primary, n, OK, n, 0, 0, 0, consolidate(out, m, res), a, b, w


@kernel
def stream_run(B, layout, rows, edges, bounds, t0, dcounts, counts, sets, tcounts, stamps):
    """Ticks ``t0 ..`` of a stream, each one graph tick of ``run``: tick ``t`` inserts
    ``edges[bounds[t, 0]:bounds[t, 1]]`` and deletes ``edges[bounds[t, 1]:bounds[t,
    2]]``; ``tcounts[t]`` gets ``counts`` after it and its number of changes of the
    primary relation, ``stamps[t]`` the cycle counter at its start and end
    (``memory.cycles``). Stops at the first tick not done: ``(t, bad, n_primary, ch,
    status, change, level, need, state row, out, m, done)`` with ``t`` that tick
    (``len(bounds)`` when all are done), the rest ``run``'s for it (``ch`` its changes,
    ``out`` its rows so far, ``m`` of them), and ``done`` the rows ``(tick, view,
    weight, keys...)`` of the ticks before."""
    done = np.empty((256, {width} + 3), dtype=np.int64)
    out = np.empty((64, {width} + 2), dtype=np.int64)  # run's buffers, for every tick
    res = np.empty((64, {width} + 2), dtype=np.int64)
    chb = np.zeros((64, {max_arity} + 2), dtype=np.int64)
    work = np.zeros((5, max({max_arity}, dcounts.shape[0])), dtype=np.int64)
    m = 0
    now = cycles()
    row = np.zeros((1, {max_arity} + 2), dtype=np.int64)
    none = edges[:0]
    T = bounds.shape[0]
    for t in range(t0, T):
        stamps[t, 0] = now
        if t + 2 < T:  # the next ticks' first edges: where their lists are, then the lists
            prefetch_edge(B, layout, row, edges, bounds[t + 2, 0], False)
        if t + 1 < T:
            prefetch_edge(B, layout, row, edges, bounds[t + 1, 0], True)
        if EDGE_ROWS * (bounds[t, 2] - bounds[t, 0]) > chb.shape[0]:
            chb = np.zeros((max(2 * chb.shape[0], EDGE_ROWS * (bounds[t, 2] - bounds[t, 0])), chb.shape[1]),
                           dtype=np.int64)
        bad, n_primary, n, status, i, level, need, off, k, _, _, _ = run(
            B, layout, rows, chb, True, edges[bounds[t, 0]:bounds[t, 1]], edges[bounds[t, 1]:bounds[t, 2]], 0, 0,
            dcounts, counts, sets, out, res, work)
        while status == FULL:
            out = grown(out, k, 2 * out.shape[0] + 16)
            res = np.empty_like(out)
            _, _, _, status, i, level, need, off, k, _, _, _ = run(
                B, layout, rows, chb[:n], False, none, none, i, k, dcounts, counts, sets, out, res, work)
        now = cycles()
        stamps[t, 1] = now
        if bad >= 0 or status != OK:
            return t, bad, n_primary, chb[:n], status, i, level, need, off, out, k, done[:m]
        if m + k > done.shape[0]:
            done = grown(done, m, max(2 * done.shape[0], m + k))
        for r in range(k):
            done[m + r, 0] = t
            for c in range(res.shape[1]):
                done[m + r, c + 1] = res[r, c]
        m += k
        for v in range(counts.shape[0]):
            tcounts[t, v] = counts[v]
        tcounts[t, counts.shape[0]] = n_primary
    return bounds.shape[0], -1, 0, chb[:0], OK, 0, 0, 0, 0, out, 0, done[:m]
'''

_HEADER = '''"""Generated by wcoj.tickgen (do not edit; delete to regenerate)."""

import numpy as np

from wcoj.kernels.memory import DENSE, HI, LO, N, NONUNIT, V, cycles, grown, kernel, load, row_kernel
from wcoj.kernels.store import MIN_CAP, NEED_ROOM, OK, OVERFLOW
from wcoj.kernels.search import narrow
from wcoj.kernels.tick import (EDGE_ROWS, FULL, _sec, apply_change, at0, consolidate, edge_changes_into, fetch,
                               fetch0, find_in, kids, leaf, member, plus, prefetch_change, prefetch_edge, times,
                               undo_changes)

'''


def rows_of(terms: list[TermSpec]) -> list[int]:
    """The ``rows`` argument of a plan's kernels: every term's atoms' block rows, in order."""
    return [a.row for spec in terms for a in spec.atoms]


def _local(terms: list[TermSpec]) -> tuple[list[TermSpec], list[int]]:
    """A view's terms with their relations numbered from 0 in order of appearance, and
    the plan's id of each."""
    rels: list[int] = []
    for spec in terms:
        for r in [spec.rel] + [a.rel for a in spec.atoms]:
            if r not in rels:
                rels.append(r)
    at = {r: i for i, r in enumerate(rels)}
    local = [TermSpec(0, at[sp.rel], sp.delta, tuple(AtomSpec(at[a.rel], a.kind, 0, a.cols) for a in sp.atoms),
                      sp.levels, sp.out) for sp in terms]
    return local, rels


def view_source(terms: list[TermSpec]) -> str:
    """The module of one view's terms, ``_t0``, ``_t1``, ... (block rows, view number and
    relations as arguments; see ``_Term``)."""
    parts = [_HEADER]
    first = 0
    for t, spec in enumerate(terms):
        parts.append("\n\n" + _Term(t, spec, first).source() + "\n")
        first += len(spec.atoms)
    return "".join(parts)


def plan_source(views: list[tuple[str, list[int], int, list[int]]], max_arity: int, width: int) -> str:
    """The module of a plan's driver (``run``, ``stream_run``) over its views' modules:
    per view ``(module name, the plan's id of each of its relations, its first row in
    rows, the view's relation of each term)``. A change of relation ``rel`` runs, in
    ``_terms``, every term of every view whose delta atom is over ``rel``: the terms are
    called from here directly, since each level of calls between them and ``run`` would
    have LLVM optimise their code once more on a cold start."""
    imports = "".join(f"import {name} as _v{v}\n" for v, (name, _, _, _) in enumerate(views))
    lines = []
    for rel in sorted({r for _, rels, _, _ in views for r in rels}):
        calls = [(v, t, rbase) for v, (_, rels, rbase, term_rels) in enumerate(views)
                 for t, lrel in enumerate(term_rels) if rels[lrel] == rel]
        if not calls:
            continue
        lines.append(f"    if rel == {rel}:")
        for v, t, rbase in calls:
            lines.append(f"        status, m = _v{v}._t{t}(B, rows, {rbase}, ch, ci, w, sets, out, m, dcounts, {v})")
            lines.append("        if status != OK:")
            lines.append("            return status, m")
    dispatch = "\n".join(lines) if lines else "    pass"
    return _HEADER + imports + "\n" + _DRIVER.format(dispatch=dispatch, max_arity=max_arity, width=max(width, 1))


def _helpers_digest() -> str:
    h = hashlib.sha1()
    for name in _HELPERS:
        h.update((_KERNELS / name).read_bytes())
    return h.hexdigest()


_LOADED: dict[str, object] = {}


def _load(kind: str, src: str):
    """The module of source ``src``: written under ``cache_dir()`` (named for a digest of
    the source and of the helpers it calls, so an edit to either makes a new one) and
    imported; Numba compiles its functions at their first call and caches them beside it."""
    digest = hashlib.sha1((src + _helpers_digest()).encode()).hexdigest()[:20]
    name = f"wcoj_{kind}_{digest}"
    mod = _LOADED.get(name)
    if mod is not None:
        return mod
    d = cache_dir()
    if str(d) not in sys.path:
        sys.path.append(str(d))  # a plan's module imports its views' modules by name
    path = d / f"{name}.py"
    if not path.exists() or path.read_text() != src:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(src)
        os.replace(tmp, path)  # atomic: another process may be writing the same file
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    _LOADED[name] = mod
    return mod


def compile_plan(terms: list[TermSpec], max_arity: int, width: int):
    """The module holding the plan's ``run`` and ``stream_run`` kernels (see the module
    docstring): one module per view (shared by every plan holding that view) and a
    driver for the plan. ``rows``: ``rows_of(terms)``."""
    views, first = [], 0
    for v in sorted({t.view for t in terms}):
        mine = [t for t in terms if t.view == v]
        local, rels = _local(mine)
        mod = _load("view", view_source(local))
        views.append((mod.__name__, rels, first, [t.rel for t in local]))
        first += sum(len(t.atoms) for t in mine)
    return _load("plan", plan_source(views, max_arity, width))
