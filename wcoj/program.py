"""The join program, built: a query plan's levels as the arrays the join kernels run.

``skeleton`` lays out one join's slots (``kernels.program`` describes them) for a plan
whose atoms have a given number of parts each; ``TermsProgram`` concatenates the
skeletons of a delta rule's terms for ``kernels.program.run_terms`` (and, packed with
``pack``, for ``kernels.tick``). Both are data independent: built once per plan and
parts per atom, and cached by their users.

``_TrieRun`` runs one batch join over tries in the join program's kernels (breadth
first, the last two levels counted or listed through a byte map when their shape
allows). Used by ``wcoj.generic_join``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from wcoj import config
from wcoj.errors import WeightOverflowError
from wcoj.kernels import zsets as wk
from wcoj.kernels.count import count_marked, count_tail, list_tail
from wcoj.kernels.program import SCOL, SN, SUNIT, TOO_BIG, levels_from, run_terms, slot_table
from wcoj.kernels.store import prefix_ranges
from wcoj.plan import Atom, _apply_filters, _Level
from wcoj.shares import run_shares
from wcoj.tables import Stack

I64 = npt.NDArray[np.int64]

__all__ = ["skeleton", "seed_levels", "TermsProgram", "pack"]


def skeleton(plan, n_parts: tuple[int, ...]):
    """The data-independent part of a join's slot program (see ``kernels.program``) when
    atom ``i`` has ``n_parts[i]`` parts: per slot its part, column depth and last flag;
    per level its slots, atoms, ``<`` bounds and ``!=`` columns. Cached on a ``_Plan``."""
    cache = plan.skeletons if hasattr(plan, "skeletons") else {}
    if n_parts not in cache:
        first = np.cumsum((0,) + n_parts)
        slot_part, slot_depth, slot_last = [], [], []
        level_slots, level_atoms, atom_bounds = [0], [0], []
        bnd_off, bnd_col, bnd_upper = [0], [], []
        ne_off, ne_col = [0], []
        for lv in plan:
            for k, i in enumerate(lv.atoms):
                atom_bounds.append(len(slot_part))
                for q in range(first[i], first[i + 1]):
                    slot_part.append(q)
                    slot_depth.append(lv.depth[k])
                    slot_last.append(int(lv.last[k]))
            atom_bounds.append(len(slot_part))
            level_slots.append(len(slot_part))
            level_atoms.append(len(atom_bounds))
            for c, upper in lv.bounds:
                bnd_col.append(c)
                bnd_upper.append(upper)
            bnd_off.append(len(bnd_col))
            ne_col.extend(lv.unequal)
            ne_off.append(len(ne_col))
        i64 = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
        cache[n_parts] = (i64(slot_part), i64(slot_depth), i64(slot_last),
                          (i64(level_slots), i64(level_atoms), i64(atom_bounds), i64(bnd_off),
                           i64(bnd_col), i64(bnd_upper), i64(ne_off), i64(ne_col)))
    return cache[n_parts]


def seed_levels(plan, n_parts, arity, delta_atom: int) -> int:
    """``_TermsProgram.term_seed`` of one term: the delta atom's arity ``r`` when it has one
    part and its column ``l`` is bound at level ``l`` for each ``l < r`` (its variables are
    distinct), else 0."""
    r = arity[delta_atom]
    if n_parts[delta_atom] != 1 or len(plan) < r:
        return 0
    for l in range(r):
        lv = plan[l]
        if delta_atom not in lv.atoms or lv.depth[lv.atoms.index(delta_atom)] != l:
            return 0
    return r


class TermsProgram:
    """The slot programs of several delta terms concatenated for ``run_terms`` (and
    ``kernels.tick``); data independent, built once per set of live terms and parts per
    atom (see ``_skeleton``).

    ``at``: per slot, its row in the stacked tables of every part of every term; ``deep``:
    slots whose column is not their part's level 0; ``fixed``: the ``LAST``/``COL``/``UNIT``
    columns; ``part_rows``: each part's level-0 row. ``term_seed``: per term, the arity of
    its delta atom when that atom has one part and binds a variable at each of the first
    levels (``kernels.program._seed`` finds them), else 0; ``first_part``: that part.
    """

    __slots__ = ("at", "deep", "fixed", "part_rows", "shape", "term_levels", "term_parts", "out_cols",
                 "first_part", "term_seed", "n_rows")

    def __init__(self, terms: list, output: list[str] | list[list[str]]):
        """``terms``: per term ``(plan, order, n_parts per atom, arity per atom, its delta
        atom)``; ``output``: the result's variables, or one list per term (narrower
        outputs are padded with their first column up to the widest)."""
        outputs = output if output and isinstance(output[0], list) else [output] * len(terms)
        width = max(len(o) for o in outputs) if outputs else 0
        at, deep, fixed, part_rows, out_cols, first_part, term_seed = [], [], [], [], [], [], []
        shape = [[] for _ in range(8)]
        term_levels, term_parts = [0], [0]
        row0 = 0  # this term's first table row
        n_slots = n_atoms = n_bnd = n_ne = 0
        for (plan, order, n_parts, arity, delta_atom), out in zip(terms, outputs):
            first_part.append(term_parts[-1] + sum(n_parts[:delta_atom]))
            term_seed.append(seed_levels(plan, n_parts, arity, delta_atom))
            slot_part, slot_depth, slot_last, sk = skeleton(plan, n_parts)
            part_arity = np.repeat(np.asarray(arity, dtype=np.int64), n_parts)
            first = row0 + np.concatenate([[0], np.cumsum(part_arity)[:-1]]).astype(np.int64)
            at.append(first[slot_part] + slot_depth)
            deep.append(slot_depth > 0)
            fixed.append(np.stack([slot_last, slot_part, np.zeros_like(slot_last)], axis=1))
            part_rows.append(first)
            row0 += int(part_arity.sum())
            level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col = sk
            for k, arr in enumerate((level_slots + n_slots, level_atoms + n_atoms, atom_bounds + n_slots,
                                     bnd_off + n_bnd, bnd_col, bnd_upper, ne_off + n_ne, ne_col)):
                shape[k].append(arr)
            n_slots += len(slot_part)
            n_atoms += len(atom_bounds)
            n_bnd += len(bnd_col)
            n_ne += len(ne_col)
            term_levels.append(term_levels[-1] + len(level_slots))
            term_parts.append(term_parts[-1] + len(part_arity))
            cols = [list(order).index(v) for v in out]
            out_cols.append(cols + cols[:1] * (width - len(cols)))
        cat = lambda xs: np.ascontiguousarray(np.concatenate(xs) if xs else np.zeros(0), dtype=np.int64)  # noqa: E731
        self.at, self.deep, self.part_rows = cat(at), cat(deep), cat(part_rows)
        self.fixed = np.ascontiguousarray(np.concatenate(fixed) if fixed else np.zeros((0, 3)), dtype=np.int64)
        self.shape = tuple(cat(xs) for xs in shape)
        if not terms:  # no term: empty arrays, but offsets arrays keep their leading 0
            self.shape = tuple(np.zeros(1 if k in (0, 1, 3, 6) else 0, dtype=np.int64) for k in range(8))
        self.term_levels = np.array(term_levels, dtype=np.int64)
        self.term_parts = np.array(term_parts, dtype=np.int64)
        self.out_cols = np.array(out_cols, dtype=np.int64).reshape(len(terms), width)
        self.first_part = np.array(first_part, dtype=np.int64)
        self.term_seed = np.array(term_seed, dtype=np.int64)
        self.n_rows = row0  # rows of the stacked tables the program reads

    def args(self, limit: int = 0) -> tuple:
        """``run_terms``' arguments after the table and before ``share, shares``."""
        return (self.at, self.deep, self.fixed, self.part_rows, *self.shape, self.term_levels, self.term_parts,
                self.out_cols, limit, self.first_part, self.term_seed)

    def run(self, table, limit: int, shares: int = 1):
        """``(status, keys, w)`` from ``run_terms`` over ``table``, the stacked tables of
        the terms' atoms' parts in order; with ``shares > 1``, the rows in that many
        shares, on this thread and up to ``THREADS - 1`` helpers (``wcoj.shares``; the
        kernels release the GIL), each share holding up to ``limit`` rows per level. The
        caller keeps the parts alive: the kernel reads their addresses."""
        args = (table, *self.args(limit))
        if shares <= 1:
            status, _, keys, w = run_terms(*args, 0, 1)
            return status, keys, w
        outs = run_shares(lambda i: run_terms(*args, i, shares), shares, config.THREADS)
        bad = [o[0] for o in outs if o[0] < 0]
        if bad:
            return bad[0], None, None
        return (sum(int(o[0]) for o in outs), np.concatenate([o[2] for o in outs]),
                np.concatenate([o[3] for o in outs]))


def pack(sections: list) -> np.ndarray:
    """One int64 array holding ``sections`` (arrays, flattened): a header ``[n, start_0,
    length_0, start_1, length_1, ...]`` then the sections one after the other, so a kernel
    takes one argument for all of them (``kernels.tick._sec`` reads section ``i``).

    >>> code = pack([np.array([1, 2]), np.array([[3], [4]])])
    >>> code.tolist()
    [2, 5, 2, 7, 2, 1, 2, 3, 4]
    """
    flat = [np.ascontiguousarray(s, dtype=np.int64).ravel() for s in sections]
    head = 1 + 2 * len(flat)
    out = np.empty(head + sum(len(f) for f in flat), dtype=np.int64)
    out[0] = len(flat)
    at = head
    for i, f in enumerate(flat):
        out[1 + 2 * i], out[2 + 2 * i] = at, len(f)
        out[at:at + len(f)] = f
        at += len(f)
    return out


def _checked_mul(a: I64, b: I64) -> I64:
    out = np.empty_like(a)
    bad = wk.multiply_into(a, b, out)
    if bad >= 0:
        raise WeightOverflowError(f"weight {int(a[bad])} * {int(b[bad])} does not fit in int64 (row {bad})")
    return out


def _checked_total(arr: I64) -> int:
    """Sum of an int64 array as a Python int, refusing overflow."""
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.shape[0] == 0:
        return 0
    out = np.empty(1, dtype=np.int64)
    if wk.segment_sum_into(arr, np.zeros(1, dtype=np.int64), out) >= 0:
        raise WeightOverflowError("the total weight of the result does not fit in int64")
    return int(out[0])


class _TrieRun:
    """One join over the extenders' tries, in the join program's kernels."""

    def __init__(self, atoms: Sequence[Atom], plan: list[_Level], tries: list[list]):
        self.atoms, self.plan = atoms, plan
        self.parts = [p for ps in tries for p in ps]
        self.n_parts = tuple(len(ps) for ps in tries)
        self.empty = any(not ps for ps in tries)  # an atom with no rows: no result
        self.stack = Stack(self.parts)

    def _program(self, count_only: bool):
        """``(S, shape, lo, hi, stats)``: the slot table, the level arrays, the parts'
        starting ranges (under each atom's constants) and the parts' stats (counts)."""
        slot_part, slot_depth, slot_last, shape = skeleton(self.plan, self.n_parts)
        first = self.stack.first
        at = first[slot_part] + slot_depth
        unit = np.zeros_like(slot_last)
        stats = None
        if count_only:
            stats = np.concatenate([p.stats() for p in self.parts])[at]
            unit = stats[:, 2]
        S, lo, hi = slot_table(self.stack.table, at, (slot_depth > 0).astype(np.int64),
                               np.ascontiguousarray(np.stack([slot_last, slot_part, unit], axis=1)), first)
        q = 0
        for a, n in zip(self.atoms, self.n_parts):
            consts = a.constants
            if consts:
                plo = np.zeros((1, n), dtype=np.int64)
                phi = np.zeros((1, n), dtype=np.int64)
                sub = Stack(self.parts[q:q + n])
                prefix_ranges(sub.table, sub.first, len(a.terms), np.array([consts], dtype=np.int64), plo, phi)
                lo[q:q + n], hi[q:q + n] = plo[0], phi[0]
            q += n
        return S, shape, lo, hi, stats

    def run(self, count_only: bool):
        """The count, or ``(bound, w)`` blocks (an iterator) of the result's rows."""
        plan = self.plan
        n = len(plan)
        S, shape, lo, hi, stats = self._program(True)
        prog = (S,) + shape
        pauses = [i + 1 for i, lv in enumerate(plan) if not lv.in_kernel]  # a Python filter there
        tail = n >= 2 and not any(p > n - 2 for p in pauses)
        mark = self._mark(prog, stats, n, None) if tail and not count_only else (-1, 0, 0)
        if not count_only and mark[0] < 0:
            tail = False  # rows: the last two levels are listed by the byte map, or level by level
        stop = n - 2 if tail else n
        start = (np.zeros((1, 0), dtype=np.int64), np.ones(1, dtype=np.int64), lo.reshape(1, -1).copy(),
                 hi.reshape(1, -1).copy())
        blocks = self._through(prog, start, [p for p in pauses if p <= stop] + [stop])
        if not count_only:
            if tail:
                return (block for fr in blocks for block in self._list(prog, mark, fr))
            return ((b, w) for b, w, _, _ in blocks)
        if not tail:
            return _checked_total(np.array([_checked_total(w) for _, w, _, _ in blocks], dtype=np.int64))
        total = 0
        for fr in blocks:
            total += self._count(prog, stats, fr)
        return total

    def _through(self, prog, fr, stops: list[int]) -> Iterator[tuple]:
        """The frontier ``fr`` extended through each level of ``stops`` in turn (applying
        the Python filters of the levels it pauses at), in blocks of bounded size."""
        if not stops:
            yield fr
            return
        for block in self._extend(prog, fr, stops[0]):
            lv = self.plan[stops[0] - 1]
            if not lv.in_kernel and block[0].shape[0]:
                keep = _apply_filters(lv, block[0], skip_bounds=True)
                if keep is not None and not keep.all():
                    block = tuple(np.ascontiguousarray(a[keep]) for a in block)
            yield from self._through(prog, block, stops[1:])

    def _extend(self, prog, fr, stop: int, limit: int | None = None) -> Iterator[tuple]:
        """``levels_from`` up to ``stop``; a frontier that would pass ``SLICE_ROWS`` rows
        is extended from the level before it, half of its rows at a time."""
        status, bound, w, LO, HI = levels_from(*prog, *fr, stop, limit or config.SLICE_ROWS)
        if status >= 0:
            yield bound, w, LO, HI
            return
        if status != TOO_BIG:
            raise WeightOverflowError(
                f"a weight product under prefix {bound[-1 - status].tolist()} does not fit in int64")
        n = bound.shape[0]
        if n == 1:  # one row whose extension alone is too big: no smaller piece exists
            yield from self._extend(prog, (bound, w, LO, HI), stop, 1 << 62)
            return
        for a, b in ((0, n // 2), (n // 2, n)):
            yield from self._extend(prog, (bound[a:b], w[a:b], LO[a:b], HI[a:b]), stop)

    @staticmethod
    def _list(prog, mark, fr) -> Iterator[tuple]:
        """``list_tail`` of the frontier ``fr`` (two levels before the end): its rows in
        blocks of about ``SLICE_ROWS``."""
        bound, w, LO, HI = fr
        r = 0
        while r < bound.shape[0]:
            r, rows, weights, m = list_tail(*prog, bound, w, LO, HI, *mark, r, config.SLICE_ROWS)
            if r < 0:
                raise WeightOverflowError(
                    f"a weight product under prefix {bound[-1 - r].tolist()} does not fit in int64")
            yield rows[:m], weights[:m]

    def _count(self, prog, stats, fr) -> int:
        """``count_tail`` of the frontier ``fr`` (two levels or one before the end), on
        threads when it is large; ``count_marked`` where the last level can be probed
        against a byte map (``_mark``)."""
        bound, w, LO, HI = fr
        n = bound.shape[0]
        if not n:
            return 0
        mark = self._mark(prog, stats, len(self.plan), n)
        if mark[0] >= 0:
            def count(r0, r1):
                return count_marked(*prog, bound, w, LO, HI, *mark, r0, r1)
        else:
            def count(r0, r1):
                return count_tail(*prog, bound, w, LO, HI, r0, r1)
        threads = config.THREADS if n >= config.COUNT_SHARE_ROWS else 1
        if threads == 1:
            outs = [count(0, n)]
        else:
            chunks = _spread_chunks(min(n, 64))
            k = len(chunks)
            outs = run_shares(lambda i: count(chunks[i] * n // k, (chunks[i] + 1) * n // k), k, threads)
        total = 0
        for bad, t in outs:
            if bad >= 0:
                raise WeightOverflowError(f"the weighted count under prefix {bound[bad].tolist()} does not fit in int64")
            total += int(t)
        if not -(1 << 63) <= total < (1 << 63):
            raise WeightOverflowError("the total weight of the result does not fit in int64")
        return total

    @staticmethod
    def _mark(prog, stats, n_levels: int, n_rows: int) -> tuple[int, int, int]:
        """``(mark_slot, mark_lo, mark_size)`` for ``count_marked``, or ``(-1, 0, 0)``
        (``count_tail``).

        A byte map pays when the last level has two atoms of one set part each, one of them
        fixed per row of the frontier (its part is not in the level before), and that
        side's values span at most ``MARK_SPAN`` (one map per share, cleared per row).
        """
        S, level_slots, level_atoms, ne_off = prog[0], prog[1], prog[2], prog[7]
        few = n_rows is not None and n_rows < config.COUNT_SHARE_ROWS  # (None: listing, always)
        if n_levels < 2 or few or ne_off[-1] != ne_off[-2]:
            return -1, 0, 0  # (an != on the last variable needs every match looked at)
        t0, t1 = int(level_slots[-2]), int(level_slots[-1])
        p0, p1 = int(level_slots[-3]), int(level_slots[-2])
        two_atoms = int(level_atoms[-1] - level_atoms[-2]) - 1 == 2  # not one atom of two parts
        if t1 - t0 != 2 or not two_atoms or not (S[t0:t1, SUNIT] == 1).all():
            return -1, 0, 0
        before = set(S[p0:p1, SCOL].tolist())  # part columns of the level before
        for f in (t0, t0 + 1):
            lo, hi = int(stats[f, 0]), int(stats[f, 1])
            if int(S[f, SCOL]) not in before and S[f, SN] != 0 and 0 <= hi - lo < config.MARK_SPAN:
                return f, lo, hi - lo + 1
        return -1, 0, 0


def _spread_chunks(n: int) -> list[int]:
    """The chunks ``0 .. n - 1`` in an order that hands every thread some of the first
    ones: a batch's hub rows come first (a power-law graph's low ids), and threads that
    take chunks in order would leave one thread all of them at the end."""
    order = []
    step = 1
    while step < n:
        step *= 2
    seen = set()
    k = step
    while k >= 1:
        for i in range(0, step, k):
            if i < n and i not in seen:
                seen.add(i)
                order.append(i)
        k //= 2
    return order
