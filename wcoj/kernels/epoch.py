"""A child circuit's epoch in one call: the fixed point of a recursive rule's update.

``run_epoch`` interprets a *program*, one row per node of the child in topological order
(``wcoj.epoch`` writes it from the circuit), once per iteration, until the fixed point,
exactly as ``wcoj.circuit.Circuit._run_epoch`` evaluates the same nodes: the same lattice
join, distinct and next-busy kernels (``lattice``) over the same run tables, the same
consolidations (``zsets``). What it saves is the interpreter's cost per node and
iteration (Python objects for every batch, trace and run table), which for a small
update is most of the time: a one-datom update of an ancestors view iterates ~10 times
over 13 nodes.

Values: a Z-set or indexed Z-set node holds sorted, consolidated rows and weights; a
trace node holds a run table (its runs before this epoch, from ``Trace.run_table``, and
one more row per batch appended in this epoch, pointing at arrays the call keeps). The
codes, with their fields (``CODE``, ``NODE``, inputs ``IN0``-``IN3``, parameters
``params[P_OFF: P_OFF + ...]``, the output's ``ARITY``, ``AUX``-``AUX3``):

- ``IMPORT``: import slot ``IN0``'s batch at iteration 0 (every iteration when ``AUX``);
- ``FEEDZ`` / ``FEEDT``: a Z-set / trace delay's value (slot ``IN0``), latched from its
  input at the end of each iteration (a Z-set delay starts the epoch empty);
- ``INDEX``: ``index_with(params)`` (``AUX``: the key columns are a prefix, the rows stay in
  order); ``MAP``: a projection on the columns ``params``, consolidated;
- ``APPEND``: ``trace_append(IN0, IN1)``, the batch as a new run at ``(epoch, i)``, kept for
  trace slot ``AUX`` (``run_meta``);
- ``JOIN``: ``join_lattice(IN0, IN1, IN2, IN3)`` on ``AUX`` key columns, traces of rows of
  ``AUX2`` and ``AUX3`` columns, output columns by the maps at ``P_OFF`` (``P_LEN``
  columns from a) as in ``lattice_join``, with its pairs split by epoch (below);
- ``PLUS``: ``IN0 + IN1``;
- ``DISTINCT``: ``distinct_trace(IN0, prior IN1)`` with its plan (the rows of this epoch
  that an earlier epoch holds at a later iteration, ``lattice_distinct``).

The nested join's change at ``(e, i)`` sums the pairs of entries whose times' join is
``(e, i)``: both in this epoch e, or one in it and the other in an earlier one. A pair
of the second kind is due at the later of its two iterations. ``lattice_join`` finds the
pairs due at ``i`` by looking up this epoch's entries of one side in the other's earlier
epochs again at every iteration, so the epoch's imported change (iteration 0) is looked up
some ten times in a recursive view. Here each entry of this epoch is looked up in the
other side's earlier epochs once, when it arrives (``_join_prior``), and each pair found
is kept in a plan, like distinct's, until its iteration; ``lattice_join`` reads this
epoch's runs only. The same sum, term for term (at an iteration the loop skips, as the
interpreter skips it, the plan's pairs sum to nothing).

Returns a status (``DONE``; ``FAILED``: a weight left int64 or a kernel reported an
error, and the caller runs the epoch again through the interpreter, which raises the
exact error; ``LIMIT``: no fixed point within ``max_iterations``), the iterations, and
the arrays of the runs appended and of the exported rows (consolidated per iteration, not
across), with tables saying which is which.
"""

import numpy as np

from .lattice import OK as LATTICE_OK
from .lattice import lattice_distinct, lattice_join, lattice_next
from .memory import RUN_FIELDS, RUN_KEYS, RUN_N, RUN_WEIGHTS, grown, kernel, load
from .runs import _cmp_at, _seek
from .zsets import _mul_overflows, merge_rows_into, sort_small_into, sorted_order

__all__ = ["run_epoch", "IMPORT", "FEEDZ", "FEEDT", "INDEX", "MAP", "APPEND", "JOIN", "PLUS", "DISTINCT",
           "PROG_FIELDS", "CODE", "NODE", "IN0", "IN1", "IN2", "IN3", "P_OFF", "P_LEN", "ARITY", "AUX", "AUX2",
           "AUX3", "DONE", "FAILED", "LIMIT"]

IMPORT, FEEDZ, FEEDT, INDEX, MAP, APPEND, JOIN, PLUS, DISTINCT = range(9)
CODE, NODE, IN0, IN1, IN2, IN3, P_OFF, P_LEN, ARITY, AUX, AUX2, AUX3 = range(12)
PROG_FIELDS = 12
DONE, FAILED, LIMIT = range(3)
_NONE = -1  # no next busy iteration


@kernel
def _timed(keys, t0, i):
    """``keys`` with the time ``(t0, i)`` appended to each row (a run of one time)."""
    n, a = keys.shape
    out = np.empty((n, a + 2), dtype=np.int64)
    for p in range(n):
        for c in range(a):
            out[p, c] = keys[p, c]
        out[p, a], out[p, a + 1] = t0, i
    return out


@kernel
def _plus_run(table, keys, weights, t0, i):
    """``table`` with one more run (``keys`` timed at ``(t0, i)``, ``weights``)."""
    r, f = table.shape
    out = np.empty((r + 1, f), dtype=np.int64)
    for p in range(r):
        for c in range(f):
            out[p, c] = table[p, c]
    out[r, RUN_KEYS], out[r, RUN_WEIGHTS], out[r, RUN_N] = np.int64(keys.ctypes.data), \
        np.int64(weights.ctypes.data), weights.shape[0]
    out[r, RUN_FIELDS], out[r, RUN_FIELDS + 1], out[r, RUN_FIELDS + 2], out[r, RUN_FIELDS + 3] = t0, i, t0, i
    return out


@kernel
def _entries(table):
    """Entries over a run table's runs."""
    n = 0
    for r in range(table.shape[0]):
        n += table[r, RUN_N]
    return n


@kernel
def _consolidated(keys, weights, m):
    """The first ``m`` rows consolidated: ``(keys, weights, bad)``, ``bad`` >= 0 when a sum
    leaves int64."""
    k, w = keys[:m], weights[:m]
    out_k, out_w = np.empty((m, keys.shape[1]), dtype=np.int64), np.empty(m, dtype=np.int64)
    n, bad = sort_small_into(k, w, out_k, out_w)
    return out_k[:n], out_w[:n], bad


@kernel
def _project(keys, weights, cols, prefix):
    """Rows ``keys[:, cols]`` (``prefix``: then the whole row, as ``index_with``),
    consolidated unless ``prefix`` says they stay in order. ``(keys, weights, bad)``."""
    n, a = keys.shape
    nc = cols.shape[0]
    width = nc + a if prefix >= 0 else nc
    out = np.empty((n, width), dtype=np.int64)
    for p in range(n):
        for c in range(nc):
            out[p, c] = keys[p, cols[c]]
        if prefix >= 0:
            for c in range(a):
                out[p, nc + c] = keys[p, c]
    if prefix == 1:
        w = np.empty(n, dtype=np.int64)
        for p in range(n):
            w[p] = weights[p]
        return out, w, -1
    return _consolidated(out, weights, n)


@kernel
def _next_join(batch, prior_plus, prior, other, nk, p_arity, o_arity, t):
    """``next_busy_iteration`` of one side of a nested join (``wcoj.operators.traces``):
    ``prior_plus`` is ``prior`` with the batch at ``t``; -1 for never."""
    later = False  # does ``other`` hold an earlier epoch's later iteration?
    for r in range(other.shape[0]):
        later = later or (other[r, RUN_N] > 0 and other[r, RUN_FIELDS] < t[0] and other[r, RUN_FIELDS + 3] > t[1])
    if not later:
        return _NONE
    if batch.shape[0] == 0:
        now = False
        for r in range(prior.shape[0]):
            now = now or (prior[r, RUN_N] > 0 and prior[r, RUN_FIELDS + 2] >= t[0])
        if not now:
            return _NONE
    return lattice_next(prior_plus, nk, p_arity, t, other, o_arity)


@kernel
def _join_prior(bk, bw, table, nk, ow, t, a_side, a_map, b_map, width):
    """The batch ``bk``/``bw`` (at ``t``, rows sorted by their first ``nk`` columns) joined
    with the entries of ``table``'s runs from earlier epochs than ``t[0]``, at every
    iteration: ``(rows, iterations, m, bad)``, each output row (``width`` columns, then its
    weight) due at the later of ``t[1]`` and its entry's iteration. ``a_side``: the batch is
    the join's a side (output columns by ``a_map``/``b_map`` as in ``lattice_join``); ``ow``:
    the table's row width. ``bad``: 1 when a product leaves int64, 2 when a run holds this
    epoch and an earlier one (the interpreter then runs the epoch)."""
    ostride = 8 * (ow + 2)
    cap = 16
    out, out_i = np.empty((cap, width + 1), dtype=np.int64), np.empty(cap, dtype=np.int64)
    m = 0
    nr, n, ab = table.shape[0], bk.shape[0], bk.shape[1]
    cur = np.zeros(nr, dtype=np.int64)
    for r in range(nr):
        if table[r, RUN_N] > 0 and table[r, RUN_FIELDS] < t[0] <= table[r, RUN_FIELDS + 2]:
            return out, out_i, 0, 2
    base_b = bk.ctypes.data
    g = 0
    while g < n:
        key = base_b + 8 * ab * g
        if g > 0 and _cmp_at(key, base_b + 8 * ab * (g - 1), nk) < 0:
            for r in range(nr):  # (not sorted: look up from the start)
                cur[r] = 0
        h = g + 1
        while h < n and _cmp_at(base_b + 8 * ab * h, key, nk) == 0:
            h += 1
        for r in range(nr):
            if table[r, RUN_N] == 0 or table[r, RUN_FIELDS + 2] >= t[0]:
                continue
            base, wbase, rn = table[r, RUN_KEYS], table[r, RUN_WEIGHTS], table[r, RUN_N]
            p = _seek(base, ostride, cur[r], rn, key, nk)
            cur[r] = p
            while p < rn and _cmp_at(base + ostride * p, key, nk) == 0:
                row, wo = base + ostride * p, load(wbase, p)
                due = max(t[1], load(row, ow + 1))
                if m + h - g > cap:
                    cap = 2 * (m + h - g)
                    out, out_i = grown(out, m, cap), grown(out_i, m, cap)
                for q in range(g, h):
                    if _mul_overflows(bw[q], wo):
                        return out, out_i, m, 1
                    if a_side:
                        for c in range(a_map.shape[1]):
                            out[m, a_map[0, c]] = bk[q, a_map[1, c]]
                        for c in range(b_map.shape[1]):
                            out[m, b_map[0, c]] = load(row, b_map[1, c])
                    else:
                        for c in range(a_map.shape[1]):
                            out[m, a_map[0, c]] = load(row, a_map[1, c])
                        for c in range(b_map.shape[1]):
                            out[m, b_map[0, c]] = bk[q, b_map[1, c]]
                    out[m, width], out_i[m] = bw[q] * wo, due
                    m += 1
                p += 1
        g = h
    return out, out_i, m, 0


@kernel
def _this_epoch(table, t0):
    """The runs of ``table`` from epoch ``t0`` on."""
    n = 0
    for r in range(table.shape[0]):
        if table[r, RUN_FIELDS] >= t0:
            n += 1
    out = np.empty((n, table.shape[1]), dtype=np.int64)
    n = 0
    for r in range(table.shape[0]):
        if table[r, RUN_FIELDS] >= t0:
            for c in range(table.shape[1]):
                out[n, c] = table[r, c]
            n += 1
    return out


@kernel
def _with_due(k, w, m, due):
    """The rows ``k[:m]``/``w[:m]`` and the rows of ``due`` (a join's pairs due now, each
    row's weight in its last column): ``(keys, weights, m)``."""
    a, n = k.shape[1], m + due.shape[0]
    out_k, out_w = np.empty((n, a), dtype=np.int64), np.empty(n, dtype=np.int64)
    for p in range(n):
        for c in range(a):
            out_k[p, c] = k[p, c] if p < m else due[p - m, c]
        out_w[p] = w[p] if p < m else due[p - m, a]
    return out_k, out_w, n


@kernel
def _planned(pk, pi, n, it, a):
    """The rows of a plan (a distinct's, or a join's pairs with their weights) due at
    iteration ``it``."""
    ne = 0
    for p in range(n):
        if pi[p] == it:
            ne += 1
    extra = np.empty((ne, a), dtype=np.int64)
    ne = 0
    for p in range(n):
        if pi[p] == it:
            for c in range(a):
                extra[ne, c] = pk[p, c]
            ne += 1
    return extra


@kernel
def _plan_add(pk, pi, n, rows, its, new):
    """The plan with ``new`` more rows: ``(rows, iterations, n)``, grown when full."""
    if n + new > pi.shape[0]:
        cap = 2 * (n + new)
        pk, pi = grown(pk, n, cap), grown(pi, n, cap)
    for p in range(new):
        for c in range(pk.shape[1]):
            pk[n + p, c] = rows[p, c]
        pi[n + p] = its[p]
    return pk, pi, n + new


@kernel
def _meta(meta, n, a, b, c):
    """``meta`` with row ``n`` set to ``(a, b, c)``, grown when full."""
    if n == meta.shape[0]:
        meta = grown(meta, n, 2 * n)
    meta[n, 0], meta[n, 1], meta[n, 2] = a, b, c
    return meta


@kernel
def _given(given_k, given_w, given_at, g, a):
    """Import slot ``g``'s batch (rows of ``a`` columns)."""
    ko, wo, n = given_at[g, 0], given_at[g, 1], given_at[g, 2]
    k, w = np.empty((n, a), dtype=np.int64), np.empty(n, dtype=np.int64)
    for p in range(n):
        for c in range(a):
            k[p, c] = given_k[ko + p * a + c]
        w[p] = given_w[wo + p]
    return k, w


@kernel
def _merged_runs(keep_k, keep_w, run_meta, n_runs, slot):
    """The runs appended to trace ``slot`` as one run, sorted by row then time (each
    (row, time) is in one run only: no sums), and its first and last iteration."""
    n, width, lo, hi = 0, 0, -1, -1
    for r in range(n_runs):
        if run_meta[r, 0] == slot:
            n += keep_w[run_meta[r, 2]].shape[0]
            width = keep_k[run_meta[r, 2]].shape[1]
            lo = run_meta[r, 1] if lo < 0 else lo
            hi = run_meta[r, 1]
    cat, w = np.empty((n, width), dtype=np.int64), np.empty(n, dtype=np.int64)
    n = 0
    for r in range(n_runs):
        if run_meta[r, 0] == slot:
            k, x = keep_k[run_meta[r, 2]], keep_w[run_meta[r, 2]]
            for p in range(x.shape[0]):
                for c in range(width):
                    cat[n, c] = k[p, c]
                w[n] = x[p]
                n += 1
    order = sorted_order(cat, n, 1)
    out_k, out_w = np.empty((n, width), dtype=np.int64), np.empty(n, dtype=np.int64)
    for p in range(n):
        for c in range(width):
            out_k[p, c] = cat[order[p], c]
        out_w[p] = w[order[p]]
    return out_k, out_w, lo, hi


@kernel
def run_epoch(prog, params, n_nodes, fbz_in, fbz_arity, fbt_in, tables, table_off, given_k, given_w,
              given_at, t0, horizon, max_iterations, exports, no_packing):
    """One epoch of a child circuit (module docstring): ``(status, iterations, evaluated,
    run_k, run_w, run_meta, n_runs, exp_k, exp_w, exp_meta, n_exp)``. ``no_packing``: an
    empty read-only array, the nested join's "no packing" (``rows.NO_PACKING``), so that
    the join kernel is called with the interpreter's argument types (one version)."""
    empty2 = np.empty((0, 0), dtype=np.int64)
    empty1 = np.empty(0, dtype=np.int64)
    vk, vw, vt = [empty2], [empty1], [empty2]  # per node: rows, weights, run table
    for _ in range(n_nodes - 1):
        vk.append(empty2)
        vw.append(empty1)
        vt.append(empty2)
    plus_k, plus_t = [empty2], [empty2]  # per join step: a's and b's tables with the batch
    plan_k, plan_i = [empty2], [empty1]  # per distinct (at step + 1): its plan's rows and iterations
    for s in range(prog.shape[0]):
        plus_k.append(empty2)
        plus_t.append(empty2)
        plan_k.append(np.empty((16, prog[s, ARITY]), dtype=np.int64))
        plan_i.append(np.empty(16, dtype=np.int64))
    plan_n = np.zeros(prog.shape[0] + 1, dtype=np.int64)
    sched_k, sched_i = [empty2], [empty1]  # per join (at step + 1): pairs with an earlier epoch (row, weight)
    for s in range(prog.shape[0]):
        sched_k.append(np.empty((16, prog[s, ARITY] + 1), dtype=np.int64))
        sched_i.append(np.empty(16, dtype=np.int64))
    sched_n = np.zeros(prog.shape[0] + 1, dtype=np.int64)
    fz_k, fz_w = [empty2], [empty1]  # the Z-set delays (empty at the start of an epoch)
    for s in range(fbz_arity.shape[0]):
        fz_k.append(np.empty((0, fbz_arity[s]), dtype=np.int64))
        fz_w.append(empty1)
    ft = [empty2]  # the trace delays
    for s in range(fbt_in.shape[0]):
        ft.append(tables[table_off[s]: table_off[s + 1]].copy())
    keep_k, keep_w = [empty2], [empty1]  # the runs appended, and the exports' rows
    run_meta = np.empty((16, 3), dtype=np.int64)  # (trace slot, iteration, index in keep)
    exp_meta = np.empty((16, 3), dtype=np.int64)  # (export, index in keep, 0)
    n_runs = n_exp = 0
    # per node read as one more run (by an append, a join or a distinct), its batch timed
    # once per iteration; the tables that point at it are read within the iteration, and
    # an append's run is kept in ``keep_k`` (Numba frees an array once nothing holds it)
    timed = [empty2]
    needs_time = np.zeros(n_nodes, dtype=np.bool_)
    for s in range(prog.shape[0]):
        if prog[s, CODE] == APPEND or prog[s, CODE] == DISTINCT or prog[s, CODE] == JOIN:
            needs_time[prog[s, IN0]] = True
        if prog[s, CODE] == JOIN:
            needs_time[prog[s, IN1]] = True
    for _ in range(n_nodes - 1):
        timed.append(empty2)
    t = np.empty(2, dtype=np.int64)
    status, i, evaluated = DONE, 0, 0
    while status == DONE:
        t[0], t[1] = t0, i
        for s in range(prog.shape[0]):
            code, j, a, x = prog[s, CODE], prog[s, NODE], prog[s, ARITY], prog[s, IN0]
            if code == IMPORT:
                if i == 0 or prog[s, AUX] == 1:
                    vk[j], vw[j] = _given(given_k, given_w, given_at, x, a)
                else:
                    vk[j], vw[j] = np.empty((0, a), dtype=np.int64), empty1
            elif code == FEEDZ:
                vk[j], vw[j] = fz_k[x + 1], fz_w[x + 1]
            elif code == FEEDT:
                vt[j] = ft[x + 1]
            elif code == INDEX or code == MAP:
                if vk[x].shape[0] == 0:
                    vk[j], vw[j] = np.empty((0, a), dtype=np.int64), empty1
                else:
                    cols = params[prog[s, P_OFF]: prog[s, P_OFF] + prog[s, P_LEN]]
                    k, w, bad = _project(vk[x], vw[x], cols, -1 if code == MAP else prog[s, AUX])
                    vk[j], vw[j] = k, w
                    status = FAILED if bad >= 0 else status
            elif code == APPEND:
                tr = prog[s, IN1]
                if vk[x].shape[0] == 0:
                    vt[j] = vt[tr]
                else:
                    keep_k.append(timed[x])
                    keep_w.append(vw[x])
                    vt[j] = _plus_run(vt[tr], timed[x], vw[x], t0, i)
                    run_meta = _meta(run_meta, n_runs, prog[s, AUX], i, len(keep_k) - 1)
                    n_runs += 1
            elif code == JOIN:  # (inline: each level of calls costs a cold start seconds)
                y, ta, tb = prog[s, IN1], prog[s, IN2], prog[s, IN3]
                tab_a, tab_b = vt[ta], vt[tb]
                if vk[x].shape[0]:
                    tab_a = _plus_run(tab_a, timed[x], vw[x], t0, i)
                if vk[y].shape[0]:
                    tab_b = _plus_run(tab_b, timed[y], vw[y], t0, i)
                plus_k[s], plus_t[s] = tab_a, tab_b
                if _entries(tab_a) == 0 or _entries(tab_b) == 0:
                    vk[j], vw[j] = np.empty((0, a), dtype=np.int64), empty1
                    continue
                na, off, nk = prog[s, P_LEN], prog[s, P_OFF], prog[s, AUX]
                a_map = params[off: off + 2 * na].reshape(2, na)
                b_map = params[off + 2 * na: off + 2 * a].reshape(2, a - na)
                # this epoch's pairs (module docstring), then those with an earlier epoch's
                cur_a, cur_b = _this_epoch(tab_a, t0), _this_epoch(tab_b, t0)
                k, w, m, st = np.empty((0, a), dtype=np.int64), empty1, 0, LATTICE_OK
                if _entries(cur_a) and _entries(cur_b):
                    k, w, m, st, _, _ = lattice_join(cur_a, cur_b, nk, prog[s, AUX2], prog[s, AUX3], t, a_map, b_map,
                                                     no_packing, no_packing, no_packing, 0)
                for side in range(2 if st == LATTICE_OK else 0):  # a's batch, then b's
                    batch, other = (x, tb) if side == 0 else (y, ta)
                    if vk[batch].shape[0]:
                        ow = prog[s, AUX3] if side == 0 else prog[s, AUX2]
                        rows, its, nn, bad = _join_prior(vk[batch], vw[batch], vt[other], nk, ow, t, side == 0,
                                                         a_map, b_map, a)
                        status = FAILED if bad else status
                        sched_k[s + 1], sched_i[s + 1], sched_n[s + 1] = _plan_add(
                            sched_k[s + 1], sched_i[s + 1], sched_n[s + 1], rows, its, nn)
                if sched_n[s + 1] and st == LATTICE_OK:  # (as the interpreter, nothing at a skipped iteration)
                    k, w, m = _with_due(k, w, m, _planned(sched_k[s + 1], sched_i[s + 1], sched_n[s + 1], i, a + 1))
                k, w, bad = _consolidated(k, w, m if st == LATTICE_OK else 0)
                vk[j], vw[j] = k, w
                status = FAILED if st != LATTICE_OK or bad >= 0 else status
            elif code == PLUS:
                y = prog[s, IN1]
                if vk[y].shape[0] == 0:
                    vk[j], vw[j] = vk[x], vw[x]
                elif vk[x].shape[0] == 0:
                    vk[j], vw[j] = vk[y], vw[y]
                else:
                    n = vk[x].shape[0] + vk[y].shape[0]
                    k, w = np.empty((n, a), dtype=np.int64), np.empty(n, dtype=np.int64)
                    m, bad = merge_rows_into(vk[x], vw[x], vk[y], vw[y], k, w)
                    vk[j], vw[j] = k[:m], w[:m]
                    status = FAILED if bad >= 0 else status
            elif code == DISTINCT:
                table = vt[prog[s, IN1]]
                n_prior = table.shape[0]
                if vk[x].shape[0]:
                    table = _plus_run(table, timed[x], vw[x], t0, i)
                extra = _planned(plan_k[s + 1], plan_i[s + 1], plan_n[s + 1], i, a)
                k, w, m, bad, rows, its, new = lattice_distinct(table, n_prior, a, t, extra, True)
                vk[j], vw[j] = k[:m], w[:m]
                if bad >= 0:
                    status = FAILED
                else:
                    plan_k[s + 1], plan_i[s + 1], plan_n[s + 1] = _plan_add(plan_k[s + 1], plan_i[s + 1],
                                                                          plan_n[s + 1], rows, its, new)
            if needs_time[j] and vk[j].shape[0]:  # (an empty value's readers skip it)
                timed[j] = _timed(vk[j], t0, i)
        if status != DONE:
            break
        for e in range(exports.shape[0]):
            if vk[exports[e]].shape[0]:
                keep_k.append(vk[exports[e]])
                keep_w.append(vw[exports[e]])
                exp_meta = _meta(exp_meta, n_exp, e, len(keep_k) - 1, 0)
                n_exp += 1
        done = True
        for s in range(fbz_in.shape[0]):
            fz_k[s + 1], fz_w[s + 1] = vk[fbz_in[s]], vw[fbz_in[s]]
            done = done and vk[fbz_in[s]].shape[0] == 0
        for s in range(fbt_in.shape[0]):
            ft[s + 1] = vt[fbt_in[s]]
        i += 1
        evaluated += 1
        if done:
            if i >= horizon:
                break
            nxt = _NONE  # the soonest later iteration at which a join or distinct may fire
            for s in range(prog.shape[0]):  # with no new input (Operator.next_busy)
                code = prog[s, CODE]
                if code == JOIN:
                    x, y, ta, tb = prog[s, IN0], prog[s, IN1], prog[s, IN2], prog[s, IN3]
                    nk, aa, ab = prog[s, AUX], prog[s, AUX2], prog[s, AUX3]
                    it = _next_join(vk[x], plus_k[s], vt[ta], vt[tb], nk, aa, ab, t)
                    nxt = it if it >= 0 and (nxt < 0 or it < nxt) else nxt
                    it = _next_join(vk[y], plus_t[s], vt[tb], vt[ta], nk, ab, aa, t)
                    nxt = it if it >= 0 and (nxt < 0 or it < nxt) else nxt
                elif code == DISTINCT:
                    for p in range(plan_n[s + 1]):
                        it = plan_i[s + 1][p]
                        nxt = it if it > t[1] and (nxt < 0 or it < nxt) else nxt
            if nxt < 0:
                break
            i = max(i, nxt)
        if i >= max_iterations:
            status = LIMIT
    # each trace's appends as one run (the interpreter's runs merge at the epoch's end,
    # Trace.advance: pairwise, one Python call per merge)
    traces_k, traces_w, its = [empty2], [empty1], np.full((fbt_in.shape[0], 2), -1, dtype=np.int64)
    for slot in range(fbt_in.shape[0] if status == DONE else 0):
        k, w, its[slot, 0], its[slot, 1] = _merged_runs(keep_k, keep_w, run_meta, n_runs, slot)
        traces_k.append(k)
        traces_w.append(w)
    return status, i, evaluated, traces_k, traces_w, its, keep_k, keep_w, exp_meta, n_exp
