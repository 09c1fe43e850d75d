"""extend_frontier against a twin built from extend_level's twin (tests/reference_joins.py)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tests import reference_joins as ref
from tests.wcoj.kernels.test_intersect import frontiers
from wcoj.kernels.frontier import extend_frontier

I64 = np.int64


def frontier_twin(vals, offs, leafw, is_last, part_col, atom_start, LO, HI, lo, hi, bound, w):
    """Python: per (row, value, hits) of the intersection, the weight and next ranges."""
    out = []
    for r, x, hits in ref.extend_level_twin(vals, lo.tolist(), hi.tolist(), atom_start.tolist()):
        wt = int(w[r])
        for a in range(len(atom_start) - 1):
            q0, q1 = int(atom_start[a]), int(atom_start[a + 1])
            if is_last[q0]:
                wt *= sum(int(leafw[q][hits[q]]) for q in range(q0, q1) if hits[q] >= 0)
        if wt == 0:
            continue
        nlo, nhi = LO[r].tolist(), HI[r].tolist()
        for q, h in enumerate(hits):
            c = int(part_col[q])
            nlo[c], nhi[c] = ((int(offs[q][h]), int(offs[q][h + 1]))
                              if not is_last[q] and h >= 0 else (0, 0))
        out.append((tuple(bound[r].tolist()) + (x,), tuple(nlo), tuple(nhi), wt))
    return out


@given(frontiers(), st.data())
def test_extend_frontier_equals_twin(f, data):
    vals, lo, hi, atom_start, pw, rw = f
    n_parts, n_rows = len(vals), lo.shape[0]
    # each atom is last at this level or not; offsets are any increasing CSR arrays
    last_atoms = [data.draw(st.booleans()) for _ in range(len(atom_start) - 1)]
    is_last = np.zeros(n_parts, I64)
    offs = []
    for a, last in enumerate(last_atoms):
        for q in range(atom_start[a], atom_start[a + 1]):
            is_last[q] = last
            counts = data.draw(st.lists(st.integers(0, 3), min_size=len(vals[q]), max_size=len(vals[q])))
            offs.append(np.concatenate([[0], np.cumsum(counts)]).astype(I64))
    extra = data.draw(st.integers(0, 2))           # parts of atoms not in this level
    P = n_parts + extra
    part_col = np.array(data.draw(st.permutations(range(P)))[:n_parts], I64)
    LO = np.array(data.draw(st.lists(st.lists(st.integers(0, 9), min_size=P, max_size=P),
                                     min_size=n_rows, max_size=n_rows)), I64).reshape(n_rows, P)
    HI = LO + 1
    bound = np.arange(n_rows * 2, dtype=I64).reshape(n_rows, 2)
    cap = int(np.add.reduceat(hi - lo, atom_start[:-1], axis=1).min(axis=1).sum()) if n_rows else 0
    nb, nlo, nhi, nw = (np.empty((cap, 3), I64), np.empty((cap, P), I64),
                        np.empty((cap, P), I64), np.empty(cap, I64))
    m = extend_frontier(vals, tuple(offs), pw, is_last, part_col, atom_start, LO, HI, lo, hi,
                        bound, rw, nb, nlo, nhi, nw)
    got = [(tuple(nb[i].tolist()), tuple(nlo[i].tolist()), tuple(nhi[i].tolist()), int(nw[i]))
           for i in range(m)]
    assert got == frontier_twin(vals, offs, pw, is_last, part_col, atom_start, LO, HI, lo, hi, bound, rw)


def test_extend_frontier_reports_an_overflowing_row():
    v = np.array([1, 2], I64)
    big = np.array([2**62, 2**62], I64)
    lo, hi = np.zeros((1, 2), I64), np.full((1, 2), 2, I64)
    out = (np.empty((2, 1), I64), np.empty((2, 2), I64), np.empty((2, 2), I64), np.empty(2, I64))
    m = extend_frontier((v, v), (big, big), (big, big), np.ones(2, I64), np.arange(2, dtype=I64),
                        np.array([0, 1, 2], I64), lo, hi, lo, hi, np.zeros((1, 0), I64),
                        np.ones(1, I64), *out)
    assert m == -1   # row 0: 2**62 * 2**62 does not fit


@given(st.data())
def test_extend_frontier_pair_equals_the_general_kernel(data):
    """Two atoms of one part each, with or without level-0 directories, as extend_frontier."""
    from indexes.trie import _directory
    from wcoj.kernels.frontier import extend_frontier_pair

    dom = st.integers(0, data.draw(st.sampled_from([8, 40, 200])))
    vals = tuple(np.array(sorted(data.draw(st.sets(dom, min_size=1, max_size=80))), I64) for _ in range(2))
    n_rows = data.draw(st.integers(0, 6))
    lo = np.zeros((n_rows, 2), I64)
    hi = np.zeros((n_rows, 2), I64)
    for r in range(n_rows):
        for q in range(2):
            n = len(vals[q])
            full = data.draw(st.booleans())            # whole level: the directory path
            lo[r, q] = 0 if full else data.draw(st.integers(0, n))
            hi[r, q] = n if full else data.draw(st.integers(int(lo[r, q]), n))
    is_last = np.array([data.draw(st.booleans()), data.draw(st.booleans())], I64)
    offs = tuple(np.concatenate([[0], np.cumsum(data.draw(st.lists(st.integers(0, 3), min_size=len(v),
                                                                   max_size=len(v))))]).astype(I64)
                 for v in vals)
    lw = tuple(np.array(data.draw(st.lists(st.integers(-2, 2), min_size=len(v), max_size=len(v))), I64)
               for v in vals)
    P = 3
    LO = np.zeros((n_rows, P), I64)
    HI = np.ones((n_rows, P), I64)
    bound = np.arange(n_rows, dtype=I64).reshape(n_rows, 1)
    w = np.ones(n_rows, I64)
    cap = int(np.minimum(hi[:, 0] - lo[:, 0], hi[:, 1] - lo[:, 1]).sum())

    def outs():
        return np.empty((cap, 2), I64), np.empty((cap, P), I64), np.empty((cap, P), I64), np.empty(cap, I64)

    def rows(m, o):
        return [(tuple(o[0][i]), tuple(o[1][i]), tuple(o[2][i]), int(o[3][i])) for i in range(m)]

    cols = np.array([0, 2], I64)
    g = outs()
    m = extend_frontier(vals, offs, lw, is_last, cols, np.array([0, 1, 2], I64), LO, HI, lo, hi, bound, w, *g)
    for use_dirs in (False, True):
        dirs = []
        for v in vals:
            d, b = _directory(v) if use_dirs else (np.zeros(0, I64), 0)
            dirs += [d, b]
        o = outs()
        mp = extend_frontier_pair(vals[0], offs[0], lw[0], bool(is_last[0]), 0, vals[1], offs[1], lw[1],
                                  bool(is_last[1]), 2, LO, HI, lo, hi, bound, w, *o, *dirs)
        assert sorted(rows(mp, o)) == sorted(rows(m, g))
