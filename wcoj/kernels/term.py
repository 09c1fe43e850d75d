"""A whole Generic Join, every level, in one jitted call.

``extend_frontier`` extends one level per call, and the Python between two calls (slicing
ranges, narrowing by ``<`` filters, allocating the next frontier) costs more than the
kernel itself when a tick changes a few edges. ``run_levels`` runs the same breadth-first
loop inside one call: level by level, every row of the frontier is extended (the atom with
the fewest candidates proposes, the others are searched), the next frontier is written in
full, and only then does the next level start. Nothing about the order of work changes;
only the interpreter leaves the loop.

A join is described by *slots*: one per (level, participating part), rows of the table
``S`` (``int64[n_slots, SLOT_FIELDS]``): the address and length of the part's values at the atom's
column for that level (``S[s, V]``, ``S[s, N]``), the address of its offsets into the next
column or, at the atom's last column, of its leaf weights (``S[s, O]``), the part's level-0
directory when the column is the part's first (address, length and base: ``S[s, D]``,
``S[s, DN]``, ``S[s, B]``; length 0 otherwise, and a negative length ``-bits`` for a bit
set of the level's values instead, see ``level0_bits``), whether the column is the atom's last
(``S[s, LAST]``), the part's column in the frontier's range arrays (``S[s, COL]``), and
whether every leaf weight of the part is 1 (``S[s, UNIT]``).
The arrays are read through their addresses (``TrieArrays.table``): a Numba tuple of arrays
indexed at run time copies the whole tuple at every access, which cost more than the join.
The caller keeps the arrays alive during the call. Level ``l`` owns slots
``level_slots[l]:level_slots[l + 1]``, grouped by atom:
``atom_bounds[level_atoms[l]:level_atoms[l + 1]]`` are the atoms' first slots followed
by the level's end. ``<`` filters narrow ranges: ``bnd_col[i]``, ``bnd_upper[i]`` for
``i`` in ``bnd_off[l]:bnd_off[l + 1]`` (upper 0: the value must exceed the bound column,
1: stay below it). ``!=`` filters skip candidates: the value must differ from column
``ne_col[i]`` for ``i`` in ``ne_off[l]:ne_off[l + 1]``.

When a part's range is the whole of its level 0 and the part has a directory, a value is
found by one array access instead of a search: this is what makes a tick's probes of the
big base index cost O(1) each.

A delta term's first levels bind its delta atom's variables, so ``run_terms`` finds them by
walking that atom's tuples (``_seed``), one lookup per other part and value, and only the
levels after them run the proposer loop above.

Inputs are int64 only. Numba's cache does not see edits to the helpers imported from
``intersect`` and ``weights``: clear ``__pycache__`` after editing those.
"""

import ctypes

import numpy as np
from llvmlite import ir
from numba import config, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .intersect import spread_chunks
from .weights import _add_overflows, _mul_overflows

__all__ = ["address_table", "level0_bits", "run_levels", "run_terms", "run_program", "slot_table", "count_tail",
           "count_tail_parallel", "TOO_BIG", "SLOT_FIELDS"]

# The helpers a join calls per row or per candidate never allocate, so they are compiled
# without Numba's reference counting (the ``_nrt`` option): with it, each call counted
# references to its array arguments on entry and exit, two atomic operations per array and
# call (16 per row in ``_candidates``), because Numba's pruning of those pairs gives up on
# paths longer than 15 blocks. Without it, an allocation in such a helper fails to compile.
# ``_nrt`` is underscored in Numba (pinned in pyproject.toml): a version without it fails
# loudly at the first compile ("Unrecognized options"), never silently.
row_kernel = njit(cache=True, nogil=True, _nrt=False)


def _inlined(f):
    """A twin of the row helper ``f`` that Numba inlines where it is called, for the
    hottest call sites only: a call passes each array as seven or nine values and a row
    makes several calls, but inlining everywhere doubled the cold compile time."""
    return njit(cache=True, nogil=True, _nrt=False, inline="always")(getattr(f, "py_func", f))

TOO_BIG = -(1 << 62)  # status: a level's frontier would exceed the row limit
SLOT_FIELDS = 9
V, N, O, D, DN, B, LAST, COL, UNIT = range(SLOT_FIELDS)
AHEAD = 8  # rows of a frontier whose ranges are prefetched ahead of the one being extended
PROBE_AHEAD = 8  # values between the prefetch stages of _probe_row
GALLOP_RATIO = 32  # a two-part count gallops through the longer side past this size ratio

if config.DISABLE_JIT:  # the pure-Python twin reads the same memory through ctypes
    def _load(addr, i):
        return ctypes.c_int64.from_address(int(addr) + 8 * int(i)).value

    def _prefetch(addr):
        pass
else:
    @intrinsic
    def _prefetch(typingctx, addr):
        """Ask the cache for the line at ``addr`` (``llvm.prefetch``: a read, kept close)."""
        def codegen(context, builder, signature, args):
            i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0")
            builder.call(fn, [builder.inttoptr(args[0], i8p), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()
        return types.void(types.int64), codegen


    @intrinsic
    def _load(typingctx, addr, i):
        """``int64`` at ``addr + 8 * i``."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            return builder.load(builder.gep(ptr, [args[1]]))
        return types.int64(types.int64, types.int64), codegen


@njit(cache=True, nogil=True)
def address_table(values, nexts, dense0, base0):
    """``TrieArrays.table()``: per level ``j`` the address and length of ``values[j]`` and
    the address of ``nexts[j]`` (its offsets, or the leaf weights at the last level); for
    level 0 the address, length and base of ``dense0`` when it is not empty.

    One call instead of a Python ``__array_interface__`` lookup per array (~1.5 us each,
    and every tick makes new tries).
    """
    t = np.zeros((len(values), 6), dtype=np.int64)
    for j in range(len(values)):
        t[j, 0] = values[j].ctypes.data
        t[j, 1] = values[j].shape[0]
        t[j, 2] = nexts[j].ctypes.data
    if dense0.shape[0]:
        t[0, 3] = dense0.ctypes.data
        t[0, 4] = dense0.shape[0]
        t[0, 5] = base0
    return t


@njit(cache=True, nogil=True)
def level0_bits(values0, table):
    """A bit set of the sorted level-0 values ``values0`` (bit ``x - values0[0]``, in
    ``int64`` words), recorded in row 0 of the trie's ``table`` as its directory with a
    negative length: address, ``-bits``, base. Returns the words (keep them alive).

    A search in a small run's level 0 then starts with one bit test, and most values a
    tick looks up are in no small run: the test answers for them.
    """
    base = values0[0]
    n_bits = values0[-1] - base + 1
    bits = np.zeros((n_bits + 63) >> 6, dtype=np.int64)
    for i in range(values0.shape[0]):
        k = values0[i] - base
        bits[k >> 6] |= np.int64(1) << (k & 63)
    table[0, 3] = bits.ctypes.data
    table[0, 4] = -(bits.shape[0] << 6)
    table[0, 5] = base
    return bits


@njit(cache=True, nogil=True, inline="always")
def _absent(S, s, x):
    """Whether slot ``s``'s level-0 bit set (``S[s, DN] < 0``) rules ``x`` out."""
    k = x - S[s, B]
    return k < 0 or k >= -S[s, DN] or (_load(S[s, D], k >> 6) >> (k & 63)) & 1 == 0


@njit(cache=True, nogil=True, inline="always")
def _bsearch(addr, lo, hi, x):
    """First position p in [lo, hi) with value >= x (hi if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if _load(addr, mid) < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, inline="always")
def _gallop(addr, lo, hi, x):
    """``_bsearch`` for a cursor that moves forward: exponential steps from ``lo`` first,
    so the cost is O(log distance moved), not O(log range)."""
    if lo >= hi or _load(addr, lo) >= x:
        return lo
    step = 1
    prev = lo
    cur = lo + 1
    while cur < hi and _load(addr, cur) < x:
        prev = cur
        step *= 2
        cur = prev + step
    return _bsearch(addr, prev + 1, min(cur, hi), x)  # values[prev] < x <= values[cur]


@njit(cache=True, nogil=True, inline="always")
def _narrow(addr, lo, hi, x, upper):
    """``[lo, hi)`` cut to the values ``> x`` (``upper`` False) or ``< x`` (True)."""
    if lo >= hi:
        return lo, hi
    if not upper and _load(addr, lo) > x:   # common: the whole range already qualifies
        return lo, hi
    if upper and _load(addr, hi - 1) < x:
        return lo, hi
    left, right = lo, hi
    while left < right:
        mid = (left + right) >> 1
        v = _load(addr, mid)
        if (v <= x) if not upper else (v < x):
            left = mid + 1
        else:
            right = mid
    return (lo, left) if upper else (left, hi)


@row_kernel
def _ranges(l, r, S, level_slots, bnd_off, bnd_col, bnd_upper, LO, HI, bound, lo, hi):
    """Row ``r``'s ranges for level ``l``'s slots into ``lo``/``hi``, narrowed by the
    level's ``<`` filters against ``bound[r]`` (the values bound so far)."""
    s0 = level_slots[l]
    for j in range(level_slots[l + 1] - s0):
        c = S[s0 + j, COL]
        lo[j] = LO[r, c]
        hi[j] = HI[r, c]
    for i in range(bnd_off[l], bnd_off[l + 1]):
        b = bound[r, bnd_col[i]]
        for j in range(level_slots[l + 1] - s0):
            lo[j], hi[j] = _narrow(S[s0 + j, V], lo[j], hi[j], b, bnd_upper[i] != 0)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _proposer(lo, hi, ab, a0, n_atoms, s0):
    """(atom with the fewest candidates, its count), or (-1, 0) when an atom has none."""
    best, best_size = -1, 0
    for a in range(n_atoms):
        size = 0
        for j in range(ab[a0 + a] - s0, ab[a0 + a + 1] - s0):
            size += hi[j] - lo[j]
        if size == 0:
            return -1, 0
        if best < 0 or size < best_size:
            best, best_size = a, size
    return best, best_size


@row_kernel
def _candidates(l, r, S, level_slots, ab, a0, n_atoms, bnd_off, bnd_col, bnd_upper, LO, HI, bound, lo, hi):
    """Row ``r``'s ranges for level ``l`` into ``lo``/``hi`` and its proposer: ``(atom,
    candidates)``, or ``(-1, 0)`` when there are none.

    The proposer is the atom with the fewest values before the level's ``<`` filters, and
    only its ranges are narrowed by them: every value the level accepts is one it proposes,
    so narrowing the others changes no result, and it would cost a search per part and
    row; worse, a narrowed whole-level range loses its O(1) directory lookups.
    """
    s0 = level_slots[l]
    for j in range(level_slots[l + 1] - s0):
        c = S[s0 + j, COL]
        lo[j] = LO[r, c]
        hi[j] = HI[r, c]
    best, size = _proposer(lo, hi, ab, a0, n_atoms, s0)
    if best < 0 or bnd_off[l] == bnd_off[l + 1]:
        return best, size
    size = 0
    for j in range(ab[a0 + best] - s0, ab[a0 + best + 1] - s0):
        for i in range(bnd_off[l], bnd_off[l + 1]):
            lo[j], hi[j] = _narrow(S[s0 + j, V], lo[j], hi[j], bound[r, bnd_col[i]], bnd_upper[i] != 0)
        size += hi[j] - lo[j]
    return (best, size) if size > 0 else (-1, 0)


@njit(cache=True, nogil=True, inline="always")
def _prefetch_lookups(S, s0, ab, a0, n_atoms, best, i, ahead):
    """For ``_next``: prefetch the directory entries, in every other atom's parts that
    have one, of the proposer's (one part, slot ``ab[a0 + best]``) value at ``i + 2 *
    ahead``, and the offsets of its value at ``i + ahead``."""
    sp = ab[a0 + best]
    va, n = S[sp, V], S[sp, N]
    walk = S[sp, DN] > 0  # a level 0 with a directory proposes in order: dense, it walks the others
    for a in range(n_atoms):
        if a == best:
            continue
        for s in range(ab[a0 + a], ab[a0 + a + 1]):
            dn = S[s, DN]
            if dn <= 0 or (walk and S[s, N] < 2 * n):
                continue
            if i + 2 * ahead < n:
                k = _load(va, i + 2 * ahead) - S[s, B]
                if 0 <= k < dn:
                    _prefetch(S[s, D] + 8 * k)
            if i + ahead < n and S[s, LAST] == 0:
                k = _load(va, i + ahead) - S[s, B]
                if 0 <= k < dn:
                    p = _load(S[s, D], k)
                    if p >= 0:
                        _prefetch(S[s, O] + 8 * p)


@row_kernel
def _next(S, s0, ab, a0, n_atoms, best, lo, hi, cur, hits, ahead):
    """The next value all atoms hold, with each slot's position in ``hits`` (-1 absent).

    The proposer's parts are merged in order; every other part is searched with a
    cursor that only moves forward, or looked up in its level-0 directory when the row's
    range is the whole level.

    With ``ahead`` > 0 and a proposer of one part, the directory entries of the values
    ``2 * ahead`` places on in the proposer's values, and the offsets of those ``ahead``
    places on, are prefetched, past the row's range too: a tick's frontier takes its
    ranges in order from the delta's values, so those are the next rows' values. On a
    large graph each directory and offsets lookup of a tick missed the cache. Not when
    the proposer is a level 0 with a directory and more than half the other's size (a
    batch's level 0): its probes walk the other level in order, as the hardware expects.
    """
    p0, p1 = ab[a0 + best] - s0, ab[a0 + best + 1] - s0
    ahead = ahead if p1 - p0 == 1 and S[s0 + p0, N] > ahead else 0  # (a small delta: nothing ahead)
    if ahead > 0:
        _prefetch_lookups(S, s0, ab, a0, n_atoms, best, cur[p0], ahead)
    while True:
        have = False
        x = 0
        for j in range(p0, p1):
            if cur[j] < hi[j]:
                v = _load(S[s0 + j, V], cur[j])
                if not have or v < x:
                    x, have = v, True
        if not have:
            return False, x
        if ahead > 0:
            _prefetch_lookups(S, s0, ab, a0, n_atoms, best, cur[p0] + 1, ahead)
        for j in range(p0, p1):
            if cur[j] < hi[j] and _load(S[s0 + j, V], cur[j]) == x:
                hits[j] = cur[j]
                cur[j] += 1
            else:
                hits[j] = -1
        ok = True
        for a in range(n_atoms):
            if a == best:
                continue
            found = False
            for j in range(ab[a0 + a] - s0, ab[a0 + a + 1] - s0):
                s = s0 + j
                if S[s, DN] > 0 and lo[j] == 0 and hi[j] == S[s, N]:
                    k = x - S[s, B]
                    p = _load(S[s, D], k) if 0 <= k < S[s, DN] else -1
                    hits[j] = p
                    found = found or p >= 0
                elif S[s, DN] < 0 and lo[j] == 0 and hi[j] == S[s, N] and _absent(S, s, x):
                    hits[j] = -1  # not in this part's level 0 (its bit set says)
                else:  # a fresh whole-level range: binary search; else gallop on
                    p = _gallop(S[s, V], cur[j], hi[j], x) if cur[j] > lo[j] or hi[j] < S[s, N] else \
                        _bsearch(S[s, V], lo[j], hi[j], x)
                    cur[j] = p
                    if p < hi[j] and _load(S[s, V], p) == x:
                        hits[j] = p
                        found = True
                    else:
                        hits[j] = -1
            if not found:
                ok = False
                break
        if ok:
            return True, x


@njit(cache=True, nogil=True, inline="always")
def _distinct(x, bound, r, ne_off, ne_col, l):
    """Whether ``x`` differs from every column level ``l``'s ``!=`` filters name."""
    for i in range(ne_off[l], ne_off[l + 1]):
        if bound[r, ne_col[i]] == x:
            return False
    return True


@row_kernel
def _weight(wt, S, s0, ab, a0, n_atoms, hits):
    """``wt`` times each ending atom's summed leaf weight; ``(False, _)`` on overflow."""
    for a in range(n_atoms):
        q0 = ab[a0 + a]
        if S[q0, LAST] == 0:
            continue
        s = np.int64(0)
        if ab[a0 + a + 1] - q0 == 1 and S[q0, UNIT] != 0:  # one part, a set: weight 1
            continue
        for q in range(q0, ab[a0 + a + 1]):
            h = hits[q - s0]
            if h >= 0:
                lw = _load(S[q, O], h)
                if _add_overflows(s, lw):
                    return False, wt
                s += lw
        if _mul_overflows(wt, s):
            return False, wt
        wt *= s
        if wt == 0:
            return True, wt
    return True, wt


@njit(cache=True, nogil=True, inline="always")
def _prefetch_ranges(S, s0, s1, LO, HI, r):
    """Prefetch the first values of row ``r``'s ranges at the level owning slots
    ``s0:s1`` (not whole levels: those are looked up, not walked)."""
    for s in range(s0, s1):
        c = S[s, COL]
        a, b = LO[r, c], HI[r, c]
        if b > a and (a > 0 or b < S[s, N]):
            _prefetch(S[s, V] + 8 * a)


@njit(cache=True, nogil=True)
def _grown(a, m, cap):
    """A copy of ``a`` with room for ``cap`` rows, its first ``m`` rows kept."""
    out = np.empty((cap,) + a.shape[1:], dtype=a.dtype)
    out[:m] = a[:m]
    return out


_candidates_in, _next_in, _weight_in = _inlined(_candidates), _inlined(_next), _inlined(_weight)

GROW, OVERFLOW = 1, 2  # _extend_rows stopped: the next frontier must grow, or a weight overflowed


@row_kernel
def _extend_rows(l, r, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                 bound, w, LO, HI, nb, nw, NLO, NHI, m, limit, lo, hi, cur, hits):
    """Extend the frontier's rows from ``r`` on at level ``l`` into ``nb``/``nw``/``NLO``/``NHI``
    from row ``m`` on, until a row might not fit: ``(code, r, m, need)``, ``code`` 0 when
    every row is done, ``GROW`` when row ``r`` needs room for ``need`` rows, ``OVERFLOW``
    when row ``r``'s weight product overflows, ``TOO_BIG`` at the row limit.

    The loop of ``run_levels`` over a level's rows, kept apart because ``run_levels``
    allocates (it needs Numba's reference counting) and this loop does not: it compiles
    as a ``row_kernel``. Inside ``run_levels``, the loop reassigned the arrays it writes
    when they grew, and Numba counted references to all four on every row.
    """
    n = bound.shape[0]
    P = LO.shape[1]
    cap = nb.shape[0]
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    ahead = 0  # see _next: a level with directories prefetches its lookups
    for s in range(s0, s1):
        if S[s, DN] > 0:
            ahead = AHEAD
    while r < n:
        if r + AHEAD < n:
            _prefetch_ranges(S, s0, s1, LO, HI, r + AHEAD)
        best, size = _candidates_in(l, r, S, level_slots, atom_bounds, a0, n_atoms, bnd_off, bnd_col,
                                    bnd_upper, LO, HI, bound, lo, hi)
        if best < 0:
            r += 1
            continue
        need = min(m + size, limit)  # this row emits at most `size` rows
        if need > cap:
            return GROW, r, m, need
        for j in range(s1 - s0):
            cur[j] = lo[j]
        while True:
            ok, x = _next_in(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, ahead)
            if not ok:
                break
            if not _distinct(x, bound, r, ne_off, ne_col, l):
                continue
            fine, wt = _weight_in(w[r], S, s0, atom_bounds, a0, n_atoms, hits)
            if not fine:
                return OVERFLOW, r, m, 0
            if wt == 0:
                continue
            if m == limit:
                return TOO_BIG, r, m, 0
            for c in range(l):
                nb[m, c] = bound[r, c]
            nb[m, l] = x
            for p in range(P):
                NLO[m, p] = LO[r, p]
                NHI[m, p] = HI[r, p]
            for j in range(s1 - s0):
                c = S[s0 + j, COL]
                h = hits[j]
                if S[s0 + j, LAST] == 0 and h >= 0:
                    NLO[m, c] = _load(S[s0 + j, O], h)
                    NHI[m, c] = _load(S[s0 + j, O], h + 1)
                else:
                    NLO[m, c] = 0
                    NHI[m, c] = 0
            nw[m] = wt
            m += 1
        r += 1
    return 0, r, m, 0


@njit(cache=True, nogil=True)
def run_levels(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
               LO0, HI0, stop_level, limit):
    """Materialise the frontier after levels ``0 .. stop_level - 1``.

    Starts from one empty prefix whose part ranges are ``LO0``/``HI0`` (``int64[P]``).
    Returns ``(status, bound, w, LO, HI)``: ``status`` is the number of rows, ``-1 - r``
    when a weight product of row ``r`` of some level overflows int64 (``bound`` is then
    that level's input), or ``TOO_BIG`` when a level's frontier would exceed ``limit``
    rows (the caller then streams in slices). The frontier grows as rows are found, so
    the limit bounds memory, not the candidates looked at.
    """
    P = LO0.shape[0]
    bound = np.zeros((1, 0), dtype=np.int64)
    w = np.ones(1, dtype=np.int64)
    return _levels_from(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                        bound, w, LO0.copy().reshape(1, P), HI0.copy().reshape(1, P), stop_level, limit)


@njit(cache=True, nogil=True)
def _levels_from(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                 bound, w, LO, HI, stop_level, limit):
    """``run_levels`` from the frontier ``bound``/``w``/``LO``/``HI`` of the levels before
    ``bound.shape[1]`` on."""
    P = LO.shape[1]
    smax = 1
    for l in range(stop_level):
        smax = max(smax, level_slots[l + 1] - level_slots[l])
    lo = np.empty(smax, dtype=np.int64)
    hi = np.empty(smax, dtype=np.int64)
    cur = np.empty(smax, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    for l in range(bound.shape[1], stop_level):
        n = bound.shape[0]
        if n == 0:
            break
        # one pass: the next frontier grows by doubling, up to the limit (a counting pass
        # first would repeat every row's searches, and at large frontiers their misses)
        cap = min(max(2 * n, 64), limit)
        nb = np.empty((cap, l + 1), dtype=np.int64)
        nw = np.empty(cap, dtype=np.int64)
        NLO = np.empty((cap, P), dtype=np.int64)
        NHI = np.empty((cap, P), dtype=np.int64)
        m = r = 0
        while True:
            code, r, m, need = _extend_rows(l, r, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col,
                                            bnd_upper, ne_off, ne_col, bound, w, LO, HI, nb, nw, NLO, NHI, m,
                                            limit, lo, hi, cur, hits)
            if code == GROW:
                cap = min(max(2 * cap, need), limit)
                nb, nw, NLO, NHI = _grown(nb, m, cap), _grown(nw, m, cap), _grown(NLO, m, cap), _grown(NHI, m, cap)
            elif code == OVERFLOW:
                return -1 - r, bound, w, LO, HI
            elif code == TOO_BIG:
                return TOO_BIG, bound, w, LO, HI
            else:
                break
        bound, w, LO, HI = nb[:m], nw[:m], NLO[:m], NHI[:m]
    if bound.shape[1] < stop_level:  # the frontier emptied early: no rows, full width
        bound = np.zeros((0, stop_level), dtype=np.int64)
    return bound.shape[0], bound, w, LO, HI


@row_kernel
def _seed_value(l, x, dpos, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off,
                ne_col, dcol, vals, wts, RLO, RHI, hits, cur):
    """``_seed``'s step at level ``l``: whether the delta part's value ``x`` (at its
    position ``dpos``) passes the level's filters against ``vals[0, :l]`` and every other
    atom holds it in the ranges ``RLO[l]``/``RHI[l]`` (searched from the cursors ``cur[l]``,
    which only move forward); then the ranges under ``x`` into
    ``RLO[l + 1]``/``RHI[l + 1]`` and the weight so far into ``wts[l + 1]``. Returns
    ``(ok, overflowed)``."""
    s0, s1 = level_slots[l], level_slots[l + 1]
    for i in range(bnd_off[l], bnd_off[l + 1]):
        b = vals[0, bnd_col[i]]
        if (x >= b) if bnd_upper[i] != 0 else (x <= b):
            return False, False
    if not _distinct(x, vals, 0, ne_off, ne_col, l):
        return False, False
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    for a in range(n_atoms):
        found = False
        for s in range(atom_bounds[a0 + a], atom_bounds[a0 + a + 1]):
            j = s - s0
            c = S[s, COL]
            lo, hi = RLO[l, c], RHI[l, c]
            if c == dcol:
                p = dpos
            elif S[s, DN] > 0 and lo == 0 and hi == S[s, N]:
                k = x - S[s, B]
                p = _load(S[s, D], k) if 0 <= k < S[s, DN] else -1
            elif S[s, DN] < 0 and lo == 0 and hi == S[s, N] and _absent(S, s, x):
                p = -1
            else:  # as in _next: the level's values ascend while its parent stays (the same
                # lookup as _next's; one inlined helper for both made _next 4 to 6% slower)
                q = cur[l, j]
                p = _gallop(S[s, V], q, hi, x) if q > lo or hi < S[s, N] else _bsearch(S[s, V], lo, hi, x)
                cur[l, j] = p
                if p >= hi or _load(S[s, V], p) != x:
                    p = -1
            hits[j] = p
            found = found or p >= 0
        if not found:
            return False, False
    fine, wt = _weight(wts[l], S, s0, atom_bounds, a0, n_atoms, hits)
    if not fine:
        return False, True
    if wt == 0:
        return False, False
    wts[l + 1] = wt
    for p in range(RLO.shape[1]):
        RLO[l + 1, p] = RLO[l, p]
        RHI[l + 1, p] = RHI[l, p]
    for j in range(s1 - s0):
        c = S[s0 + j, COL]
        h = hits[j]
        if S[s0 + j, LAST] == 0 and h >= 0:
            RLO[l + 1, c] = _load(S[s0 + j, O], h)
            RHI[l + 1, c] = _load(S[s0 + j, O], h + 1)
        else:
            RLO[l + 1, c] = 0
            RHI[l + 1, c] = 0
    return True, False


_seed_value_in = _inlined(_seed_value)


@row_kernel
def _seed_walk(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col, seed, dcol,
               ds, da, ahead, pos, end, cur, vals, wts, RLO, RHI, hits, nb, nw, NLO, NHI):
    """``_seed``'s walk (which allocates, so needs Numba's reference counting; this loop
    does not, see ``_extend_rows``): ``(rows written, -1)``, or ``(-1, level)`` when a
    weight product overflows at that level."""
    P = RLO.shape[1]
    m = 0
    l = 0
    while l >= 0:
        q = pos[l]
        if q >= end[l]:
            l -= 1
            if l >= 0:
                pos[l] += 1
            continue
        x = _load(S[ds[l], V], q)
        if ahead[l] > 0:
            _prefetch_lookups(S, level_slots[l], atom_bounds, level_atoms[l], level_atoms[l + 1] - level_atoms[l] - 1,
                              da[l], q, ahead[l])
        ok, bad = _seed_value_in(l, x, q, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                              ne_off, ne_col, dcol, vals, wts, RLO, RHI, hits, cur)
        if bad:
            return -1, l
        if ok:
            vals[0, l] = x
            if l < seed - 1:
                l += 1
                pos[l], end[l] = RLO[l, dcol], RHI[l, dcol]
                for j in range(level_slots[l + 1] - level_slots[l]):
                    cur[l, j] = RLO[l, S[level_slots[l] + j, COL]]
                continue
            for c in range(seed):
                nb[m, c] = vals[0, c]
            nw[m] = wts[seed]
            for p in range(P):
                NLO[m, p] = RLO[seed, p]
                NHI[m, p] = RHI[seed, p]
            m += 1
        pos[l] += 1
    return m, -1


@njit(cache=True, nogil=True)
def _seed(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col, LO0, HI0,
          seed, dcol, limit):
    """``run_levels(..., seed, limit)`` when levels ``0 .. seed - 1`` bind the columns of
    one atom of one part, column ``dcol`` (a delta term's delta atom; ``seed`` is its
    arity): the frontier is that part's tuples under its range ``LO0[dcol]:HI0[dcol]``
    which pass the levels' filters and which every other atom of those levels holds.

    The generic levels would find the same rows in the same order, but per row they
    pick a proposer, merge its parts with cursors and search every other part, where a
    delta's value only needs one lookup per other part: at 1,000 changes a tick those
    two levels cost as much as the last one. The part's trie is walked depth first, the
    other atoms' ranges kept per level; the lookups of the values ``AHEAD`` positions on
    are prefetched (``_prefetch_lookups``), as the generic levels do.
    """
    P = LO0.shape[0]
    ds = np.zeros(seed, dtype=np.int64)   # per level: the part's slot, its atom in the level
    da = np.zeros(seed, dtype=np.int64)
    smax = 1
    for l in range(seed):
        smax = max(smax, level_slots[l + 1] - level_slots[l])
        for a in range(level_atoms[l], level_atoms[l + 1] - 1):
            for s in range(atom_bounds[a], atom_bounds[a + 1]):
                if S[s, COL] == dcol:
                    ds[l], da[l] = s, a - level_atoms[l]
    a, b = LO0[dcol], HI0[dcol]
    for l in range(seed - 1):  # the tuples under the range: at most this many rows
        if b > a:
            a, b = _load(S[ds[l], O], a), _load(S[ds[l], O], b)
    n = max(b - a, 0)
    vals = np.zeros((1, seed), dtype=np.int64)
    if n > limit:
        return TOO_BIG, vals, np.ones(1, dtype=np.int64), LO0.reshape(1, P), HI0.reshape(1, P)
    nb = np.empty((n, seed), dtype=np.int64)
    nw = np.empty(n, dtype=np.int64)
    NLO = np.empty((n, P), dtype=np.int64)
    NHI = np.empty((n, P), dtype=np.int64)
    RLO = np.empty((seed + 1, P), dtype=np.int64)
    RHI = np.empty((seed + 1, P), dtype=np.int64)
    RLO[0] = LO0
    RHI[0] = HI0
    wts = np.ones(seed + 1, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    pos = np.zeros(seed, dtype=np.int64)
    end = np.zeros(seed, dtype=np.int64)
    pos[0], end[0] = LO0[dcol], HI0[dcol]
    cur = np.empty((seed, smax), dtype=np.int64)
    for j in range(level_slots[1] - level_slots[0]):
        cur[0, j] = LO0[S[level_slots[0] + j, COL]]
    ahead = np.zeros(seed, dtype=np.int64)  # see _extend_rows: levels with directories prefetch
    for l in range(seed):
        for s in range(level_slots[l], level_slots[l + 1]):
            if S[s, DN] > 0 and S[s, COL] != dcol:
                ahead[l] = AHEAD
    m, l = _seed_walk(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                      seed, dcol, ds, da, ahead, pos, end, cur, vals, wts, RLO, RHI, hits, nb, nw, NLO, NHI)
    if m < 0:  # a weight product overflowed at level l: its prefix
        return np.int64(-1), vals[:, :l].copy(), wts[l:l + 1].copy(), RLO[l:l + 1].copy(), RHI[l:l + 1].copy()
    return np.int64(m), nb[:m], nw[:m], NLO[:m], NHI[:m]


@njit(cache=True, nogil=True)
def slot_table(T, at, deep, fixed, part_rows):
    """The slot table of a join program from its parts' stacked ``TrieArrays.table()``
    rows ``T``: slot ``s`` copies row ``at[s]`` into ``V..B`` (directory fields zeroed
    when ``deep[s]``, its column is not the part's level 0) and ``fixed[s]`` into
    ``LAST, COL, UNIT``. Also returns the parts' whole level-0 ranges ``(lo, hi)``."""
    n = at.shape[0]
    S = np.empty((n, SLOT_FIELDS), dtype=np.int64)
    for s in range(n):
        for f in range(B + 1):
            S[s, f] = T[at[s], f]
        if deep[s]:
            S[s, D] = 0
            S[s, DN] = 0
            S[s, B] = 0
        S[s, LAST] = fixed[s, 0]
        S[s, COL] = fixed[s, 1]
        S[s, UNIT] = fixed[s, 2]
    hi = np.empty(part_rows.shape[0], dtype=np.int64)
    for q in range(part_rows.shape[0]):
        hi[q] = T[part_rows[q], N]
    return S, np.zeros_like(hi), hi


@njit(cache=True, nogil=True)
def run_terms(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
              term_levels, term_parts, out_cols, LO0, HI0, limit, first_part, term_seed):
    """Every term of a delta rule, each a whole join (``run_levels``), in one call.

    The terms' slot programs are concatenated: term ``t`` owns entries
    ``term_levels[t]:term_levels[t + 1]`` of ``level_slots``, ``level_atoms``, ``bnd_off``
    and ``ne_off`` (their values index the shared ``S``, ``atom_bounds``, ``bnd_col`` and
    ``ne_col`` directly), and parts ``term_parts[t]:term_parts[t + 1]`` of ``LO0``/``HI0``
    (``S[s, COL]`` counts from the term's first part). Row ``i`` of term ``t``'s result is
    written as ``bound[i, out_cols[t, c]]`` for each output column ``c``. When
    ``term_seed[t]`` > 0, the term's first ``term_seed[t]`` levels bind the columns of its
    delta atom, of one part, ``first_part[t]``: they are found by ``_seed``.

    Returns ``(status, term, keys, w)``: the rows of every term one after the other
    (unconsolidated; several terms may emit the same row), or ``status < 0`` and the
    term it concerns (``TOO_BIG`` or an overflow, as from ``run_levels``).
    """
    n_terms = term_levels.shape[0] - 1
    n_out = out_cols.shape[1]
    outs = []
    weights = []
    total = 0
    for t in range(n_terms):
        a, b = term_levels[t], term_levels[t + 1]
        p0, p1 = term_parts[t], term_parts[t + 1]
        if term_seed[t] > 0:
            status, bound, w, LO, HI = _seed(S, level_slots[a:b], level_atoms[a:b], atom_bounds, bnd_off[a:b],
                                             bnd_col, bnd_upper, ne_off[a:b], ne_col, LO0[p0:p1], HI0[p0:p1],
                                             term_seed[t], first_part[t] - p0, limit)
            if status >= 0:
                status, bound, w, _, _ = _levels_from(S, level_slots[a:b], level_atoms[a:b], atom_bounds,
                                                      bnd_off[a:b], bnd_col, bnd_upper, ne_off[a:b], ne_col,
                                                      bound, w, LO, HI, b - a - 1, limit)
        else:
            status, bound, w, _, _ = run_levels(S, level_slots[a:b], level_atoms[a:b], atom_bounds,
                                                bnd_off[a:b], bnd_col, bnd_upper, ne_off[a:b], ne_col,
                                                LO0[p0:p1], HI0[p0:p1], b - a - 1, limit)
        if status < 0:
            return status, t, np.zeros((0, n_out), dtype=np.int64), np.zeros(0, dtype=np.int64)
        outs.append(bound)
        weights.append(w)
        total += bound.shape[0]
    keys = np.empty((total, n_out), dtype=np.int64)
    wt = np.empty(total, dtype=np.int64)
    m = 0
    for t in range(n_terms):
        bound = outs[t]
        for i in range(bound.shape[0]):
            for c in range(n_out):
                keys[m, c] = bound[i, out_cols[t, c]]
            wt[m] = weights[t][i]
            m += 1
    return np.int64(total), np.int64(-1), keys, wt


@njit(cache=True, nogil=True)
def run_program(T, at, deep, fixed, part_rows, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col,
                bnd_upper, ne_off, ne_col, term_levels, term_parts, out_cols, limit, first_part, term_seed, share,
                shares):
    """``run_terms`` over the slot table ``slot_table(T, at, deep, fixed, part_rows)``: a
    tick's delta terms in one call from their parts' stacked tables.

    With ``shares > 1``, only share ``share`` of each term's rows: the level-0 range of
    part ``first_part[t]`` of term ``t`` (its delta atom's, whose level 0 is the term's
    first variable) is cut into ``shares`` equal slices and slice ``share`` kept, so the
    shares of a large tick partition its rows and can run on several threads.
    ``term_seed``: see ``run_terms``."""
    S, lo, hi = slot_table(T, at, deep, fixed, part_rows)
    if shares > 1:
        for t in range(first_part.shape[0]):
            p = first_part[t]
            n0 = hi[p]
            lo[p], hi[p] = n0 * share // shares, n0 * (share + 1) // shares
    return run_terms(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
                     term_levels, term_parts, out_cols, lo, hi, limit, first_part, term_seed)


@row_kernel
def _count_two(S, sa, la, ha, sb, lb, hb):
    """Sum over the common values of two single-part ranges of the product of their leaf
    weights (the count itself when both parts are sets). Returns ``(ok, sum)``."""
    acc = np.int64(0)
    if ha <= la or hb <= lb:
        return True, acc
    if ha - la > hb - lb:  # walk the shorter side
        sa, la, ha, sb, lb, hb = sb, lb, hb, sa, la, ha
    va, vb = S[sa, V], S[sb, V]
    unit = S[sa, UNIT] != 0 and S[sb, UNIT] != 0
    gallop = (hb - lb) >= GALLOP_RATIO * (ha - la)
    j = lb
    for i in range(la, ha):
        x = _load(va, i)
        if gallop:
            j = _gallop(vb, j, hb, x)
        else:
            while j < hb and _load(vb, j) < x:
                j += 1
        if j >= hb:
            break
        if _load(vb, j) == x:
            if unit:
                acc += 1
            else:
                wa, wb = _load(S[sa, O], i), _load(S[sb, O], j)
                if _mul_overflows(wa, wb) or _add_overflows(acc, wa * wb):
                    return False, acc
                acc += wa * wb
            j += 1
    return True, acc


@row_kernel
def _count_last(l, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                ne_off, ne_col, LO, HI, bound, r, lo, hi, cur, hits):
    """Sum over the last level's matches of row ``r`` of the product of atom weights.

    Returns ``(ok, sum)``; ``ok`` False on overflow.
    """
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    _ranges(l, r, S, level_slots, bnd_off, bnd_col, bnd_upper, LO, HI, bound, lo, hi)
    if s1 - s0 == 2 and n_atoms == 2 and ne_off[l] == ne_off[l + 1]:  # a tight merge
        return _count_two(S, s0, lo[0], hi[0], s0 + 1, lo[1], hi[1])
    best, _ = _proposer(lo, hi, atom_bounds, a0, n_atoms, s0)
    acc = np.int64(0)
    if best < 0:
        return True, acc
    for j in range(s1 - s0):
        cur[j] = lo[j]
    while True:
        ok, x = _next(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, 0)
        if not ok:
            return True, acc
        if not _distinct(x, bound, r, ne_off, ne_col, l):
            continue
        fine, p = _weight(np.int64(1), S, s0, atom_bounds, a0, n_atoms, hits)
        if not fine or _add_overflows(acc, p):
            return False, acc
        acc += p


@row_kernel
def _probe_row(S, sp, pl, ph, sd, sg, sf, fl, fh, mark, mark_lo, mark_size, b0, b1, bnd_col, bnd_upper,
               bound, r, L):
    """One row's count over its last two levels when they have a triangle's shape: each
    value ``x`` the proposing slot ``sp`` holds in ``[pl, ph)`` is looked up in the
    level-0 directory of slot ``sd``, whose children (slot ``sg``, narrowed by the
    ``<`` bounds ``b0:b1``; column ``L`` is ``x``) are probed against the byte map of the
    fixed slot ``sf``'s range ``[fl, fh)``. Returns ``(ok, count)``.

    The loop is ``_count_tail_rows``' general one with nothing between the lookups, and
    the directory entry, the offsets and the first children of the values ahead are
    prefetched in three stages: on a large graph every lookup misses the cache, and
    this lets the misses of several values overlap instead of queueing one by one.
    """
    va, d, dn, base, off, ga = S[sp, V], S[sd, D], S[sd, DN], S[sd, B], S[sd, O], S[sg, V]
    end = S[sp, N]  # prefetch past ph: a batch's next rows' ranges follow this one's
    acc = np.int64(0)
    for i in range(pl, ph):
        if i + 3 * PROBE_AHEAD < end:
            k = _load(va, i + 3 * PROBE_AHEAD) - base
            if 0 <= k < dn:
                _prefetch(d + 8 * k)
        if i + 2 * PROBE_AHEAD < end:
            k = _load(va, i + 2 * PROBE_AHEAD) - base
            if 0 <= k < dn:
                p = _load(d, k)
                if p >= 0:
                    _prefetch(off + 8 * p)
        if i + PROBE_AHEAD < end:
            k = _load(va, i + PROBE_AHEAD) - base
            if 0 <= k < dn:
                p = _load(d, k)
                if p >= 0:
                    _prefetch(ga + 8 * _load(off, p))
        x = _load(va, i)
        k = x - base
        if k < 0 or k >= dn:
            continue
        p = _load(d, k)
        if p < 0:
            continue
        gl, gh = _load(off, p), _load(off, p + 1)
        for b in range(b0, b1):
            c = bnd_col[b]
            gl, gh = _narrow(ga, gl, gh, x if c == L else bound[r, c], bnd_upper[b] != 0)
        if gh - gl > 8 * (fh - fl) + 16:  # a long list against a short one
            ok, s = _count_two(S, sf, fl, fh, sg, gl, gh)
            if not ok:
                return False, acc
        else:
            s = np.int64(0)
            for j in range(gl, gh):
                v = _load(ga, j) - mark_lo
                if 0 <= v < mark_size:
                    s += mark[v]
        acc += s
    return True, acc


_probe_row_in = _inlined(_probe_row)


@njit(cache=True, nogil=True)
def _count_tail_rows(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                     ne_off, ne_col, bound, w, LO, HI, mark_slot, mark_lo, mark_size, r0, r1):
    """Weighted count of the completions of rows ``r0:r1`` over the last one or two levels.

    ``mark_slot`` >= 0 names a last-level slot whose range is fixed per row (its part
    takes no part in the second-to-last level) and whose values lie in ``[mark_lo,
    mark_lo + mark_size)``; the other of the level's two slots must then be a set too.
    The fixed side is marked once per row in a byte map and every match of the level
    before probes the other side's values against it: O(|other|) per match, instead of
    a merge that walks both lists (a hub's neighbour list would be walked once per match).

    Returns ``(-1, total)`` or ``(r, 0)`` for the first row ``r`` whose count overflows.
    """
    n_levels = level_slots.shape[0] - 1
    L = bound.shape[1]
    P = LO.shape[1]
    smax = 1
    for l in range(L, n_levels):
        smax = max(smax, level_slots[l + 1] - level_slots[l])
    lo = np.empty(smax, dtype=np.int64)
    hi = np.empty(smax, dtype=np.int64)
    cur = np.empty(smax, dtype=np.int64)
    hits = np.empty(smax, dtype=np.int64)
    total = np.int64(0)
    if L == n_levels - 1:  # one level left: count it directly
        for r in range(r0, r1):
            ok, s = _count_last(L, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                                ne_off, ne_col, LO, HI, bound, r, lo, hi, cur, hits)
            if not ok or _mul_overflows(s, w[r]) or _add_overflows(total, s * w[r]):
                return r, np.int64(0)
            total += s * w[r]
        return -1, total
    # two levels left: extend level L row by row and count level L + 1 for each match,
    # without materialising level L's frontier
    l = L
    s0, s1 = level_slots[l], level_slots[l + 1]
    a0 = level_atoms[l]
    n_atoms = level_atoms[l + 1] - a0 - 1
    lo2 = np.empty(smax, dtype=np.int64)
    hi2 = np.empty(smax, dtype=np.int64)
    cur2 = np.empty(smax, dtype=np.int64)
    hits2 = np.empty(smax, dtype=np.int64)
    one_b = np.empty((1, L + 1), dtype=np.int64)
    one_lo = np.empty((1, P), dtype=np.int64)
    one_hi = np.empty((1, P), dtype=np.int64)
    t0 = level_slots[l + 1]
    use_mark = mark_slot >= 0
    mark = np.zeros(mark_size if use_mark else 0, dtype=np.uint8)
    jf = mark_slot - t0            # the fixed slot's and the probing slot's local index
    jg = 1 - jf
    g_slot = t0 + jg
    # the shape of a triangle's last two levels (see _probe_row): level l has two atoms
    # of one part each, one with a level-0 directory whose part is the probing side
    fast = use_mark and s1 - s0 == 2 and n_atoms == 2 and ne_off[l] == ne_off[l + 1]
    jd = 0
    if fast:
        fast = False
        for jd in range(2):
            sd, sp = s0 + jd, s0 + 1 - jd
            if (S[sd, DN] > 0 and S[sd, LAST] == 0 and S[sd, COL] == S[g_slot, COL]
                    and (S[sp, LAST] == 0 or S[sp, UNIT] != 0)):
                fast = True
                break
    for r in range(r0, r1):
        best, _ = _candidates(l, r, S, level_slots, atom_bounds, a0, n_atoms, bnd_off, bnd_col, bnd_upper,
                              LO, HI, bound, lo, hi)
        if best < 0:
            continue
        if use_mark:
            fa, fl, fh = S[mark_slot, V], LO[r, S[mark_slot, COL]], HI[r, S[mark_slot, COL]]
            for i in range(fl, fh):
                mark[_load(fa, i) - mark_lo] = 1
        if fast and best == 1 - jd and lo[jd] == 0 and hi[jd] == S[s0 + jd, N]:
            ok2, acc = _probe_row_in(S, s0 + 1 - jd, lo[1 - jd], hi[1 - jd], s0 + jd, g_slot, mark_slot, fl,
                                     fh, mark, mark_lo, mark_size, bnd_off[l + 1], bnd_off[l + 2], bnd_col,
                                     bnd_upper, bound, r, L)
            for i in range(fl, fh):
                mark[_load(fa, i) - mark_lo] = 0
            if not ok2 or _mul_overflows(acc, w[r]) or _add_overflows(total, acc * w[r]):
                return r, np.int64(0)
            total += acc * w[r]
            continue
        for j in range(s1 - s0):
            cur[j] = lo[j]
        for c in range(L):
            one_b[0, c] = bound[r, c]
        for p in range(P):
            one_lo[0, p] = LO[r, p]
            one_hi[0, p] = HI[r, p]
        acc = np.int64(0)
        while True:
            ok, x = _next(S, s0, atom_bounds, a0, n_atoms, best, lo, hi, cur, hits, 0)
            if not ok:
                break
            if not _distinct(x, bound, r, ne_off, ne_col, l):
                continue
            fine, wt = _weight(np.int64(1), S, s0, atom_bounds, a0, n_atoms, hits)
            if not fine:
                return r, np.int64(0)
            if wt == 0:
                continue
            one_b[0, L] = x
            for j in range(s1 - s0):
                c = S[s0 + j, COL]
                h = hits[j]
                if S[s0 + j, LAST] == 0 and h >= 0:
                    one_lo[0, c] = _load(S[s0 + j, O], h)
                    one_hi[0, c] = _load(S[s0 + j, O], h + 1)
                else:
                    one_lo[0, c] = 0
                    one_hi[0, c] = 0
            if use_mark:
                # only the probing side is narrowed by the level's bounds: they constrain
                # the value itself, so the fixed side's membership needs no narrowing
                ga = S[g_slot, V]
                gl, gh = one_lo[0, S[g_slot, COL]], one_hi[0, S[g_slot, COL]]
                for i in range(bnd_off[l + 1], bnd_off[l + 2]):
                    gl, gh = _narrow(ga, gl, gh, one_b[0, bnd_col[i]], bnd_upper[i] != 0)
                if gh - gl > 8 * (fh - fl) + 16:  # a long list against a short one
                    ok2, s = _count_two(S, mark_slot, fl, fh, g_slot, gl, gh)
                else:
                    s = np.int64(0)
                    for k in range(gl, gh):
                        v = _load(ga, k) - mark_lo
                        if 0 <= v < mark_size:
                            s += mark[v]
                    ok2 = True
            else:
                ok2, s = _count_last(l + 1, S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col,
                                     bnd_upper, ne_off, ne_col, one_lo, one_hi, one_b, 0, lo2, hi2,
                                     cur2, hits2)
            if not ok2 or _mul_overflows(s, wt) or _add_overflows(acc, s * wt):
                return r, np.int64(0)
            acc += s * wt
        if use_mark:
            for i in range(fl, fh):
                mark[_load(fa, i) - mark_lo] = 0
        if _mul_overflows(acc, w[r]) or _add_overflows(total, acc * w[r]):
            return r, np.int64(0)
        total += acc * w[r]
    return -1, total


@njit(cache=True, nogil=True)
def count_tail(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
               bound, w, LO, HI, mark_slot, mark_lo, mark_size):
    """The weighted count of all completions of the frontier ``bound``/``w``/``LO``/``HI``.

    The frontier's width ``L`` must be the number of levels minus one or two; the last
    two levels are fused (each match of level ``L`` is counted at once, never stored).
    ``mark_slot`` (-1: none), ``mark_lo``, ``mark_size``: see ``_count_tail_rows``.
    Returns ``(-1, total)``, or ``(r, 0)`` when the count under row ``r`` overflows int64.
    """
    return _count_tail_rows(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                            ne_off, ne_col, bound, w, LO, HI, mark_slot, mark_lo, mark_size, 0,
                            bound.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def count_tail_parallel(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                        ne_off, ne_col, bound, w, LO, HI, mark_slot, mark_lo, mark_size):
    """``count_tail`` over chunks of rows on all cores (for whole-graph counts), taken
    in the order of ``intersect.spread_chunks`` so that every thread gets hub rows."""
    n = bound.shape[0]
    n_chunks = min(n, 64)
    bad = np.full(n_chunks, -1, dtype=np.int64)
    sums = np.zeros(n_chunks, dtype=np.int64)
    chunk = spread_chunks(n_chunks)
    for i in prange(n_chunks):
        c = chunk[i]
        r0 = c * n // n_chunks
        r1 = (c + 1) * n // n_chunks
        b, s = _count_tail_rows(S, level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper,
                                ne_off, ne_col, bound, w, LO, HI, mark_slot, mark_lo, mark_size, r0, r1)
        bad[c] = b
        sums[c] = s
    total = np.int64(0)
    for c in range(n_chunks):
        if bad[c] >= 0:
            return bad[c], np.int64(0)
        if _add_overflows(total, sums[c]):
            return c * n // n_chunks, np.int64(0)
        total += sums[c]
    return -1, total


@njit(cache=True, nogil=True)
def row_weights(T, first, rows, out):
    """``out[i]``: the weight of ``rows[i]`` summed over every part (0 where absent).

    ``T`` stacks the parts' ``TrieArrays.table()`` rows; part ``q``'s level ``j`` is row
    ``first[q] + j``; ``rows`` is ``int64[n, arity]``. Level 0 is looked up in the part's
    directory when it has one, every other level by binary search in its parent's range.
    """
    n, r = rows.shape
    for i in range(n):
        total = np.int64(0)
        for q in range(first.shape[0]):
            t = first[q]
            lo, hi = np.int64(0), T[t, 1]
            found = True
            for j in range(r):
                x = rows[i, j]
                if j == 0 and T[t, 4] > 0:
                    k = x - T[t, 5]
                    p = _load(T[t, 3], k) if 0 <= k < T[t, 4] else -1
                else:
                    p = _bsearch(T[t + j, 0], lo, hi, x)
                    if p >= hi or _load(T[t + j, 0], p) != x:
                        p = -1
                if p < 0:
                    found = False
                    break
                if j < r - 1:
                    lo, hi = _load(T[t + j, 2], p), _load(T[t + j, 2], p + 1)
                else:
                    lo = p
            if found:
                w = _load(T[t + r - 1, 2], lo)
                if _add_overflows(total, w):
                    return i
                total += w
        out[i] = total
    return -1
