"""Seeded graph and change generators for demos, tests and benchmarks.

:func:`generate_power_law` draws a Chung-Lu graph with a power-law degree sequence;
:func:`generate_changes` draws ticks of edge inserts and deletes against a graph. Both
are numpy only and reproducible from their seed. Re-exported by :mod:`queries.graphio`.

>>> generate_power_law(1000, seed=1).shape
(1000, 2)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from wcoj.errors import InputError

__all__ = ["generate_power_law", "generate_changes"]

I64 = npt.NDArray[np.int64]


def _chung_lu_weights(n_nodes: int, exponent: float, avg_degree: float,
                      max_degree: float) -> npt.NDArray[np.float64]:
    """Expected degrees ``w_i ~ (i + i0) ** (-1 / (exponent - 1))`` scaled to the mean, capped."""
    ranks = np.arange(1, n_nodes + 1, dtype=np.float64)
    w = ranks ** (-1.0 / (exponent - 1.0))
    w *= avg_degree / w.mean()
    for _ in range(20):  # capping lowers the mean; rescale the rest until it settles
        w = np.minimum(w, max_degree)
        w *= avg_degree / w.mean()
    return np.minimum(w, max_degree)


def generate_power_law(n_edges: int, seed: int = 0, *, avg_degree: float = 10.0,
                       exponent: float = 2.5, max_degree: int = 1000) -> I64:
    """A Chung-Lu random graph with a power-law degree sequence, as unique undirected edges.

    Node ``i`` gets expected degree ``w_i`` from a power law with the given ``exponent``,
    scaled to ``avg_degree`` and capped at ``max_degree``; both endpoints of an edge are
    drawn with probability proportional to ``w``. Self-loops and duplicates are dropped
    and more edges drawn until there are ``n_edges``. Node ids are a random permutation
    of ``range(n_nodes)``, ``n_nodes = 2 * n_edges / avg_degree``, so hubs are spread over
    the id range.

    Returns
    -------
    numpy.ndarray
        ``int64`` shape ``(n_edges, 2)``, rows ``(min, max)``, sorted, unique.

    Complexity: O(n_edges log n); about a second for a million edges.

    >>> e = generate_power_law(1000, seed=1)
    >>> e.shape, bool((e[:, 0] < e[:, 1]).all())
    ((1000, 2), True)
    """
    n_edges = int(n_edges)
    if n_edges < 0:
        raise InputError(f"n_edges must be >= 0, got {n_edges}")
    rng = np.random.default_rng(seed)
    n_nodes = max(int(round(2 * n_edges / avg_degree)), 2)
    if n_edges > n_nodes * (n_nodes - 1) // 2:
        raise InputError(f"{n_edges} edges do not fit in a simple graph of {n_nodes} nodes; "
                         "lower avg_degree")
    cdf = np.cumsum(_chung_lu_weights(n_nodes, exponent, avg_degree, max_degree))
    cdf /= cdf[-1]
    ids = rng.permutation(n_nodes).astype(np.int64)
    keys = np.zeros(0, np.int64)  # u * n_nodes + v with u < v
    while len(keys) < n_edges:
        want = int((n_edges - len(keys)) * 1.1) + 16
        ends = ids[np.searchsorted(cdf, rng.random((want, 2)), side="right").clip(0, n_nodes - 1)]
        pairs = np.sort(ends, axis=1)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        keys = _sorted_unique(np.concatenate([keys, pairs[:, 0] * n_nodes + pairs[:, 1]]))
    if len(keys) > n_edges:
        keys = keys[np.sort(rng.choice(len(keys), n_edges, replace=False))]
    return np.stack([keys // n_nodes, keys % n_nodes], axis=1)


def generate_changes(graph_edges: npt.ArrayLike, n_ticks: int, per_tick: int,
                     insert_fraction: float = 0.9, seed: int = 0
                     ) -> list[tuple[int, I64, I64]]:
    """A stream of ticks over an undirected graph: ``(tick, inserts, deletes)``.

    Each tick has ``per_tick`` changes: about ``insert_fraction`` of them insert new
    edges between existing nodes, drawn in proportion to the current degree plus one
    (rich get richer, so hubs keep growing), the rest delete existing edges chosen
    uniformly. Every insert is of an absent edge and every delete of a present one,
    given the edges before the tick, so each change is real. Ticks are numbered from 1.

    Complexity: O(m) per tick (sorted-array set updates); a second or two for 100 ticks
    over a million edges.

    >>> ticks = generate_changes([[1, 2], [2, 3], [3, 4]], n_ticks=2, per_tick=2, seed=0)
    >>> [(t, len(i) + len(d)) for t, i, d in ticks]
    [(1, 2), (2, 2)]
    """
    rng = np.random.default_rng(seed)
    edges = np.sort(np.asarray(graph_edges, dtype=np.int64).reshape(-1, 2), axis=1)
    nodes = _sorted_unique(edges.ravel()) if len(edges) else np.arange(2, dtype=np.int64)
    n = len(nodes)
    idx = np.searchsorted(nodes, edges)
    present = _sorted_unique(idx[:, 0] * n + idx[:, 1])  # keys of (min, max) node indices
    present = present[present // n != present % n]
    degree = np.bincount(np.concatenate([present // n, present % n]), minlength=n) + 1.0
    max_edges = n * (n - 1) // 2
    out = []
    for tick in range(1, int(n_ticks) + 1):
        n_ins = min(int(rng.binomial(per_tick, insert_fraction)), max_edges - len(present))
        n_del = min(per_tick - n_ins, len(present))
        new = np.zeros(0, np.int64)
        p = degree / degree.sum()
        for _ in range(100):
            if len(new) >= n_ins:
                break
            pairs = np.sort(rng.choice(n, size=(2 * (n_ins - len(new)) + 8, 2), p=p), axis=1)
            keys = pairs[:, 0] * n + pairs[:, 1]
            keys = keys[(pairs[:, 0] != pairs[:, 1]) & ~_sorted_contains(present, keys)]
            keys = np.concatenate([new, keys])
            order = np.argsort(keys, kind="stable")
            first = np.ones(len(keys), bool)
            first[1:] = keys[order][1:] != keys[order][:-1]
            new = keys[np.sort(order[first])]  # distinct, in drawing order
        new = new[:n_ins]
        gone = present[rng.choice(len(present), n_del, replace=False)] if n_del else new[:0]
        present = present[~_sorted_contains(np.sort(gone), present)]
        present = np.insert(present, np.searchsorted(present, np.sort(new)), np.sort(new))
        for keys, sign in ((new, 1), (gone, -1)):
            np.add.at(degree, np.concatenate([keys // n, keys % n]), sign)
        out.append((tick, np.stack([nodes[new // n], nodes[new % n]], axis=1),
                    np.stack([nodes[gone // n], nodes[gone % n]], axis=1)))
    return out


def _sorted_unique(keys: I64) -> I64:
    """``np.unique`` for int64 keys by sorting (numpy 2.4's hash-based unique is slower)."""
    keys = np.sort(keys)
    if len(keys):
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    return keys


def _sorted_contains(sorted_keys: I64, keys: I64) -> npt.NDArray[np.bool_]:
    pos = np.searchsorted(sorted_keys, keys).clip(0, max(len(sorted_keys) - 1, 0))
    return (sorted_keys[pos] == keys) if len(sorted_keys) else np.zeros(len(keys), bool)
