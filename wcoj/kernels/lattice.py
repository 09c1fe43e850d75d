"""Nested-time traces: the lattice join and distinct's corner sums, walking a trace's runs.

A trace run (``wcoj.trace``) is ``int64[n, arity + d]``, rows then times, sorted, with a
weight per entry. ``lattice_join`` reads every run of two traces through a *run table*,
``int64[runs, RUN_FIELDS + 2 d]`` (``wcoj.tables.RunTable`` lays it out and keeps the runs
alive; ``memory`` names the fields): per run the addresses of its keys and weights, its
length, and the coordinate-wise least and greatest time it holds, so a run whose times miss
a box is skipped without a look.

``lattice_distinct`` is the change of ``distinct`` at ``t`` (the inclusion-exclusion over
the corners of ``t`` of ``wcoj.operators.traces.lattice_delta``), and ``lattice_join`` is
``Σ_{t1 ⊔ t2 = t} a[t1] ⋈ b[t2]`` (``wcoj.operators.join``): one term
per corner ``m`` of ``{0, 1}^d``, where the a side takes the times ``t1`` with ``t1_j =
t_j`` for ``m_j = 1`` and ``t1_j < t_j`` otherwise, and the b side those with ``t2_j <=
t_j``, equal where ``m_j = 0``. Each side is consolidated per row within the box, as
``Trace.select`` would; the smaller side (by the run sizes in its box) is gathered whole and
the other side is looked up by its keys, galloping forward through each run.

Large inputs whose rows pack into few bits (a ``wcoj.rows.Packing`` passed in) go through
tables of one slot per packed row: the join sums its rows there once it has written a
quarter of the table's worth, and at a child's first epoch distinct keeps each row's
integral over the iterations so far in one (``integral_step`` answers a batch from it and
adds the batch). The helpers that read runs are in ``runs``.

Inputs are int64; weights are checked (a sum or product that leaves int64 is reported,
never wrapped).
"""

import numpy as np

from .memory import RUN_KEYS, RUN_N, RUN_WEIGHTS, grown, kernel, load, row_kernel
from .runs import (_cmp_at, _fields, _gather_box, _in_box, _in_corner, _pack_row, _run_meets,
                   _seek, _sort_rows, _sort_rows_within, _sum_rows_in_place)
from .zsets import _add_overflows, _mul_overflows

__all__ = ["lattice_join", "lattice_distinct", "integral_step", "lattice_next", "OK",
           "SUM_OVERFLOW", "PRODUCT_OVERFLOW", "DENSE", "RETRY"]

OK, SUM_OVERFLOW, PRODUCT_OVERFLOW = 0, 1, 2
DENSE, RETRY = 3, 4  # lattice_join's summed-in-a-table result, and its call again without
_NEG = -(2 ** 62)  # below every time: an open lower bound


_MORE_ENTRIES, _MORE_ROWS, _MORE_FIELDS, _GO_DENSE = 5, 6, 7, 8  # _join_keys asks its caller


@row_kernel
def _join_keys(g, s_addr, s_w, ns, nk, ot, ow, olo, ohi, cur, o_addr, o_w, s_a, s_b, s_starts, a_drives,
               a_map, b_map, out_k, out_w, m, dense, table, opart, lows, spans, shifts, dense_at):
    """``lattice_join``'s work for one corner, from the driving side's entry ``g`` on: each
    key of the driving side (``s_addr``/``s_w``, ``ns`` entries) looked up in the other
    side's runs (``ot`` in the box ``olo``..``ohi``, galloping from ``cur``) and its pairs
    written to ``out_k``/``out_w`` from row ``m`` (or summed into ``table`` when ``dense``).
    Returns ``(g, m, status, x, y)``: ``OK`` with every key done, an overflow as
    ``lattice_join`` reports it, or a request for more room before the key at ``g``
    (``_MORE_ENTRIES``/``_MORE_ROWS``/``_MORE_FIELDS`` of at least ``x``) or to switch to
    the table (``_GO_DENSE``), after which the caller calls again from ``g``.

    It allocates nothing, so Numba counts no references in it: in a kernel that does, every
    array passed to a helper or assigned in the loop cost two atomic operations per key,
    about half of a large join's time."""
    ostride = 8 * (ow + olo.shape[0])
    smap, omap = (a_map, b_map) if a_drives else (b_map, a_map)  # the driving side's columns, the other's
    while g < ns:
        key = s_addr[g]
        h = g + 1
        while h < ns and _cmp_at(s_addr[h], key, nk) == 0:
            h += 1
        # the other side's entries of this key in its box, from every run
        cnt = 0
        for r in range(ot.shape[0]):
            if not _run_meets(ot, r, olo, ohi):
                continue
            base, n = ot[r, RUN_KEYS], ot[r, RUN_N]
            p = _seek(base, ostride, cur[r], n, key, nk)
            cur[r] = p
            while p < n and _cmp_at(base + ostride * p, key, nk) == 0:
                cnt += 1
                p += 1
        if cnt == 0:
            g = h
            continue
        if cnt > o_addr.shape[0]:
            return g, m, _MORE_ENTRIES, max(cnt, 2 * o_addr.shape[0]), 0
        k = used = 0
        for r in range(ot.shape[0]):
            if not _run_meets(ot, r, olo, ohi):
                continue
            base, wbase, n = ot[r, RUN_KEYS], ot[r, RUN_WEIGHTS], ot[r, RUN_N]
            p = cur[r]
            k0 = k
            while p < n and _cmp_at(base + ostride * p, key, nk) == 0:
                row = base + ostride * p
                if _in_box(row, ow, olo, ohi):
                    o_addr[k], o_w[k] = row, load(wbase, p)
                    k += 1
                p += 1
            if k > k0:
                used += 1
        if used > 1 and k > 32:  # from several runs: many sorted here, a few by insertion below
            _sort_rows_within(o_addr, o_w, k, ow, s_a, s_b, s_starts)
        no, bad = _sum_rows_in_place(o_addr, o_w, k, ow, used > 1 and k <= 32)
        if bad >= 0:
            return g, m, SUM_OVERFLOW, 0, 0
        if not dense and dense_at > 0 and m + (h - g) * no > dense_at:
            return g, m, _GO_DENSE, 0, 0
        if dense:  # packed row = the driving row's fields + the other row's
            if no > opart.shape[0]:
                return g, m, _MORE_FIELDS, 2 * no, 0
            for q in range(no):
                opart[q] = _fields(o_addr[q], omap, lows, spans, shifts)
                if opart[q] < 0:
                    return g, 0, RETRY, 0, 0
            for i in range(g, h):
                sp, wi = _fields(s_addr[i], smap, lows, spans, shifts), s_w[i]
                if sp < 0:
                    return g, 0, RETRY, 0, 0
                for q in range(no):
                    if _mul_overflows(wi, o_w[q]):
                        return g, 0, RETRY, 0, 0
                    x = wi * o_w[q]
                    p = sp + opart[q]
                    if _add_overflows(table[p], x):
                        return g, 0, RETRY, 0, 0
                    table[p] += x
            g = h
            continue
        if m + (h - g) * no > out_k.shape[0]:
            return g, m, _MORE_ROWS, m + (h - g) * no, 0
        for i in range(g, h):
            for q in range(no):
                sa, sb = s_addr[i], o_addr[q]  # the a row and the b row
                if not a_drives:
                    sa, sb = sb, sa
                for c in range(a_map.shape[1]):
                    out_k[m, a_map[0, c]] = load(sa, a_map[1, c])
                for c in range(b_map.shape[1]):
                    out_k[m, b_map[0, c]] = load(sb, b_map[1, c])
                if _mul_overflows(s_w[i], o_w[q]):
                    return g, m, PRODUCT_OVERFLOW, s_w[i], o_w[q]
                out_w[m] = s_w[i] * o_w[q]
                m += 1
        g = h
    return g, m, OK, 0, 0


@kernel
def lattice_join(ta, tb, nk, arity_a, arity_b, t, a_map, b_map, lows, spans, shifts, dense_at):
    """``Σ_{t1 ⊔ t2 = t} a[t1] ⋈ b[t2]`` over the runs of two traces (module docstring),
    unconsolidated: ``(keys, weights, m, status, x, y)``, the first ``m`` rows valid.

    ``ta``/``tb``: run tables of the a and b traces (each with the batch at ``t`` as one
    more run); rows join on their first ``nk`` columns. Output column ``a_map[0, c]`` gets
    a row's column ``a_map[1, c]`` and ``b_map[0, c]`` b's column ``b_map[1, c]`` (as in
    ``zsets.cross_rows_into``). ``status`` is OK, or SUM_OVERFLOW / PRODUCT_OVERFLOW with
    ``x``, ``y`` the two weights that do not add up or multiply in int64 (row ``m`` then
    holds the output row at fault, for a product).

    ``dense_at`` > 0: once ``dense_at`` rows are out, the rest are summed in a table of one
    slot per output row packed by ``lows``/``spans``/``shifts`` (``wcoj.rows.Packing``, its
    ``highs - lows`` as ``spans``; every output value must lie in its column's range), a
    perfect-hash aggregate instead of a buffer of every row (the 10M rows of a
    1,000-person closure). The result is then consolidated and sorted: ``keys`` holds
    the packed rows in its one column, and ``status`` is ``DENSE``. A sum or product
    that leaves int64 there, or a value out of range, returns ``RETRY``: call again with
    ``dense_at`` 0 (which reports an overflow exactly).
    """
    d = t.shape[0]
    width = a_map.shape[1] + b_map.shape[1]
    cap = 16
    out_k, out_w = np.empty((cap, width), dtype=np.int64), np.empty(cap, dtype=np.int64)
    m = 0
    table = np.zeros(0, dtype=np.int64)
    dense = False
    opart = np.empty(16, dtype=np.int64)  # the other side's rows' packed fields, per key
    # a key's entries of the other side, and the scratch to sort them
    o_addr, o_w = np.empty(16, dtype=np.int64), np.empty(16, dtype=np.int64)
    s_a, s_b, s_starts = np.empty(16, dtype=np.int64), np.empty(16, dtype=np.int64), np.empty(17, dtype=np.int64)
    alo, ahi = np.empty(d, dtype=np.int64), np.empty(d, dtype=np.int64)
    blo, bhi = np.empty(d, dtype=np.int64), np.empty(d, dtype=np.int64)
    for mask in range(1 << d):
        empty = False
        for j in range(d):
            if (mask >> j) & 1:
                alo[j], ahi[j], blo[j], bhi[j] = t[j], t[j], _NEG, t[j]
            else:
                alo[j], ahi[j], blo[j], bhi[j] = _NEG, t[j] - 1, t[j], t[j]
                empty = empty or t[j] == 0  # times are never negative
        if empty:
            continue
        na = nb = 0
        for r in range(ta.shape[0]):
            if _run_meets(ta, r, alo, ahi):
                na += ta[r, RUN_N]
        for r in range(tb.shape[0]):
            if _run_meets(tb, r, blo, bhi):
                nb += tb[r, RUN_N]
        if na == 0 or nb == 0:
            continue
        a_drives = na <= nb
        if a_drives:
            s_addr, s_w, ns, bad = _gather_box(ta, arity_a, alo, ahi)
            ot, ow, olo, ohi = tb, arity_b, blo, bhi
        else:
            s_addr, s_w, ns, bad = _gather_box(tb, arity_b, blo, bhi)
            ot, ow, olo, ohi = ta, arity_a, alo, ahi
        if bad >= 0:
            return out_k, out_w, m, SUM_OVERFLOW, 0, 0
        cur = np.zeros(ot.shape[0], dtype=np.int64)
        g = 0
        while True:  # the keys in a kernel that allocates nothing; here only what it asks for
            g, m, status, x, y = _join_keys(g, s_addr, s_w, ns, nk, ot, ow, olo, ohi, cur, o_addr, o_w,
                                            s_a, s_b, s_starts, a_drives, a_map, b_map,
                                            out_k, out_w, m, dense, table, opart, lows, spans, shifts,
                                            dense_at)
            if status == OK:
                break
            if status == _MORE_ENTRIES:
                o_addr, o_w = np.empty(x, dtype=np.int64), np.empty(x, dtype=np.int64)
                s_a, s_b, s_starts = np.empty(x, dtype=np.int64), np.empty(x, dtype=np.int64), np.empty(x + 1, dtype=np.int64)
            elif status == _MORE_ROWS:
                cap = max(2 * cap, x)
                out_k, out_w = grown(out_k, m, cap), grown(out_w, m, cap)
            elif status == _MORE_FIELDS:
                opart = np.empty(x, dtype=np.int64)
            elif status == _GO_DENSE:  # sum from here on
                size = 1
                for c in range(width):
                    size += spans[c] << shifts[c]  # the greatest packed row, plus one
                table = np.zeros(size, dtype=np.int64)
                for r in range(m):
                    q = _pack_row(out_k.ctypes.data + 8 * width * r, width, lows, spans, shifts)
                    if q < 0 or _add_overflows(table[q], out_w[r]):
                        return out_k, out_w, 0, RETRY, 0, 0
                    table[q] += out_w[r]
                dense = True
                m = 0
            else:
                return out_k, out_w, m, status, x, y
    if not dense:
        return out_k, out_w, m, OK, 0, 0
    m = 0
    for p in range(table.shape[0]):
        if table[p] != 0:
            m += 1
    keys, w = np.empty((m, 1), dtype=np.int64), np.empty(m, dtype=np.int64)
    m = 0
    for p in range(table.shape[0]):
        if table[p] != 0:
            keys[m, 0], w[m] = p, table[p]
            m += 1
    return keys, w, m, DENSE, 0, 0


@kernel
def lattice_distinct(table, n_prior, arity, t, extra, scheduled):
    """The change of ``distinct`` at the lattice time ``t`` over whole rows
    (``wcoj.operators.traces.lattice_delta``): ``(rows, weights, m, bad, plan_rows,
    plan_its, s)``, the first ``m`` rows valid, sorted; ``bad`` >= 0 when a row's corner sum
    leaves int64 (row ``m`` then holds that row), else -1.

    ``table``: the run table of the prior trace (its first ``n_prior`` runs) and the batch
    at ``t`` (the runs after). A row can change only if, for every coordinate j, it has an
    entry at a time ``s <= t`` with ``s_j = t_j``. The candidates are the batch's rows,
    the rows of ``extra`` (int64[k, arity]), and unless ``scheduled``, when every
    coordinate's slice ``{s <= t, s_j = t_j}`` meets a prior run, every row with an entry
    of the current epoch up to ``t`` (a superset: a row that cannot change comes out 0).
    For each, its integral ``V`` at every corner ``t - e_S`` (``S`` a set of coordinates,
    the corner a valid time) and ``Σ_S (-1)^|S| H(V(t - e_S))``.

    ``scheduled`` (``t`` an (epoch, iteration) time): the caller passes as ``extra`` the
    rows of this epoch's earlier batches that an earlier epoch holds at this iteration,
    which are exactly the other rows that can change; and it gets, for the batch's rows,
    the plan ``(plan_its[:s], plan_rows[:s])``: every later iteration at which an earlier
    epoch holds one of them. (At a child's first epoch large batches take
    ``integral_step`` instead.)
    """
    d = t.shape[0]
    corners = np.empty((1 << d, d), dtype=np.int64)
    signs = np.empty(1 << d, dtype=np.int64)
    nco = 0
    for mask in range(1 << d):
        valid, sign = True, 1
        for j in range(d):
            bit = (mask >> j) & 1
            corners[nco, j] = t[j] - bit
            valid = valid and t[j] - bit >= 0
            sign = -sign if bit else sign
        if valid:
            signs[nco] = sign
            nco += 1
    lo, hi = np.empty(d, dtype=np.int64), t.copy()
    scan = d > 1 and not scheduled
    for j in range(d):  # does every slice meet a prior run?
        for c in range(d):
            lo[c] = t[c] if c == j else _NEG
        met = False
        for r in range(n_prior):
            met = met or _run_meets(table, r, lo, hi)
        scan = scan and met
    for c in range(d):
        lo[c] = t[c] if c == 0 else _NEG
    total = extra.shape[0]
    for r in range(table.shape[0]):
        if r >= n_prior or (scan and _run_meets(table, r, lo, hi)):
            total += table[r, RUN_N]
    cand = np.empty(total, dtype=np.int64)
    origin = np.zeros(total, dtype=np.int64)  # 1: a row of the batch
    n = 0
    stride = 8 * (arity + d)
    for r in range(table.shape[0]):
        if r < n_prior and not (scan and _run_meets(table, r, lo, hi)):
            continue
        base = table[r, RUN_KEYS]
        for p in range(table[r, RUN_N]):
            row = base + stride * p
            if r >= n_prior or _in_box(row, arity, lo, hi):
                if n == 0 or _cmp_at(cand[n - 1], row, arity) != 0:  # a run's rows are sorted
                    cand[n] = row
                    origin[n] = 1 if r >= n_prior else 0
                    n += 1
    if extra.shape[0]:
        base = extra.ctypes.data
        for p in range(extra.shape[0]):
            cand[n] = base + 8 * arity * p
            n += 1
    cand, origin = _sort_rows(cand, origin, n, arity)
    nc = 0
    for i in range(n):  # unique rows; a row is the batch's if any copy is
        if nc == 0 or _cmp_at(cand[nc - 1], cand[i], arity) != 0:
            cand[nc], origin[nc] = cand[i], origin[i]
            nc += 1
        elif origin[i]:
            origin[nc - 1] = 1
    nr = table.shape[0]
    for c in range(d):
        lo[c] = _NEG
    live = np.zeros(nr, dtype=np.bool_)  # the runs with a time <= t
    for r in range(nr):
        live[r] = _run_meets(table, r, lo, hi)
    plan = np.zeros(nr, dtype=np.bool_)  # the runs with an earlier epoch's later iteration
    if scheduled:
        lo[0], hi[0], lo[1], hi[1] = _NEG, t[0] - 1, t[1] + 1, 2 ** 62
        for r in range(n_prior):
            plan[r] = _run_meets(table, r, lo, hi)
    cur = np.zeros(nr, dtype=np.int64)
    sums = np.zeros(nco, dtype=np.int64)
    out_k, out_w = np.empty((nc, arity), dtype=np.int64), np.empty(nc, dtype=np.int64)
    cap = 16
    plan_rows, plan_its = np.empty((cap, arity), dtype=np.int64), np.empty(cap, dtype=np.int64)
    kstart = np.zeros(nr, dtype=np.int64)
    k = m = s = 0
    while True:  # the rows in a kernel that allocates nothing; here only the plan's room
        k, m, s, status = _distinct_rows(k, cand, origin, nc, table, live, plan, cur, kstart, arity, t,
                                         corners, signs, nco, sums, out_k, out_w, m, plan_rows, plan_its, s)
        if status == OK:
            return out_k, out_w, m, -1, plan_rows, plan_its, s
        if status == SUM_OVERFLOW:
            return out_k, out_w, m, k, plan_rows, plan_its, s
        cap *= 2
        plan_rows, plan_its = grown(plan_rows, s, cap), grown(plan_its, s, cap)


@row_kernel
def _distinct_rows(k, cand, origin, nc, table, live, plan, cur, kstart, arity, t, corners, signs, nco, sums,
                   out_k, out_w, m, plan_rows, plan_its, s):
    """``lattice_distinct``'s corner sums for the candidate rows from ``k`` on: returns
    ``(k, m, s, status)``, ``OK`` with every row done, ``SUM_OVERFLOW`` with row ``k`` at
    fault (written to ``out_k[m]``), or ``_MORE_ROWS`` when the plan is full before row
    ``k`` (its runs' positions rewound: the caller grows the plan and calls again). It
    allocates nothing, so Numba counts no references per row (``_join_keys``)."""
    nr = table.shape[0]
    stride = 8 * (arity + t.shape[0])
    while k < nc:
        key = cand[k]
        s0 = s
        for r in range(nr):  # where this row's lookups start, to look it up again
            kstart[r] = cur[r]
        for c in range(nco):
            sums[c] = 0
        for r in range(nr):
            planned = plan[r] and origin[k] == 1
            if not live[r] and not planned:
                continue
            base, wbase, nn = table[r, RUN_KEYS], table[r, RUN_WEIGHTS], table[r, RUN_N]
            p = _seek(base, stride, cur[r], nn, key, arity)
            while p < nn and _cmp_at(base + stride * p, key, arity) == 0:
                row = base + stride * p
                if planned and load(row, arity) < t[0] and load(row, arity + 1) > t[1]:
                    if s == plan_its.shape[0]:
                        for q in range(nr):  # this row again, from where it started
                            cur[q] = kstart[q]
                        return k, m, s0, _MORE_ROWS
                    for q in range(arity):
                        plan_rows[s, q] = load(key, q)
                    plan_its[s] = load(row, arity + 1)
                    s += 1
                for c in range(nco):
                    if _in_corner(row, arity, corners, c):
                        x = load(wbase, p)
                        if _add_overflows(sums[c], x):
                            for q in range(arity):  # row m: the row at fault
                                out_k[m, q] = load(key, q)
                            return k, m, s, SUM_OVERFLOW
                        sums[c] += x
                p += 1
            cur[r] = p
        delta = 0
        for c in range(nco):
            if sums[c] > 0:
                delta += signs[c]
        if delta != 0:
            for c in range(arity):
                out_k[m, c] = load(key, c)
            out_w[m] = delta
            m += 1
        k += 1
    return k, m, s, OK


@kernel
def integral_step(keys, weights, lows, spans, shifts, sums, out_k, out_w):
    """``distinct``'s change for a batch of consolidated rows given each row's integral so
    far in ``sums``, ``H(V + w) - H(V)`` per row, in batch order; adds
    the batch into ``sums``. Returns ``(m, bad)``: rows written to ``out_k``/``out_w``, and
    -1, -2 when a row lies outside the packing (``sums`` then unchanged), or the index of
    the row whose sum leaves int64."""
    n, arity = keys.shape
    for p in range(n):
        for c in range(arity):
            v = keys[p, c] - lows[c]
            if v < 0 or v > spans[c]:
                return 0, -2
    m = 0
    for p in range(n):
        q = 0
        for c in range(arity):
            q |= (keys[p, c] - lows[c]) << shifts[c]
        old, x = sums[q], weights[p]
        if _add_overflows(old, x):
            return m, p
        sums[q] = old + x
        change = (1 if old + x > 0 else 0) - (1 if old > 0 else 0)
        if change != 0:
            for c in range(arity):
                out_k[m, c] = keys[p, c]
            out_w[m] = change
            m += 1
    return m, -1


@kernel
def lattice_next(src, nk, src_arity, t, dst, dst_arity):
    """The least iteration after ``t``'s at which ``dst`` holds an entry of an earlier
    epoch whose key (first ``nk`` columns) is a key of the current epoch in ``src``: when
    nested rules may fire again without new input (``t`` an (epoch, iteration) time).
    Returns -1 when there is none.

    ``src``: run table of a trace and its batch at ``t``; its keys of the current epoch are
    those of its entries at times ``s <= t`` with ``s_0 = t_0``. ``dst``: a run table.
    """
    d = t.shape[0]
    lo, hi = np.empty(d, dtype=np.int64), t.copy()
    lo[0] = t[0]
    for j in range(1, d):
        lo[j] = _NEG
    total = 0
    for r in range(src.shape[0]):
        if _run_meets(src, r, lo, hi):
            total += src[r, RUN_N]
    keys = np.empty(total, dtype=np.int64)
    n = 0
    stride = 8 * (src_arity + d)
    for r in range(src.shape[0]):
        if not _run_meets(src, r, lo, hi):
            continue
        base = src[r, RUN_KEYS]
        for p in range(src[r, RUN_N]):
            row = base + stride * p
            if _in_box(row, src_arity, lo, hi) and (n == 0 or _cmp_at(keys[n - 1], row, nk) != 0):
                keys[n] = row
                n += 1
    keys, _ = _sort_rows(keys, np.zeros(n, dtype=np.int64), n, nk)
    # the entries of dst of an earlier epoch after this iteration
    lo[0], hi[0] = _NEG, t[0] - 1
    lo[1], hi[1] = t[1] + 1, 2 ** 62
    for j in range(2, d):
        lo[j], hi[j] = _NEG, 2 ** 62
    best = -1
    dstride = 8 * (dst_arity + d)
    cur = np.zeros(dst.shape[0], dtype=np.int64)
    for i in range(n):
        if i and _cmp_at(keys[i - 1], keys[i], nk) == 0:
            continue
        for r in range(dst.shape[0]):
            if not _run_meets(dst, r, lo, hi):
                continue
            base, m = dst[r, RUN_KEYS], dst[r, RUN_N]
            p = _seek(base, dstride, cur[r], m, keys[i], nk)
            cur[r] = p
            while p < m and _cmp_at(base + dstride * p, keys[i], nk) == 0:
                row = base + dstride * p
                if _in_box(row, dst_arity, lo, hi) and (best < 0 or load(row, dst_arity + 1) < best):
                    best = load(row, dst_arity + 1)
                p += 1
    return best
