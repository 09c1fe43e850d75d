"""Pure numpy/pyarrow parts of the Spark pipeline: text formats, loaders, staged output.

No Spark and no Java needed (pyarrow only for the Parquet loaders).
"""

import gzip

import numpy as np
import pytest

from queries.spark.loaders import load_edges_npz, load_index, replay_ticks, staged_output
from queries.spark.textio import (
    canonical_edges,
    consolidate_changes,
    read_changes,
    read_edge_list,
    write_changes,
)
from wcoj.errors import InputError


def test_read_edge_list_skips_comments_and_extra_columns(tmp_path):
    path = tmp_path / "g.txt.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("# comment\n1 2 100\n\n2\t1 7\n3 3\n")
    assert read_edge_list(path).tolist() == [[1, 2], [2, 1], [3, 3]]
    assert read_edge_list(path, canonical=True).tolist() == [[1, 2]]


def test_read_edge_list_names_file_and_line(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("1 2\n# c\n3 x\n")
    with pytest.raises(InputError, match=r"g\.txt:3"):
        read_edge_list(path)
    with pytest.raises(InputError, match="cannot read"):
        read_edge_list(tmp_path / "missing.txt")


def test_canonical_edges_is_undirected_simple_sorted():
    edges = np.array([[5, 1], [1, 5], [2, 2], [0, 9]])
    assert canonical_edges(edges).tolist() == [[0, 9], [1, 5]]


def test_write_then_read_changes_round_trips_weights(tmp_path):
    batches = [(0, np.array([[1, 2], [3, 4]]), np.array([2, -1])), (3, np.array([[1, 2]]),
                                                                       np.array([-2]))]
    n = write_changes(tmp_path / "c.txt", batches)
    assert n == 5
    assert (tmp_path / "c.txt").read_text().splitlines()[:3] == ["0 + 1 2", "0 + 1 2",
                                                                 "0 - 3 4"]
    out = consolidate_changes(*read_changes(tmp_path / "c.txt"))
    assert [(t, k.tolist(), w.tolist()) for t, k, w in out] == [
        (0, [[1, 2], [3, 4]], [2, -1]), (3, [[1, 2]], [-2])]


def test_read_changes_rejects_bad_sign(tmp_path):
    (tmp_path / "c.txt").write_text("0 + 1 2\n1 * 1 2\n")
    with pytest.raises(InputError, match=r"c\.txt:2"):
        read_changes(tmp_path / "c.txt")


def test_staged_output_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with staged_output(target) as stage:
            (stage / "half.txt").write_text("x")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with staged_output(target) as stage:
        (stage / "done.txt").write_text("x")
    assert [p.name for p in target.iterdir()] == ["done.txt"]
    with pytest.raises(InputError, match="already exists"):
        with staged_output(target):
            pass


def test_loaders_read_parquet_and_npz(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp_path / "t" / "tick=2").mkdir(parents=True)
    (tmp_path / "t" / "tick=10").mkdir(parents=True)
    pq.write_table(pa.table({"src": [3, 1], "dst": [4, 2], "weight": [1, -1]}),
                   tmp_path / "t" / "tick=2" / "part-0.parquet")
    pq.write_table(pa.table({"src": [5], "dst": [6], "weight": [2]}),
                   tmp_path / "t" / "tick=10" / "part-0.parquet")
    got = [(t, k.tolist(), w.tolist()) for t, k, w in replay_ticks(tmp_path / "t")]
    assert got == [(2, [[1, 2], [3, 4]], [-1, 1]), (10, [[5, 6]], [2])]
    keys, weights = load_index(tmp_path / "t" / "tick=2", ["dst", "src"])
    assert keys.dtype == np.int64 and keys.tolist() == [[2, 1], [4, 3]]
    np.savez(tmp_path / "e.npz", keys=np.array([[1, 2]], dtype=np.int64))
    assert load_edges_npz(tmp_path / "e.npz").tolist() == [[1, 2]]
    with pytest.raises(InputError):
        load_edges_npz(tmp_path / "missing.npz")
