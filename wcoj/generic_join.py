"""Generic Join, breadth first over whole frontiers, and its incremental form.

``generic_join`` evaluates a conjunctive query ``A1 ⋈ ... ⋈ An`` one variable per level
(Ngo, Porat, Ré, Rudra; "Generic Join", Alg. 2): every prefix of a level's frontier is
extended by intersecting the candidates of every atom containing the variable, the
smallest proposing, the others searched (galloping, or one directory access for a whole
level 0). Intermediate levels carry no weight; an atom's weight multiplies in at its last
variable. Over tries the whole loop runs inside one jitted call (``kernels.term``; a count
fuses its last two levels). When a level's frontier would exceed ``SLICE_ROWS`` rows, the
join falls back to one jitted call per level over slices of bounded size, depth first
across slices (``kernels.frontier``), so a huge output (a hub edge closing millions of
triangles) streams instead of exhausting memory.

``IncrementalGenericJoin`` maintains the query under changes with the telescoping delta
rule (DESIGN.md, "The incremental join, exactly")::

    ΔQ = Σ_i  A1' ⋈ ... ⋈ A(i-1)' ⋈ ΔAi ⋈ A(i+1) ⋈ ... ⋈ An

where ``X'`` is the ``curr`` view and ``X`` the ``prev`` view. Each term's variable order
starts with its delta atom's variables, so its work is bounded by the delta. All terms
of a tick run in one jitted call (``kernels.term.run_terms``) when they can.

Relies on ``wcoj.extenders`` (the protocol), ``wcoj.kernels.intersect`` and
``wcoj.kernels.weights``. Used by ``wcoj.multiway`` (the circuit operator) and by the
graph and Datalog front ends.

>>> from indexes.trie import Trie, TrieView          # doctest only: wcoj never imports indexes
>>> E = TrieView([Trie.from_zset(ZSet.from_rows([(1, 2), (1, 3), (2, 3)]))])
>>> tri = [Atom(E, ("a", "b")), Atom(E, ("a", "c")), Atom(E, ("b", "c"))]
>>> generic_join(tri, ["a", "b", "c"]).to_dict()
{(1, 2, 3): 1}
>>> generic_join(tri, ["a", "b", "c"], count_only=True)
1
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numba
import numpy as np
import numpy.typing as npt

from wcoj.errors import ArityMismatchError, QueryError, UnboundVariableError, WeightOverflowError
from wcoj.extenders import IncrementalSource, PrefixExtender, descend
from wcoj.kernels import weights as wk
from wcoj.kernels.frontier import extend_frontier, extend_frontier_pair
from wcoj.kernels.term import (COL, N, TOO_BIG, UNIT, count_tail,
                               count_tail_parallel, run_levels, run_program, slot_table)
from wcoj.kernels.intersect import (
    count_last_level,
    count_last_level_parallel,
    count_pair,
    count_pair_parallel,
    narrow_ranges,
)
from wcoj.shares import run_shares
from wcoj.zset import ZSet, consolidate

__all__ = ["Atom", "generic_join", "IncrementalGenericJoin", "choose_order", "SLICE_ROWS"]

I64 = npt.NDArray[np.int64]
SLICE_ROWS = 1 << 21  # upper bound on candidate rows materialised per slice
THREADS = min(numba.config.NUMBA_NUM_THREADS, 8)  # a large tick's delta terms run on this many threads,
SHARES_PER_THREAD = 2  # in this many shares per thread (each thread takes the next one left)
DELTA_SHARE_ROWS = 1 << 10  # ... when its terms' deltas have at least this many rows (a ~1 ms kernel)
_NO_DIR = np.zeros(0, dtype=np.int64)
_NO_DIR.flags.writeable = False  # the same (read-only) array type as the tries' arrays


def _padded(n: int) -> int:
    """Kernels take tuples of part arrays and Numba compiles one variant per tuple length;
    padding to a power of two with empty parts keeps that to a handful (no tick pays a
    compilation because its index happens to have one run more)."""
    return max(2, 1 << (n - 1).bit_length())


def _pad_parts(arrays: tuple, lo: I64, hi: I64, atom_start: I64):
    """Append empty parts (empty ranges) to the last atom up to ``_padded`` parts."""
    extra = _padded(len(arrays)) - len(arrays)
    if not extra:
        return arrays, lo, hi, atom_start
    z = np.zeros((lo.shape[0], extra), dtype=np.int64)
    starts = atom_start.copy()
    starts[-1] += extra
    return (arrays + (_NO_DIR,) * extra, np.concatenate([lo, z], axis=1),
            np.concatenate([hi, z], axis=1), starts)
PARALLEL_ROWS = 50_000  # count the last level on all cores above this many frontier rows
PARALLEL_TAIL_ROWS = 2_000  # fused two-level counts: each row does a whole neighbourhood's work
MARK_SPAN = 1 << 23  # largest value span counted through a byte map (8 MiB per chunk of rows)


def _is_var(t: object) -> bool:
    return isinstance(t, str)


@dataclass(frozen=True)
class Atom:
    """One atom of a conjunctive query: an extender and the terms of its columns.

    ``terms`` follow the extender's column order; a term is a variable name (``str``) or
    a constant (``int``). Constants come first, then variables in the order they are bound.
    """

    extender: PrefixExtender
    terms: tuple

    def __post_init__(self) -> None:
        if len(self.terms) != self.extender.arity:
            raise ArityMismatchError(f"atom {self}", self.extender.arity, len(self.terms))
        vs = [t for t in self.terms if _is_var(t)]
        if len(set(vs)) != len(vs):
            raise QueryError(f"variable repeated inside one atom {self}; join with an equality instead")
        n_const = len(self.terms) - len(vs)
        if any(_is_var(t) for t in self.terms[:n_const]):
            raise QueryError(f"atom {self}: constants must come before variables in its column order")

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(t for t in self.terms if _is_var(t))

    @property
    def constants(self) -> tuple[int, ...]:
        return tuple(int(t) for t in self.terms if not _is_var(t))

    def __repr__(self) -> str:
        return f"Atom({', '.join(map(str, self.terms))})"


# ------------------------------------------------------------------------- planning
@dataclass
class _Level:
    var: str
    atoms: list[int]                       # atoms containing var
    filters: list = field(default_factory=list)      # (columns, fn) first decidable here
    bounds: list = field(default_factory=list)       # (column, upper): var > col / var < col
    depth: list[int] = field(default_factory=list)   # per participating atom: its column index
    last: list[bool] = field(default_factory=list)   # per participating atom: last column?
    unequal: list = field(default_factory=list)      # columns var must differ from (!= filters)
    in_kernel: bool = True                           # every filter here is a bound or an !=


class _Plan(list):
    """The levels of a join, and the slot skeletons of ``_TrieRun`` cached per part layout
    (a cached plan is reused every tick; its skeleton changes only when runs do)."""

    def __init__(self, levels=()):
        super().__init__(levels)
        self.skeletons: dict = {}
        self.fusable = False  # set by IncrementalGenericJoin: its terms may run in ``run_terms``


def _plan(atoms: Sequence[Atom], order: Sequence[str], filters: Sequence = ()) -> _Plan:
    pos = {v: i for i, v in enumerate(order)}
    if len(pos) != len(order):
        raise QueryError(f"variable order {list(order)} repeats a variable")
    for a in atoms:
        missing = [v for v in a.variables if v not in pos]
        if missing:
            raise UnboundVariableError(a, missing, "not in the variable order")
        levels = [pos[v] for v in a.variables]
        if levels != sorted(levels):
            raise QueryError(f"{a}: its columns must follow the variable order {list(order)}")
    plan = _Plan()
    for v in order:
        inv = [i for i, a in enumerate(atoms) if v in a.variables]
        if not inv:
            raise UnboundVariableError(list(order), [v], "no atom binds it")
        lv = _Level(v, inv)
        for i in inv:
            a = atoms[i]
            col = a.terms.index(v)
            lv.depth.append(col)
            lv.last.append(col == len(a.terms) - 1)
        plan.append(lv)
    for f in filters:
        vars_, fn = (f[1:], np.less) if f[0] == "<" else f
        missing = [v for v in vars_ if v not in pos]
        if missing:
            raise UnboundVariableError(f"filter on {list(vars_)}", missing, "no atom binds it")
        cols = [pos[v] for v in vars_]
        lv = plan[max(cols)]
        if f[0] == "<" and cols[0] != cols[1]:
            # x < y narrows the candidate ranges of the later variable (a trie is sorted)
            x, y = cols
            lv.bounds.append((x, False) if y > x else (y, True))
        elif fn is np.not_equal and len(cols) == 2 and cols[0] != cols[1]:
            lv.unequal.append(min(cols))  # the whole-join kernel skips such candidates
        else:
            lv.in_kernel = False
        lv.filters.append((cols, fn, f[0] == "<" and cols[0] != cols[1]))
    return plan


def _apply_filters(lv: _Level, bound: I64, skip_bounds: bool = False) -> npt.NDArray[np.bool_] | None:
    """Mask of the rows that pass every filter first decidable at this level (None: all).

    With ``skip_bounds``, the ``<`` filters that narrowed this level's ranges are skipped.
    """
    keep = None
    for cols, fn, is_bound in lv.filters:
        if skip_bounds and is_bound:
            continue
        m = np.asarray(fn(*(bound[:, c] for c in cols)), dtype=bool)
        keep = m if keep is None else keep & m
    return keep


def choose_order(atoms: Sequence[Sequence[str]], start: Sequence[str] = (),
                 sizes: Sequence[float] | None = None) -> list[str]:
    """A variable order: ``start`` first, then greedily the variable most connected to the bound ones.

    Ties go to the variable in the most atoms, then to the smaller estimated atom size
    (``sizes``), then to the name. ``atoms`` are the variable lists of the atoms.

    >>> choose_order([("a", "b"), ("a", "c"), ("b", "c")], start=("b", "c"))
    ['b', 'c', 'a']
    """
    order = list(start)
    allv = sorted({v for a in atoms for v in a})
    sizes = sizes or [1.0] * len(atoms)
    while len(order) < len(allv):
        bound = set(order)

        def score(v: str) -> tuple:
            touching = [i for i, a in enumerate(atoms) if v in a]
            linked = sum(1 for i in touching if bound & set(atoms[i]))
            smallest = min(sizes[i] for i in touching)
            return (-linked, -len(touching), smallest, v)

        order.append(min((v for v in allv if v not in bound), key=score))
    return order


# ------------------------------------------------------------------------- evaluation
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


def _skeleton(plan: list[_Level], n_parts: tuple[int, ...]):
    """The data-independent part of a join's slot program (see ``kernels.term``) when atom
    ``i`` has ``n_parts[i]`` parts: per slot its part, column depth and last flag; per
    level its slots, atoms, ``<`` bounds and ``!=`` columns. Cached on a ``_Plan`` (a
    cached plan is reused every tick; its skeleton changes only when runs do)."""
    cache = plan.skeletons if isinstance(plan, _Plan) else {}
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


class _TrieRun:
    """Fused evaluation when every extender exposes ``trie_parts()``."""

    def __init__(self, atoms: Sequence[Atom], plan: list[_Level]):
        self.parts = []           # TrieArrays
        self.atom_parts = []      # per atom, its global part ids
        for a in atoms:
            ps = a.extender.trie_parts()
            self.atom_parts.append(list(range(len(self.parts), len(self.parts) + len(ps))))
            self.parts.extend(ps)
        self.atoms, self.plan = atoms, plan
        self.empty = any(not ps for ps in self.atom_parts)  # an atom with no rows: no result
        self._levels = None

    def _level_parts(self):
        """Per level: the parts taking part (grouped by atom) and where each atom's start
        (the sliced path only; kept here, not on the cacheable, data-independent plan)."""
        if self._levels is None:
            lv_parts = [[q for i in lv.atoms for q in self.atom_parts[i]] for lv in self.plan]
            starts = [np.cumsum([0] + [len(self.atom_parts[i]) for i in lv.atoms]).astype(np.int64)
                      for lv in self.plan]
            self._levels = (lv_parts, starts)
        return self._levels

    @property
    def lv_parts(self):
        return self._level_parts()[0]

    @property
    def lv_atom_start(self):
        return self._level_parts()[1]

    def _skeleton(self):
        return _skeleton(self.plan, tuple(len(ps) for ps in self.atom_parts))

    def whole(self, count_only: bool):
        """The join in one or two jitted calls (``kernels.term``), or ``None`` when a level's
        frontier would exceed ``SLICE_ROWS`` rows or a filter is neither a ``<`` bound nor
        an ``!=`` between two variables (the caller then streams level by level in slices).

        Returns the count, or ``(bound, w)``.
        """
        plan = self.plan
        if not all(lv.in_kernel for lv in plan):
            return None
        slot_part, slot_depth, slot_last, shape = self._skeleton()
        tables = [p.table() for p in self.parts]
        first = np.cumsum([0] + [t.shape[0] for t in tables[:-1]]).astype(np.int64)  # level-0 rows
        at = first[slot_part] + slot_depth
        unit = np.zeros_like(slot_last)
        if count_only:
            stats = np.concatenate([p.stats() for p in self.parts])[at]
            unit = stats[:, 2]
        S, lo, hi = slot_table(np.concatenate(tables), at, (slot_depth > 0).astype(np.int64),
                               np.ascontiguousarray(np.stack([slot_last, slot_part, unit], axis=1)), first)
        prog = (S,) + shape
        n_levels = len(plan)
        if any(a.constants for a in self.atoms):
            _, _, lo2, hi2 = self.start()
            lo, hi = lo2[0], hi2[0]
        stop = max(n_levels - 2, 0) if count_only else n_levels
        status, bound, w, LO, HI = run_levels(*prog, lo, hi, stop, SLICE_ROWS)
        if status == TOO_BIG:
            return None
        if status < 0:
            raise WeightOverflowError(
                f"a weight product under prefix {bound[-1 - status].tolist()} does not fit in int64")
        if not count_only:
            return bound, w
        kernel = count_tail_parallel if status >= PARALLEL_TAIL_ROWS else count_tail
        bad, total = kernel(*prog, bound, w, LO, HI, *self._mark(prog, stats, n_levels, status))
        if bad >= 0:
            raise WeightOverflowError(f"the weighted count under prefix {bound[bad].tolist()} does not fit in int64")
        return int(total)

    @staticmethod
    def _mark(prog, stats, n_levels: int, n_rows: int) -> tuple[int, int, int]:
        """``(mark_slot, mark_lo, mark_size)`` for ``count_tail``, or ``(-1, 0, 0)``.

        A byte map pays when the last level has two atoms of one set part each, one of them
        fixed per row of the frontier (its part is not in the level before), and that
        side's values span at most ``MARK_SPAN`` (one map per chunk of rows, cleared per row).
        """
        S, level_slots, level_atoms, ne_off = prog[0], prog[1], prog[2], prog[7]
        if n_levels < 2 or n_rows < PARALLEL_TAIL_ROWS or ne_off[-1] != ne_off[-2]:
            return -1, 0, 0  # (an != on the last variable needs every match looked at)
        t0, t1 = int(level_slots[-2]), int(level_slots[-1])
        p0, p1 = int(level_slots[-3]), int(level_slots[-2])
        two_atoms = int(level_atoms[-1] - level_atoms[-2]) - 1 == 2  # not one atom of two parts
        if t1 - t0 != 2 or not two_atoms or not (S[t0:t1, UNIT] == 1).all():
            return -1, 0, 0
        before = set(S[p0:p1, COL].tolist())  # part columns of the level before
        for f in (t0, t0 + 1):
            lo, hi = int(stats[f, 0]), int(stats[f, 1])
            if int(S[f, COL]) not in before and S[f, N] > 0 and hi - lo < MARK_SPAN:
                return f, lo, hi - lo + 1
        return -1, 0, 0

    def start(self) -> tuple[I64, I64, I64, I64]:
        """One empty prefix; per part, the range under the atom's constants."""
        P = len(self.parts)
        lo = np.zeros((1, P), dtype=np.int64)
        hi = np.zeros((1, P), dtype=np.int64)
        for i, a in enumerate(self.atoms):
            consts = a.constants
            for q in self.atom_parts[i]:
                if consts:
                    l, h = descend(self.parts[q], np.array([consts], dtype=np.int64))
                    lo[0, q], hi[0, q] = l[0], h[0]
                else:
                    hi[0, q] = len(self.parts[q].values[0])
        return np.zeros((1, 0), dtype=np.int64), np.ones(1, dtype=np.int64), lo, hi

    def blocks(self, level: int, bound: I64, w: I64, LO: I64, HI: I64,
               count_only: bool) -> Iterator[tuple[I64, I64] | int]:
        lv = self.plan[level]
        S = self.lv_parts[level]
        atom_start = self.lv_atom_start[level]
        vals = tuple(self.parts[q].values[lv.depth[k]] for k, i in enumerate(lv.atoms)
                     for q in self.atom_parts[i])
        lo = np.ascontiguousarray(LO[:, S])
        hi = np.ascontiguousarray(HI[:, S])
        for col, upper in lv.bounds:
            b = np.ascontiguousarray(bound[:, col])
            for c in range(len(S)):
                lc, hc = lo[:, c].copy(), hi[:, c].copy()
                narrow_ranges(vals[c], lc, hc, b, upper)
                lo[:, c], hi[:, c] = lc, hc
        sizes = hi - lo
        per_atom = np.add.reduceat(sizes, atom_start[:-1], axis=1) if S else sizes
        cap = per_atom.min(axis=1)
        final = level == len(self.plan) - 1
        if final and count_only and len(lv.filters) == len(lv.bounds):
            pw = tuple(self.parts[q].weights for i in lv.atoms for q in self.atom_parts[i])
            sums = np.empty(lo.shape[0], dtype=np.int64)
            big = lo.shape[0] >= PARALLEL_ROWS
            if len(S) == 2 and len(lv.atoms) == 2:  # two single-run atoms: the pair kernel
                kernel = count_pair_parallel if big else count_pair
                bad = kernel(vals[0], lo[:, 0].copy(), hi[:, 0].copy(), pw[0],
                             vals[1], lo[:, 1].copy(), hi[:, 1].copy(), pw[1], w, sums)
            else:
                kernel = count_last_level_parallel if big else count_last_level
                pvals, plo, phi, pstart = _pad_parts(vals, lo, hi, atom_start)
                ppw = pw + (_NO_DIR,) * (len(pvals) - len(pw))
                bad = kernel(pvals, plo, phi, pstart, ppw, w, sums)
            if bad >= 0:
                raise WeightOverflowError(f"the weighted count under prefix {bound[bad].tolist()} does not fit in int64")
            yield _checked_total(sums)
            return
        csum = np.cumsum(cap)
        start = 0
        n = lo.shape[0]
        while start < n:
            base = csum[start - 1] if start else 0
            stop = int(np.searchsorted(csum, base + SLICE_ROWS, side="right"))
            stop = max(stop, start + 1)
            yield from self._slice(level, lv, vals, bound[start:stop], w[start:stop], LO[start:stop],
                                   HI[start:stop], lo[start:stop], hi[start:stop],
                                   int(csum[stop - 1] - base), count_only)
            start = stop

    def _slice(self, level, lv, vals, bound, w, LO, HI, lo, hi, cap, count_only):
        n_parts = len(self.lv_parts[level])
        offs, leafw, is_last = [], [], np.zeros(n_parts, dtype=np.int64)
        q_local = 0
        for k, i in enumerate(lv.atoms):
            for q in self.atom_parts[i]:
                t = self.parts[q]
                if lv.last[k]:
                    is_last[q_local] = 1
                    offs.append(t.weights)
                    leafw.append(t.weights)
                else:
                    offs.append(t.offsets[lv.depth[k]])
                    leafw.append(t.offsets[lv.depth[k]])
                q_local += 1
        L, P = bound.shape[1], LO.shape[1]
        nb = np.empty((cap, L + 1), dtype=np.int64)
        NLO = np.empty((cap, P), dtype=np.int64)
        NHI = np.empty((cap, P), dtype=np.int64)
        nw = np.empty(cap, dtype=np.int64)
        cols = self.lv_parts[level]
        LO, HI, bound = np.ascontiguousarray(LO), np.ascontiguousarray(HI), np.ascontiguousarray(bound)
        if n_parts == 2 and len(lv.atoms) == 2:  # two single-run atoms: no tuple indexing
            dirs = []
            for k, i in enumerate(lv.atoms):  # level-0 directories (CSR row pointers)
                t = self.parts[self.atom_parts[i][0]]
                dirs += [t.dense0, t.base0] if lv.depth[k] == 0 else [_NO_DIR, 0]
            m = extend_frontier_pair(vals[0], offs[0], leafw[0], bool(is_last[0]), cols[0],
                                     vals[1], offs[1], leafw[1], bool(is_last[1]), cols[1],
                                     LO, HI, lo, hi, bound, w, nb, NLO, NHI, nw, *dirs)
        else:
            pvals, plo, phi, pstart = _pad_parts(vals, lo, hi, self.lv_atom_start[level])
            extra = len(pvals) - n_parts
            pad = (_NO_DIR,) * extra
            m = extend_frontier(pvals, tuple(offs) + pad, tuple(leafw) + pad,
                                np.concatenate([is_last, np.full(extra, is_last[-1], dtype=np.int64)]),
                                np.asarray(list(cols) + [-1] * extra, dtype=np.int64),
                                pstart, LO, HI, plo, phi, bound, w, nb, NLO, NHI, nw)
        if m < 0:
            raise WeightOverflowError(f"a weight product under prefix {bound[-1 - m].tolist()} does not fit in int64")
        nb, NLO, NHI, nw = nb[:m], NLO[:m], NHI[:m], nw[:m]
        keep = _apply_filters(lv, nb, skip_bounds=True)
        if keep is not None and not keep.all():
            nb, nw, NLO, NHI = nb[keep], nw[keep], NLO[keep], NHI[keep]
        if level == len(self.plan) - 1:
            yield _checked_total(nw) if count_only else (nb, nw)
        else:
            yield from self.blocks(level + 1, nb, nw, NLO, NHI, count_only)


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
    fused : force (True) or forbid (False) the fused trie kernels; default: use them when
        every extender exposes ``trie_parts()``.
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
    if plan is None:  # callers that run the same query every tick pass their cached plan
        plan = _plan(atoms, order, filters)
    if fused is None:
        fused = all(hasattr(a.extender, "trie_parts") for a in atoms)
    if not atoms:
        raise QueryError("a join needs at least one atom")
    whole = None
    if fused:
        run = _TrieRun(atoms, plan)
        whole = None if run.empty else run.whole(count_only)
        if run.empty:
            blocks = iter([0] if count_only else [])
        elif whole is not None:
            blocks = iter([whole])
        else:
            bound, w, lo, hi = run.start()
            blocks = run.blocks(0, bound, w, lo, hi, count_only)
    else:
        blocks = _generic_blocks(atoms, plan, count_only)
    if count_only:
        return _checked_total(np.array(list(blocks), dtype=np.int64))
    keys, ws = [], []
    out_cols = [order.index(v) for v in (output if output is not None else order)]
    if whole is not None and out_cols == list(range(len(order))):
        # one breadth-first pass emits its rows sorted, unique and without zero weights:
        # already a consolidated Z-set
        b, w = whole
        return ZSet(np.ascontiguousarray(b), np.ascontiguousarray(w))
    for b, w in blocks:
        keys.append(b[:, out_cols])
        ws.append(w)
    if not keys:
        return ZSet.empty(len(out_cols))
    k = np.concatenate(keys)
    w = np.concatenate(ws)
    return ZSet.from_arrays(k, w, arity=len(out_cols))


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
        self._programs: dict = {}  # _TermsProgram per (live terms, parts per atom)
        self._layout = None  # see _fused_layout

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
            kinds = term_kinds(n, i)
            spec, _ = self._spec(kinds, tuple(self.orders[i]))
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
        """``(sources, terms)`` for ``_fused_delta``, or ``None`` when some term's plan
        cannot run in ``run_terms``: the distinct ``(source, kind, columns)`` views
        the terms read, and per term ``(the source of its delta atom, the index of each of
        its atoms' view, the index of its delta atom's view)``. Cached."""
        if self._layout is None:
            n = len(self.atoms)
            keys: dict = {}
            terms = []
            for i in range(n):
                spec, plan = self._spec(term_kinds(n, i), tuple(self.orders[i]))
                if not plan.fusable:
                    self._layout = False
                    return None
                idx = tuple([keys.setdefault((id(src), kind, cols), (len(keys), src, kind, cols))[0]
                             for src, kind, cols, _ in spec])
                terms.append((self.atoms[i][0], idx, idx[i]))
            self._layout = ([(src, kind, cols) for _, src, kind, cols in keys.values()], terms)
        return self._layout or None

    def _fused_delta(self) -> ZSet | None:
        """ΔQ's rows through one ``run_terms`` call, or ``None`` when some term cannot
        (its plan has a callable filter or a constant, an extender has no tries, or a
        frontier would exceed ``SLICE_ROWS`` rows)."""
        layout = self._fused_layout()
        if layout is None:
            return None
        sources, terms = layout
        stacked: list = [None] * len(sources)  # per distinct view: (stacked tables, parts, the view or None)
        live, tables, n_parts = [], [], []
        rows = 0
        for i, (src, idx, d) in enumerate(terms):
            if src.delta_is_empty():
                continue
            counts = []
            for j in idx:
                st = stacked[j]
                if st is None:
                    st = stacked[j] = _view_tables(*sources[j])
                    if st is None:
                        return None
                counts.append(st[1])
                tables.append(st[0])
            if 0 in counts:  # an atom without rows: the term is empty
                del tables[len(tables) - len(idx):]
                continue
            live.append(i)
            n_parts.append(tuple(counts))
            delta_table, r = stacked[d][0], len(sources[d][2])
            rows += int(delta_table[r - 1, 1]) if stacked[d][1] == 1 else int(delta_table[r - 1::r, 1].sum())
        if not live:
            return ZSet.empty(len(self.output))
        prog = self._program(tuple(live), tuple(n_parts))
        shares = SHARES_PER_THREAD * THREADS if rows >= DELTA_SHARE_ROWS and THREADS > 1 else 1
        status, keys, w = prog.run(np.concatenate(tables), SLICE_ROWS, shares)
        del stacked  # the views (and their tries) were alive while the kernel read them
        if status < 0:  # too big to hold, or an overflow: the term-by-term path streams or raises
            return None
        return self.fused_rows(keys, w)

    def _program(self, live: tuple[int, ...], n_parts: tuple[tuple[int, ...], ...]) -> _TermsProgram:
        """The ``_TermsProgram`` of the terms ``live`` whose atoms' views have ``n_parts``
        parts (cached: built once per shape of the indexes)."""
        key = (live, n_parts)
        prog = self._programs.get(key)
        if prog is None:
            programs = []
            for i, counts in zip(live, n_parts):
                spec, plan = self._spec(term_kinds(len(self.atoms), i), tuple(self.orders[i]))
                programs.append((plan, self.orders[i], counts, [len(cols) for _, _, cols, _ in spec], i))
            prog = self._programs[key] = _TermsProgram(programs, self.output)
        return prog

    def fused_program(self, parts) -> tuple[_TermsProgram, list[tuple]] | None:
        """For a caller that stacks the table itself (``kernels.tick.edge_tick``): the
        program of every term, and the views ``(source, kind, columns)`` whose part tables
        it reads, in order, given ``parts(source, kind, columns)``, a view's number of
        parts. ``None`` when some term cannot run fused (see ``_fused_delta``) or a view
        would have no parts."""
        layout = self._fused_layout()
        if layout is None:
            return None
        sources, terms = layout
        counts = [parts(*v) for v in sources]
        if 0 in counts:
            return None
        views, n_parts = [], []
        for _, idx, _ in terms:
            views.extend(sources[j] for j in idx)
            n_parts.append(tuple(counts[j] for j in idx))
        return self._program(tuple(range(len(terms))), tuple(n_parts)), views

    def fused_rows(self, keys, w) -> ZSet:
        """ΔQ from the rows a fused program wrote (several terms may emit one row)."""
        return ZSet(*consolidate(keys, w)) if keys.shape[0] else ZSet.empty(len(self.output))

    def delta(self, count_only: bool = False) -> ZSet | int:
        """ΔQ for the staged tick: one generic join per atom whose delta is not empty.

        Rows are computed for all terms in one jitted call (``kernels.term.run_terms``) when
        every term can run there; otherwise (callable filters, constants, extenders without
        tries, a frontier too big to hold) term by term through ``generic_join``.
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
            kinds = term_kinds(n, i)
            results.append(self._run(kinds, tuple(self.orders[i]), count_only))
        if count_only:
            return _checked_total(np.array(results, dtype=np.int64))
        out = ZSet.empty(len(self.output))
        for r in results:
            out = out + r
        return out


def _view_tables(src, kind: str, cols: tuple[int, ...]):
    """``(stacked part tables, parts, the view or None)`` of ``src.view(kind, cols)``, or
    ``None`` when the view has no tries. A source with ``view_table`` (``indexes``'
    relations) answers without making the view; it keeps the tries alive itself."""
    vt = getattr(src, "view_table", None)
    if vt is not None:
        table, parts = vt(kind, cols)
        return table, parts, None
    view = src.view(kind, cols)
    if not hasattr(view, "trie_parts"):
        return None
    if hasattr(view, "parts_table"):
        t = view.parts_table()
        return t, t.shape[0] // view.arity, view
    parts = view.trie_parts()
    t = np.concatenate([p.table() for p in parts]) if parts else np.zeros((0, 6), dtype=np.int64)
    return t, len(parts), view


def _seed_levels(plan: list[_Level], n_parts, arity, delta_atom: int) -> int:
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


class _TermsProgram:
    """The slot programs of several delta terms concatenated for ``kernels.term.run_terms``;
    data independent (built once per set of live terms and parts per atom, see ``_skeleton``).

    ``at``: per slot, its row in the stacked ``TrieArrays.table()`` rows of every part of
    every term; ``deep``: slots whose column is not their part's level 0 (no directory);
    ``fixed``: the ``LAST``/``COL``/``UNIT`` columns; ``part_rows``: each part's level-0 row.
    ``term_seed``: per term, the arity of its delta atom when that atom has one part and
    binds a variable at each of the first levels (``kernels.term._seed`` finds them), else 0.
    """

    __slots__ = ("at", "deep", "fixed", "part_rows", "shape", "term_levels", "term_parts", "out_cols",
                 "first_part", "term_seed", "_slots", "_terms")

    def __init__(self, terms: list, output: list[str]):
        """``terms``: per term ``(plan, order, n_parts per atom, arity per atom, its delta
        atom)``."""
        at, deep, fixed, part_rows, out_cols, first_part, term_seed = [], [], [], [], [], [], []
        shape = [[] for _ in range(8)]
        term_levels, term_parts = [0], [0]
        row0 = 0  # this term's first table row
        n_slots = n_atoms = n_bnd = n_ne = 0
        for plan, order, n_parts, arity, delta_atom in terms:
            first_part.append(term_parts[-1] + sum(n_parts[:delta_atom]))
            term_seed.append(_seed_levels(plan, n_parts, arity, delta_atom))
            slot_part, slot_depth, slot_last, sk = _skeleton(plan, n_parts)
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
            out_cols.append([list(order).index(v) for v in output])
        cat = lambda xs: np.ascontiguousarray(np.concatenate(xs), dtype=np.int64)  # noqa: E731
        self.at, self.deep, self.part_rows = cat(at), cat(deep), cat(part_rows)
        self.fixed = np.ascontiguousarray(np.concatenate(fixed), dtype=np.int64)
        self.shape = tuple(cat(xs) for xs in shape)
        self.term_levels = np.array(term_levels, dtype=np.int64)
        self.term_parts = np.array(term_parts, dtype=np.int64)
        self.out_cols = np.array(out_cols, dtype=np.int64).reshape(len(terms), len(output))
        self.first_part = np.array(first_part, dtype=np.int64)
        self.term_seed = np.array(term_seed, dtype=np.int64)
        self._slots = (self.at, self.deep, self.fixed, self.part_rows)  # run's arguments, in order
        self._terms = (self.term_levels, self.term_parts, self.out_cols)

    def program_args(self, limit: int = SLICE_ROWS) -> tuple:
        """``run_program``'s arguments after the table and before ``share, shares``
        (what ``kernels.tick.edge_tick`` takes after its gather map)."""
        return (*self._slots, *self.shape, *self._terms, limit, self.first_part, self.term_seed)

    def run(self, table, limit: int, shares: int = 1):
        """``(status, keys, w)`` from ``run_terms`` over ``table``, the stacked
        ``TrieArrays.table()`` of the terms' atoms' parts in order; with ``shares > 1``,
        the rows in that many shares, on this thread and up to ``THREADS - 1`` helpers
        (``wcoj.shares``; the kernels release the GIL), each share holding up to ``limit``
        rows per level. The caller keeps the parts alive: the kernel reads their
        addresses."""
        args = (table, *self.program_args(limit))
        if shares <= 1:
            status, _, keys, w = run_program(*args, 0, 1)
            return status, keys, w
        outs = run_shares(lambda i: run_program(*args, i, shares), shares, THREADS)
        bad = [o[0] for o in outs if o[0] < 0]
        if bad:
            return bad[0], None, None
        return (sum(int(o[0]) for o in outs), np.concatenate([o[2] for o in outs]),
                np.concatenate([o[3] for o in outs]))


class _Shape:
    """A stand-in extender of a given arity, for validating atoms before any data exists."""

    def __init__(self, arity: int):
        self.arity = arity
