"""Read the pipeline's output with pyarrow and numpy: no Spark, no Python loop per row.

Holds :func:`load_edges_parquet` and :func:`load_edges_npz` (``int64 (m, 2)`` edges),
:func:`load_index` (any sorted index partition as keys and optional weights),
:func:`load_dictionary`, :func:`read_manifest`, :func:`replay_ticks` (tick batches in
tick order) and the output helpers :func:`staged_output` (write beside the target, then
rename: no partial output) and :func:`write_manifest`. Relies on numpy, pyarrow and
``wcoj.errors``. Used by the engine (loading indexes), ``wcoj stream``, the Spark
pipeline (:mod:`queries.spark.ingest`, :mod:`queries.spark.ticks`) and tests.

Layout of an ingest directory (see :mod:`queries.spark.ingest`)::

    manifest.json                  counts, column orders, sources, creation time
    dictionary/<domain>/*.parquet  (id, type, value), one domain per kind of id
    edges/src_dst/*.parquet        canonical edges sorted by (src, dst); dst_src likewise
    edges.npz                      optional: keys int64 (m, 2) in (src, dst) order
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from wcoj.errors import InputError

__all__ = [
    "load_edges_parquet",
    "load_edges_npz",
    "load_index",
    "load_dictionary",
    "read_manifest",
    "write_manifest",
    "replay_ticks",
    "staged_output",
]

Int64Array = npt.NDArray[np.int64]
MANIFEST = "manifest.json"


def _pq() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover
        raise InputError("reading Parquet needs pyarrow: pip install 'wcoj-engine[spark]'") \
            from exc
    return pq


def _read_table(path: str | os.PathLike) -> Any:
    pq = _pq()
    try:
        return pq.read_table(os.fspath(path))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read Parquet {path}: {exc}") from exc


def _lexsorted(keys: Int64Array) -> bool:
    if keys.shape[0] < 2:
        return True
    a, b = keys[:-1], keys[1:]
    lt = np.zeros(a.shape[0], dtype=bool)
    eq = np.ones(a.shape[0], dtype=bool)
    for j in range(keys.shape[1]):  # a loop over columns, not rows
        lt |= eq & (a[:, j] < b[:, j])
        eq &= a[:, j] == b[:, j]
    return bool(np.all(lt | eq))


def load_index(
    path: str | os.PathLike, columns: list[str] | None = None
) -> tuple[Int64Array, Int64Array | None]:
    """Load a sorted index partition (a Parquet file or directory) as numpy arrays.

    Parameters
    ----------
    path : path-like
        A Parquet file or a directory of ``part-*.parquet`` files.
    columns : list of str, optional
        Key columns in order; default every integer column except ``weight``.

    Returns
    -------
    keys : numpy.ndarray
        ``int64 (n, k)``, lexicographically sorted (sorted here if the files were not).
    weights : numpy.ndarray or None
        ``int64 (n,)`` when a ``weight`` column exists.
    """
    table = _read_table(path)
    names = columns or [n for n in table.column_names if n != "weight"]
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise InputError(f"{path}: no column(s) {missing}; found {table.column_names}")
    try:
        cols = [table.column(n).to_numpy().astype(np.int64, copy=False) for n in names]
    except (TypeError, ValueError) as exc:
        raise InputError(f"{path}: columns {names} are not integers: {exc}") from exc
    keys = np.column_stack(cols) if cols else np.empty((table.num_rows, 0), np.int64)
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    weights = None
    if "weight" in table.column_names:
        weights = table.column("weight").to_numpy().astype(np.int64, copy=False)
    if not _lexsorted(keys):
        order = np.lexsort(keys.T[::-1])
        keys = keys[order]
        weights = weights[order] if weights is not None else None
    return keys, weights


def load_edges_parquet(path: str | os.PathLike, order: str = "src_dst") -> Int64Array:
    """Edges ``int64 (m, 2)`` from an ingest directory, an index directory or a file.

    Parameters
    ----------
    path : path-like
        An ingest output directory (then ``edges/<order>`` is read), or a Parquet
        file or directory whose first two columns are the endpoints.
    order : str
        Which index of an ingest directory: ``"src_dst"`` or ``"dst_src"``.
    """
    path = Path(path)
    if (path / MANIFEST).exists():
        path = path / "edges" / order
    keys, _ = load_index(path)
    if keys.shape[1] < 2:
        raise InputError(f"{path}: expected two integer columns, found {keys.shape[1]}")
    return np.ascontiguousarray(keys[:, :2])


def load_edges_npz(path: str | os.PathLike) -> Int64Array:
    """Edges ``int64 (m, 2)`` from ``edges.npz`` (array ``keys``) or an ingest directory."""
    path = Path(path)
    if path.is_dir():
        path = path / "edges.npz"
    try:
        with np.load(path) as data:
            keys = data["keys"]
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"cannot read edges from {path}: {exc}") from exc
    if keys.ndim != 2 or keys.shape[1] != 2:
        raise InputError(f"{path}: keys has shape {keys.shape}; expected (m, 2)")
    return np.ascontiguousarray(keys, dtype=np.int64)


def load_dictionary(path: str | os.PathLike, domain: str = "node") -> dict[str, np.ndarray]:
    """A dictionary as arrays ``id`` (int64), ``type`` and ``value`` (str), sorted by id.

    ``path`` is an ingest (or ticks) directory or the dictionary directory itself.
    """
    path = Path(path)
    if (path / "dictionary" / domain).exists():
        path = path / "dictionary" / domain
    table = _read_table(path).sort_by("id")
    return {n: table.column(n).to_numpy(zero_copy_only=False) for n in ("id", "type", "value")}


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """The ``manifest.json`` of an output directory."""
    path = Path(path)
    try:
        return json.loads((path / MANIFEST if path.is_dir() else path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read manifest of {path}: {exc}") from exc


def write_manifest(directory: str | os.PathLike, manifest: dict[str, Any]) -> None:
    """Write ``manifest.json`` (sorted keys, indented) into ``directory``."""
    Path(directory, MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def replay_ticks(
    path: str | os.PathLike, columns: tuple[str, ...] = ("src", "dst")
) -> Iterator[tuple[int, Int64Array, Int64Array]]:
    """Yield ``(tick, keys int64 (k, len(columns)), weights int64 (k,))`` in tick order.

    ``path`` is a ticks output directory (its ``ticks/`` holds ``tick=N`` partitions) or
    the partition root itself. Each batch is consolidated and sorted by key.
    """
    root = Path(path)
    if (root / "ticks").is_dir():
        root = root / "ticks"
    if not root.is_dir():
        raise InputError(f"cannot read ticks from {path}: not a directory")
    found = []
    for entry in os.listdir(root):
        m = re.fullmatch(r"tick=(-?\d+)", entry)
        if m:
            found.append((int(m.group(1)), root / entry))
    for tick, part in sorted(found):
        keys, weights = load_index(part, list(columns))
        if weights is None:
            raise InputError(f"{part}: no weight column")
        yield tick, keys, weights


@contextlib.contextmanager
def staged_output(target: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Give a fresh directory beside ``target``; rename it to ``target`` on success.

    On any exception the staged directory is removed and ``target`` is untouched, so a
    failed run leaves no partial output. With ``overwrite`` an existing target is
    replaced only after the new one is complete.
    """
    target = Path(target).absolute()
    if target.exists() and not overwrite:
        raise InputError(f"{target} already exists; choose another path or overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    stage.mkdir()
    try:
        yield stage
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
            os.replace(target, old)
        os.replace(stage, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
