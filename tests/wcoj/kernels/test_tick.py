"""``edge_tick`` (a small tick's change, staging and delta rule in one call) equals the
three kernels it replaces, run one after the other with Python between them.

Also run by ``./dev test`` with ``NUMBA_DISABLE_JIT=1``, so keep the inputs small.
"""

import numpy as np
import pytest

import queries.graph as graph_module
from queries.graph import Graph
from wcoj.kernels.tick import JOINED, NO_CHANGE, STAGED, edge_tick


def _random_tick(rng, n_nodes, edges):
    ins = rng.integers(0, n_nodes, (int(rng.integers(0, 6)), 2))
    dels = edges[rng.integers(0, len(edges), int(rng.integers(0, 3)))] if len(edges) else np.zeros((0, 2))
    return ins.astype(np.int64), np.asarray(dels, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("pattern", ["triangle", "4-clique"])
@pytest.mark.parametrize("seed", range(3))
def test_edge_tick_equals_the_general_path(pattern, seed, monkeypatch):
    codes = []

    def spy(*args):
        out = edge_tick(*args)
        codes.append(int(out[0]))
        return out

    monkeypatch.setattr(graph_module, "edge_tick", spy)
    rng = np.random.default_rng(seed)
    n_nodes = 9
    base = rng.integers(0, n_nodes, (20, 2))
    g, twin = Graph(), Graph()
    for x in (g, twin):
        x.load_edges(base)
    v, tv = g.view(pattern), twin.view(pattern)
    twin._fused = lambda ins, dels: None
    for _ in range(12):
        ins, dels = _random_tick(rng, n_nodes, g.edges())
        t, tt = g.apply(inserts=ins, deletes=dels), twin.apply(inserts=ins, deletes=dels)
        assert t.changes[pattern].to_dict() == tt.changes[pattern].to_dict()
        assert t.edge_delta.to_dict() == tt.edge_delta.to_dict()
        assert v.count == tv.count
        for cols, idx in g.relations["O"].indexes.items():
            assert idx.view("prev").to_zset() == twin.relations["O"].indexes[cols].view("prev").to_zset()
    g.check_views()
    assert JOINED in codes and set(codes) <= {JOINED, NO_CHANGE, STAGED}
