"""Pure-numpy readers and writers of the pipeline's text formats (no Spark, no Java).

Holds the in-process *reference* edge-list reader :func:`read_edge_list` (SNAP text,
optionally gzip: ``src dst [more columns]`` with ``#`` comments), :func:`canonical_edges`
(undirected ``(min, max)``, self-loops dropped, duplicates merged), and the text change
format ``TICK +|- SRC DST`` (:func:`read_changes`, :func:`write_changes`,
:func:`consolidate_changes`). Relies on numpy only. Used by the Spark tests as the oracle
for :mod:`queries.spark.ingest` and :mod:`queries.spark.ticks`, and by ``ticks`` to write
the change format. The engine's own edge loader lives elsewhere; this one is the
pipeline's reference twin.

>>> canonical_edges(np.array([[2, 1], [1, 2], [3, 3], [4, 1]])).tolist()
[[1, 2], [1, 4]]
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from wcoj.errors import InputError

__all__ = [
    "read_edge_list",
    "canonical_edges",
    "read_changes",
    "write_changes",
    "consolidate_changes",
]

Int64Array = npt.NDArray[np.int64]


def _open_text(path: str | os.PathLike) -> io.TextIOBase:
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        return gzip.open(path, "rt") if gz else open(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_edge_list(path: str | os.PathLike, canonical: bool = False) -> Int64Array:
    """Read the first two integer columns of a SNAP-style edge list.

    Parameters
    ----------
    path : path-like
        Text file, gzip detected by its magic bytes; ``#`` starts a comment line; fields
        are separated by whitespace; columns after the second are ignored.
    canonical : bool
        Return :func:`canonical_edges` of the result instead of the raw rows.

    Returns
    -------
    numpy.ndarray
        ``int64`` array of shape ``(m, 2)``, in file order (or canonical order).

    Raises
    ------
    InputError
        Unreadable file, or a data line without two integers (file and line named).
    """
    with _open_text(path) as fh:
        lines = fh.read().splitlines()
    rows = []
    for line_no, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split()
        try:
            rows.append((int(fields[0]), int(fields[1])))
        except (IndexError, ValueError):
            raise InputError(
                f"{path}:{line_no}: expected 'SRC DST' with integer ids, found {text!r}"
            ) from None
    edges = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return canonical_edges(edges) if canonical else edges


def canonical_edges(edges: npt.ArrayLike) -> Int64Array:
    """Undirected simple-graph form: rows ``(min, max)``, no self-loops, sorted, unique."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    pairs = np.sort(edges, axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(pairs, axis=0)


def read_changes(path: str | os.PathLike) -> tuple[Int64Array, Int64Array, Int64Array]:
    """Read a change log with lines ``TICK +|- SRC DST`` (``#`` comments allowed).

    Returns
    -------
    ticks, keys, weights : numpy.ndarray
        ``int64`` arrays of shapes ``(n,)``, ``(n, 2)`` and ``(n,)`` (weights are +1/-1),
        one row per data line, in file order.

    Raises
    ------
    InputError
        Unreadable file or malformed line (file and line named).
    """
    with _open_text(path) as fh:
        lines = fh.read().splitlines()
    rows = []
    for line_no, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split()
        try:
            if len(fields) != 4 or fields[1] not in ("+", "-"):
                raise ValueError
            rows.append((int(fields[0]), 1 if fields[1] == "+" else -1,
                         int(fields[2]), int(fields[3])))
        except ValueError:
            raise InputError(
                f"{path}:{line_no}: expected 'TICK +|- SRC DST' with integers, found {text!r}"
            ) from None
    table = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return table[:, 0].copy(), table[:, 2:].copy(), table[:, 1].copy()


def consolidate_changes(
    ticks: npt.ArrayLike, keys: npt.ArrayLike, weights: npt.ArrayLike
) -> list[tuple[int, Int64Array, Int64Array]]:
    """Group changes by tick and consolidate each tick (sum per key, drop zeros).

    >>> out = consolidate_changes([1, 0, 1, 1], [[1, 2], [3, 4], [1, 2], [5, 6]], [1, 1, -1, 2])
    >>> [(t, k.tolist(), w.tolist()) for t, k, w in out]
    [(0, [[3, 4]], [1]), (1, [[5, 6]], [2])]

    Returns
    -------
    list of (tick, keys, weights)
        In increasing tick order; ticks whose changes cancel completely are left out.
    """
    ticks = np.asarray(ticks, dtype=np.int64).reshape(-1)
    keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
    weights = np.asarray(weights, dtype=np.int64).reshape(-1)
    order = np.lexsort((keys[:, 1], keys[:, 0], ticks))
    t, k, w = ticks[order], keys[order], weights[order]
    if t.size == 0:
        return []
    new = np.ones(t.size, dtype=bool)
    new[1:] = (t[1:] != t[:-1]) | np.any(k[1:] != k[:-1], axis=1)
    starts = np.flatnonzero(new)
    t, k, w = t[starts], k[starts], np.add.reduceat(w, starts)
    keep = w != 0
    t, k, w = t[keep], k[keep], w[keep]
    bounds = np.flatnonzero(np.diff(t)) + 1
    return [
        (int(tt[0]), kk, ww)
        for tt, kk, ww in zip(np.split(t, bounds), np.split(k, bounds), np.split(w, bounds))
        if tt.size
    ]


def write_changes(
    path: str | os.PathLike, ticks: Iterable[tuple[int, npt.ArrayLike, npt.ArrayLike]]
) -> int:
    """Write ``(tick, keys, weights)`` batches as lines ``TICK +|- SRC DST``.

    A weight ``w`` becomes ``|w|`` identical lines with the sign of ``w``. Written to a
    temporary file beside ``path`` and renamed, so no partial file is left on error.

    Returns
    -------
    int
        The number of lines written.
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    n_lines = 0
    try:
        with open(tmp, "w") as fh:
            for tick, keys, weights in ticks:
                for chunk in _change_lines(int(tick), keys, weights):
                    fh.write(chunk)
                    n_lines += chunk.count("\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return n_lines


def _change_lines(tick: int, keys: npt.ArrayLike, weights: npt.ArrayLike) -> Iterator[str]:
    keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
    weights = np.asarray(weights, dtype=np.int64).reshape(-1)
    reps = np.abs(weights)
    keys, signs = np.repeat(keys, reps, axis=0), np.repeat(np.sign(weights), reps)
    if keys.shape[0] == 0:
        return
    prefix = np.where(signs > 0, f"{tick} + ", f"{tick} - ")
    lines = np.char.add(np.char.add(np.char.add(prefix, keys[:, 0].astype(str)), " "),
                        keys[:, 1].astype(str))
    yield "\n".join(lines.tolist()) + "\n"
