"""A small tick of an edge relation in one call: its change, its staging, its delta rule.

At 10 changes a tick, the kernels of a tick took about a third of it and Python the rest:
three kernel calls (``edge_delta_into``, ``stage_runs_plus``, ``run_program``) and the
wrappers between them (Z-sets, view tables stacked per term, a program looked up per
tick). ``edge_tick`` runs the three back to back and stacks the join's table itself, from
a gather map the caller builds once per shape of the indexes (see its docstring), so the
Python of a tick is left with wrapping what the kernel wrote.

Inputs are int64 only, as in ``term`` and ``rowops``.
"""

import numpy as np
from numba import njit

from .rowops import edge_delta_into, flat_room, stage_runs_plus
from .term import run_program

__all__ = ["edge_tick", "NO_CHANGE", "UNFUSED", "STAGED", "JOINED"]

UNFUSED = 0    # edge_tick did nothing: the caller takes its general path (which raises if need be)
NO_CHANGE = 1  # the tick changes no edge
STAGED = 2     # the change is staged (buffers written); the delta rule is left to the caller
JOINED = 3     # staged, and the delta rule's rows are written


@njit(cache=True, nogil=True)
def edge_tick(ins, dels, normalise, P, first, cols, sort, last_rows, G, at, deep, fixed, part_rows,
              level_slots, level_atoms, atom_bounds, bnd_off, bnd_col, bnd_upper, ne_off, ne_col,
              term_levels, term_parts, out_cols, limit, first_part, term_seed):
    """One tick of edge inserts ``ins`` and deletes ``dels`` (``int64[n, 2]``) on a binary
    relation whose every index merges the change into its last run (``Relation``'s
    ``_stage_together`` case), and the delta rule of one view over it.

    ``P``: the stacked ``prev`` tables of the relation's indexes (``TrieArrays.table()``
    rows, index after index); ``first``: the level-0 rows in ``P`` of the natural index's
    parts (``edge_delta_into``'s ``first``); index ``i`` takes the columns in the order
    ``cols[i]``, sorting when ``sort[i]``, and its last run has its table at row
    ``last_rows[i]`` of ``P``. ``G`` gathers the join's table: row
    ``j`` is ``P[G[j]]`` when ``G[j] >= 0``, else row ``-1 - G[j]`` of the staged tables
    (``tables.reshape(-1, 6)``, see below). The rest is ``run_program``'s program.

    Returns ``(code, keys, w, buf, tables, NP, okeys, ow)``:

    * ``code``: ``UNFUSED`` (ids too large to pack, a weight overflow while staging: nothing
      is written that the caller may keep), ``NO_CHANGE``, ``STAGED`` (a last run emptied,
      which changes the shape of ``curr``, or the delta rule needs the general path:
      too big, an overflow) or ``JOINED``;
    * ``keys``/``w``: the change (sorted, weights +1/-1), as ``edge_delta_into`` writes it;
    * ``buf``/``tables``: ``stage_runs_plus``'s buffer and tables (``int64[n_idx, 2, 2, 6]``):
      per index the change's trie, then its merge with the last run, each with room for
      its rows (the change's rows, the last run's rows plus those);
    * ``NP``: ``P`` with each index's last run replaced by its merge: the next ``prev``;
    * ``okeys``/``ow``: the delta rule's rows, unconsolidated (``run_program``).
    """
    n = ins.shape[0] + dels.shape[0]
    r = 2
    k = cols.shape[0]
    keys = np.empty((n, r), dtype=np.int64)
    w = np.empty(n, dtype=np.int64)
    buf = np.empty(0, dtype=np.int64)
    tables = np.empty((k, 2, r, 6), dtype=np.int64)
    okeys = np.empty((0, out_cols.shape[1]), dtype=np.int64)
    ow = np.empty(0, dtype=np.int64)
    m = edge_delta_into(ins, dels, normalise, P, first, keys, w)
    if m <= 0:
        return (NO_CHANGE if m == 0 else UNFUSED), keys[:0].copy(), w[:0].copy(), buf, tables, P, okeys, ow
    ck, cw = keys[:m].copy(), w[:m].copy()
    rooms = np.empty(k, dtype=np.int64)
    TA = np.empty((k * r, 6), dtype=np.int64)
    size = 0
    for i in range(k):
        rooms[i] = P[last_rows[i] + r - 1, 1] + m  # the last run's rows (its leaf level's count) and the change's
        size += flat_room(m, r) + flat_room(rooms[i], r)
        for j in range(r):
            TA[i * r + j] = P[last_rows[i] + j]
    buf = np.empty(size, dtype=np.int64)
    bad_row = np.empty(r, dtype=np.int64)
    if stage_runs_plus(ck, cw, cols, sort, TA, rooms, buf, tables, bad_row) >= 0:
        return UNFUSED, ck, cw, buf, tables, P, okeys, ow
    NP = P.copy()
    emptied = False
    for i in range(k):
        for j in range(r):
            NP[last_rows[i] + j] = tables[i, 1, j]
        emptied = emptied or tables[i, 1, r - 1, 1] == 0
    if emptied:
        return STAGED, ck, cw, buf, tables, NP, okeys, ow
    flat = tables.reshape(k * 2 * r, 6)
    T = np.empty((G.shape[0], 6), dtype=np.int64)
    for j in range(G.shape[0]):
        g = G[j]
        T[j] = P[g] if g >= 0 else flat[-1 - g]
    status, _, rk, rw = run_program(T, at, deep, fixed, part_rows, level_slots, level_atoms, atom_bounds,
                                       bnd_off, bnd_col, bnd_upper, ne_off, ne_col, term_levels, term_parts,
                                       out_cols, limit, first_part, term_seed, 0, 1)
    if status < 0:
        return STAGED, ck, cw, buf, tables, NP, okeys, ow
    return JOINED, ck, cw, buf, tables, NP, rk, rw
