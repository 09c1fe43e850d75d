"""The join program, built: a query plan's levels as the arrays the join kernels run.

``skeleton`` lays out one join's slots (``kernels.program`` describes them) for a plan
whose atoms have a given number of parts each; ``TermsProgram`` concatenates the
skeletons of a delta rule's terms for ``kernels.program.run_terms`` (and, packed with
``pack``, for ``kernels.tick``). Both are data independent: built once per plan and
parts per atom, and cached by their users.

Used by ``wcoj.generic_join``.
"""

from __future__ import annotations

import numpy as np

from wcoj import config
from wcoj.kernels.program import run_terms
from wcoj.shares import run_shares

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
