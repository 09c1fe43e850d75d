"""Edge-list and change-log files for the graph API.

:func:`read_edges` reads SNAP text (``#``/``%`` comments, whitespace or CSV, gzip by its
magic bytes, extra columns such as timestamps ignored unless asked for);
:func:`read_changes`, :func:`iter_change_rows` and :func:`write_changes` handle the
change format ``TICK +|- SRC DST``; :func:`queries.stream.last_line_wins` and the
generators of :mod:`queries.generators` are re-exported. Relies on numpy, :mod:`queries.textblocks`,
:mod:`queries.atomic` and ``wcoj.errors`` (no pyspark: the Spark pipeline's reader is
:mod:`queries.spark.textio`). Used by ``queries.cli``, ``queries.graph_demo``, tests
and benchmarks.

Files are read a megabyte of whole lines at a time (:func:`queries.textblocks.iter_blocks`,
gzip inflated as a stream), so memory stays near the parsed output and hostile input
ends in an :class:`~wcoj.errors.InputFileError` naming the file. Blocks are parsed
vectorised; a block with anything unusual is read line by line, naming the file, line
and text of a bad one.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "g.txt")
>>> _ = open(p, "w").write("# a comment\\n1 2 1700000000\\n2 3 1700000005\\n")
>>> read_edges(p).tolist()
[[1, 2], [2, 3]]
>>> edges, extra = read_edges(p, with_extra=True); extra.tolist()
[[1700000000], [1700000005]]
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from queries.atomic import atomic_path
from queries.generators import generate_changes, generate_power_law
from queries.stream import _fold_ticks, last_line_wins
from queries.textblocks import CHUNK_BYTES, iter_blocks
from wcoj.errors import InputError, InputFileError, excerpt

__all__ = [
    "read_edges",
    "read_changes",
    "iter_change_rows",
    "last_line_wins",
    "write_changes",
    "generate_power_law",
    "generate_changes",
]

I64 = npt.NDArray[np.int64]
MAX_ID = (1 << 62) - 1  # the graph API's id range, see queries.graph.as_edge_array
_COMMENT_LINES = re.compile(rb"(?m)^[ \t]*[#%][^\n]*\n?")
_I64_EDGES = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)  # fromstring saturates to these


# ---------------------------------------------------------------------------- lines


def _is_comment(line: bytes) -> bool:
    s = line.lstrip()
    return s[:1] in (b"#", b"%")


def _first_data_line(data: bytes) -> tuple[int, bytes]:
    """The 1-based number and text of the first line that is neither blank nor a comment."""
    lo, no = 0, 1
    while lo < len(data):
        hi = data.find(b"\n", lo)
        hi = len(data) if hi < 0 else hi
        line = data[lo:hi]
        if line.strip() and not _is_comment(line):
            return no, line
        lo, no = hi + 1, no + 1
    return 0, b""


def _int_or_none(field: bytes) -> int | None:
    try:
        return int(field)
    except ValueError:
        return None


def _found(line: bytes) -> str:
    """A bad line as a message quotes it: a bounded excerpt (one line was 6 MB)."""
    return excerpt(line.decode("utf-8", "replace").strip())


def _split(line: bytes, csv: bool) -> list[bytes]:
    return [f.strip() for f in line.split(b",")] if csv else line.split()


# ---------------------------------------------------------------------------- edges


def read_edges(path: str | os.PathLike, *, columns: tuple[int, int] = (0, 1),
               with_extra: bool = False, strict: bool = False,
               chunk_bytes: int = CHUNK_BYTES):
    """Read an edge list: SNAP text, CSV or TSV, optionally gzip-compressed.

    Parameters
    ----------
    path : path-like
        Lines ``SRC DST [more columns]``. Fields are separated by whitespace, or by commas
        when the first data line holds a comma (CSV; a first line with no numeric field is
        a header and skipped). Lines starting with ``#`` or ``%`` are comments; blank lines
        are skipped. Gzip is recognised by its magic bytes, whatever the file's name.
    columns : (int, int)
        The 0-based fields holding the source and target ids.
    with_extra : bool
        Also return the other fields (timestamps, ratings, ...) as an ``int64`` array of
        shape ``(m, n_extra)`` in file order; every line must then have the same number
        of integer fields.
    strict : bool
        Require every data line to have the same number of fields, all integers. Without
        it, fields after the id columns may be missing or non-numeric (they are ignored).
    chunk_bytes : int
        Bytes of (decompressed) text read and parsed at a time; bounds the memory used
        besides the output.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, numpy.ndarray)
        ``int64`` edges of shape ``(m, 2)`` in file order (duplicates and self-loops kept;
        ``Graph.load_edges`` drops them), and the extra columns when ``with_extra``.

    Raises
    ------
    InputFileError
        Unreadable file, corrupt gzip data, a line longer than 1 MiB, or a line whose id
        fields are missing, not integers or outside ``[0, 2**62)``; the message names the
        file, the 1-based line and the line's text. Also more edges than fit in memory
        (a small gzip can expand to billions of lines).

    Complexity: O(file size), vectorised; about 0.5 s for the 1.3M lines of ego-Twitter.
    Memory: one block of ``chunk_bytes`` plus about twice the output.
    """
    src, dst = (int(c) for c in columns)
    if min(src, dst) < 0 or src == dst:
        raise InputError(f"columns must be two different field numbers >= 0, got {columns}")
    name, cols = os.fspath(path), [src, dst]
    try:
        return _read_edge_blocks(name, path, cols, with_extra, strict, chunk_bytes)
    except MemoryError:  # e.g. a small gzip that expands to billions of valid lines
        raise InputFileError(f"{name}: out of memory while reading its edges (16 bytes per edge, "
                             "plus the text block being parsed): split the file, or ingest it "
                             "with `wcoj spark ingest`", name) from None


def _read_edge_blocks(name: str, path, cols: list[int], with_extra: bool, strict: bool,
                      chunk_bytes: int):
    """``read_edges``'s loop over the file's blocks."""
    src, dst = cols
    edge_parts: list[I64] = []
    extra_parts: list[I64] = []
    csv = None  # decided, with the header, by the file's first data line
    width = None  # fields per data line, set by the first one (enforced when uniform)
    for first_no, block in iter_blocks(path, chunk_bytes=chunk_bytes):
        header = False
        if csv is None:
            no, first = _first_data_line(block)
            if not no:
                continue  # comments and blank lines only
            csv = b"," in first
            header = all(_int_or_none(f) is None for f in _split(first, csv))
        table = _fast_table(block, csv, header)
        if (table is None or table.shape[1] <= max(cols) or not _ids_in_range(table[:, cols])
                or ((with_extra or strict) and len(table) and width not in (None, table.shape[1]))):
            edges, extra, width = _slow_read(name, block, first_no, csv, header, (src, dst),
                                             with_extra, strict, width)
        else:
            width = width if width is not None or not len(table) else table.shape[1]
            edges = table[:, cols]
            extra = table[:, [c for c in range(table.shape[1]) if c not in cols]]
        if len(edges):
            edge_parts.append(np.ascontiguousarray(edges))
            if with_extra:
                extra_parts.append(np.ascontiguousarray(extra))
    edges = _concat(edge_parts, 2)
    return (edges, _concat(extra_parts, width - 2 if extra_parts else 0)) if with_extra else edges


def _concat(parts: list[I64], n_cols: int) -> I64:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros((0, n_cols), np.int64)


def _ids_in_range(ids: I64) -> bool:
    return not ids.size or (int(ids.min()) >= 0 and int(ids.max()) <= MAX_ID)


def _fast_table(data: bytes, csv: bool, header: bool) -> I64 | None:
    """All fields as an ``(n_lines, n_fields)`` table, or None when anything is unusual.

    None sends the caller to the line-by-line reader: a non-integer token, lines with
    different numbers of fields, a value that saturated int64, an empty CSV field.
    Works on byte positions: token starts and newlines located with numpy, fields per
    line counted by ``searchsorted``, comment and header lines cut out before one
    ``np.fromstring`` parses every token.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    if csv:
        data = data.replace(b",", b" ")
    space = np.frombuffer(data, dtype=np.uint8) <= 32  # blanks, tabs, CR, LF
    starts = ~space
    starts[1:] &= space[:-1]
    token_pos = np.flatnonzero(starts)
    newline_pos = np.flatnonzero(buf == 10)
    line_lo = np.concatenate([[0], newline_pos + 1])  # byte range of each line
    line_hi = np.concatenate([newline_pos, [len(buf)]])
    first_tok = np.searchsorted(token_pos, line_lo)
    per_line = np.searchsorted(token_pos, line_hi) - first_tok
    used = np.flatnonzero(per_line > 0)
    lead = buf[token_pos[first_tok[used].clip(0, max(len(token_pos) - 1, 0))]]
    drop = used[(lead == ord("#")) | (lead == ord("%"))]
    data_lines = np.setdiff1d(used, drop, assume_unique=True)
    if header and len(data_lines):
        drop = np.union1d(drop, data_lines[:1])
        data_lines = data_lines[1:]
    counts = per_line[data_lines]
    if not len(counts):
        return np.zeros((0, 2), np.int64)
    width = int(counts[0])
    if (counts != width).any():
        return None
    if csv:  # width - 1 commas on every line, else an empty field or a stray separator
        comma_pos = np.flatnonzero(buf == ord(","))
        commas = (np.searchsorted(comma_pos, line_hi[data_lines])
                  - np.searchsorted(comma_pos, line_lo[data_lines]))
        if (commas != width - 1).any():
            return None
    if len(drop) > 10_000:
        data = _COMMENT_LINES.sub(b"", data)
        if header:
            data = data.lstrip()
            data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
    elif len(drop):
        cuts = np.stack([line_lo[drop], np.minimum(line_hi[drop] + 1, len(buf))], axis=1)
        keep_lo = np.concatenate([[0], cuts[:, 1]]).tolist()
        keep_hi = np.concatenate([cuts[:, 0], [len(buf)]]).tolist()
        data = b"".join(data[a:b] for a, b in zip(keep_lo, keep_hi))
    try:
        values = np.fromstring(data, dtype=np.int64, sep=" ")
    except ValueError:
        return None
    if values.size != width * len(counts) or np.isin(values, _I64_EDGES).any():
        return None
    return values.reshape(-1, width)


def _slow_read(name: str, data: bytes, first_no: int, csv: bool, header: bool,
               cols: tuple[int, int], with_extra: bool, strict: bool, width: int | None
               ) -> tuple[I64, I64 | None, int | None]:
    """Line by line: read a block ``_fast_table`` declined, or name its first bad line.

    ``data`` starts at line ``first_no``; ``width`` is the field count of the file's first
    data line, None until one was seen. Returns the block's edges, its extra columns
    (when ``with_extra``) and ``width``.
    """
    need = max(cols) + 1
    uniform = strict or with_extra
    edges: list[tuple[int, int]] = []
    extras: list[list[int]] = []
    skip_header = header
    for no, line in enumerate(data.split(b"\n"), start=first_no):
        if not line.strip() or _is_comment(line):
            continue
        if skip_header:
            skip_header = False
            continue
        fields = _split(line, csv)

        def bad(why: str, line: bytes = line, no: int = no) -> InputFileError:
            return InputFileError(f"{name}:{no}: {why}, found {_found(line)}", name, no)

        if len(fields) < need:
            raise bad(f"expected at least {need} fields (SRC in field {cols[0]}, DST in "
                      f"field {cols[1]})")
        if uniform:
            width = len(fields) if width is None else width
            if len(fields) != width:
                raise bad(f"expected {width} fields like the first data line, got {len(fields)}")
        ids = [_int_or_none(fields[c]) for c in cols]
        if None in ids:
            raise bad("expected integer node ids")
        if not all(0 <= i <= MAX_ID for i in ids):
            raise bad("node ids must be in [0, 2**62)")
        edges.append((ids[0], ids[1]))
        if uniform:
            rest = [_int_or_none(f) for c, f in enumerate(fields) if c not in cols]
            if None in rest or not all(_I64_EDGES[0] < v < _I64_EDGES[1] for v in rest):
                raise bad("expected integer fields (int64) after the node ids")
            extras.append(rest)
    out = np.array(edges, dtype=np.int64).reshape(-1, 2)
    if not with_extra:
        return out, None, width
    return out, np.array(extras, dtype=np.int64).reshape(len(edges), (width or 2) - 2), width


# ---------------------------------------------------------------------------- changes


def read_changes(path: str | os.PathLike, *, directed: bool = False,
                 chunk_bytes: int = CHUNK_BYTES) -> list[tuple[int, I64, I64]]:
    """Read a change log of lines ``TICK +|- SRC DST`` into ticks.

    Lines of one tick must be contiguous; ticks are returned in file order. Within a
    tick the last line about an edge wins (``+ 1 2`` then ``- 1 2`` deletes it, ``- 1 2``
    then ``+ 1 2`` inserts it), so every edge appears at most once per tick, in either
    ``inserts`` or ``deletes``. Undirected (the default, like ``Graph()``), ``1 2`` and
    ``2 1`` are the same edge; pass ``directed=True`` for a directed graph. The file is
    read ``chunk_bytes`` at a time; to apply ticks while reading, see
    :func:`iter_change_rows`.

    Returns
    -------
    list of (tick, inserts, deletes)
        ``tick`` an int; ``inserts`` and ``deletes`` ``int64`` arrays of shape ``(k, 2)``
        in file order of their deciding lines.

    Raises
    ------
    InputFileError
        Unreadable file or corrupt gzip data, a malformed line (a tick outside int64
        included), or a tick whose lines are split by another tick's; the message names
        the file and the 1-based line.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.txt")
    >>> _ = open(p, "w").write("1 + 1 2\\n1 + 2 3\\n1 - 2 1\\n2 - 2 3\\n")
    >>> [(t, i.tolist(), d.tolist()) for t, i, d in read_changes(p)]
    [(1, [[2, 3]], [[2, 1]]), (2, [], [[2, 3]])]
    """
    out: list[tuple[int, I64, I64]] = []
    tick, pieces = None, []  # the open tick and its rows so far
    for rows, _ in _change_blocks(path, chunk_bytes, ordered=False):
        t = rows[:, 0]
        cuts = np.flatnonzero(t[1:] != t[:-1]) + 1
        for seg in np.split(rows, cuts):
            if int(seg[0, 0]) != tick:
                if pieces:
                    out.append((tick, *_split_ops(_fold_ticks(_concat(pieces, 4), directed))))
                tick, pieces = int(seg[0, 0]), []
            pieces.append(seg)
    if pieces:
        out.append((tick, *_split_ops(_fold_ticks(_concat(pieces, 4), directed))))
    return out


def iter_change_rows(path: str | os.PathLike, *, chunk_rows: int = 1 << 20,
                     chunk_bytes: int = CHUNK_BYTES) -> Iterator[I64]:
    """Stream a change log as ``int64`` arrays of rows ``(tick, op, src, dst)``.

    The lines ``TICK +|- SRC DST`` of the file, in file order, with ``op`` +1 for ``+``
    and -1 for ``-``; no last-line-wins folding (that is the consumer's, per tick).
    Ticks must not decrease, which also keeps each tick's lines together. Arrays have
    ``chunk_rows`` rows (the last one fewer) and may end inside a tick; the file is read
    ``chunk_bytes`` at a time, so memory stays bounded whatever the file's size: about
    three arrays of ``chunk_rows`` rows (32 bytes each) plus ~11x ``chunk_bytes``.

    Raises
    ------
    InputFileError
        As :func:`read_changes`, or a tick smaller than the one before it. It is raised
        only after every valid row before the bad line has been yielded; ``.line`` is
        the bad line and ``.tick`` its tick when that field parsed (None otherwise), so a
        consumer that applies a tick once the next one starts knows whether the last
        tick it saw was complete (``err.tick is not None and err.tick > last``).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "c.txt")
    >>> _ = open(p, "w").write("1 + 1 2\\n1 - 2 3\\n# note\\n2 + 2 3\\n")
    >>> [a.tolist() for a in iter_change_rows(p, chunk_rows=2)]
    [[[1, 1, 1, 2], [1, -1, 2, 3]], [[2, 1, 2, 3]]]
    """
    chunk_rows = max(int(chunk_rows), 1)
    pending: list[I64] = []
    n_pending = 0
    blocks = _change_blocks(path, chunk_bytes, ordered=True)
    while True:
        error = None
        try:
            rows, _ = next(blocks)
            pending.append(rows)
            n_pending += len(rows)
        except StopIteration:
            break
        except InputFileError as exc:  # the valid rows before it come out first
            error = exc
        if n_pending >= chunk_rows or (error and n_pending):
            table = _concat(pending, 4)
            full = len(table) if error else len(table) // chunk_rows * chunk_rows
            for lo in range(0, full, chunk_rows):
                yield table[lo:lo + chunk_rows]
            pending, n_pending = [table[full:]], len(table) - full
        if error:
            raise error
    if n_pending:
        yield _concat(pending, 4)


def _change_blocks(path: str | os.PathLike, chunk_bytes: int, ordered: bool
                   ) -> Iterator[tuple[I64, I64]]:
    """Yield ``(rows, line_nos)`` per block: valid ``(tick, op, src, dst)`` rows, in order.

    ``ordered``: ticks must not decrease; else (``read_changes``) they need only be
    contiguous. At a bad line, the valid rows before it are yielded, then the error is
    raised.
    """
    name = os.fspath(path)
    last_tick, last_no = None, 0
    started: dict[int, int] = {}  # tick -> its first line, when not ordered
    for first_no, block in iter_blocks(path, chunk_bytes=chunk_bytes):
        rows, nos, error = _parse_changes(name, block, first_no)
        if len(rows):
            t = rows[:, 0]
            prev = np.concatenate([[t[0] if last_tick is None else last_tick], t[:-1]])
            cut, order_error = None, None
            if ordered:
                back = np.flatnonzero(t < prev)
                if len(back):
                    cut, tick = int(back[0]), int(t[back[0]])
                    prev_no = int(nos[cut - 1]) if cut else last_no
                    order_error = (f"tick {tick} comes after tick {int(prev[cut])} (line "
                                   f"{prev_no}); ticks must not decrease")
            else:
                new = np.flatnonzero(t != prev)
                if last_tick is None:
                    new = np.concatenate([[0], new])
                for i in new.tolist():
                    tick, no = int(t[i]), int(nos[i])
                    if tick in started:
                        cut = i
                        order_error = (f"tick {tick} continues here after other ticks (it "
                                       f"started at line {started[tick]}); keep each tick's "
                                       "lines together")
                        break
                    started[tick] = no
            if cut is not None:
                no = int(nos[cut])
                rows, nos = rows[:cut], nos[:cut]
                error = InputFileError(f"{name}:{no}: {order_error}", name, no, tick)
        if len(rows):
            last_tick, last_no = int(rows[-1, 0]), int(nos[-1])
            yield rows, nos
        if error:
            raise error


def _parse_changes(name: str, block: bytes, first_no: int
                   ) -> tuple[I64, I64, InputFileError | None]:
    """The block's rows and their line numbers up to its first malformed line, and the
    error for that line (None when every line is well formed)."""
    fast = _fast_changes(block)
    if fast is not None:
        rows, line_pos = fast
        return rows, line_pos + first_no, None
    rows, nos = [], []
    for no, line in enumerate(block.split(b"\n"), start=first_no):
        fields = line.split()
        if not fields or _is_comment(line):
            continue
        vals = [_int_or_none(f) for f in fields] if len(fields) == 4 else [None]
        tick = _int_or_none(fields[0])
        why = None
        if None in (vals[0], *vals[2:]) or fields[1] not in (b"+", b"-"):
            why = f"expected 'TICK +|- SRC DST' with integers, found {_found(line)}"
        elif not (0 <= vals[2] <= MAX_ID and 0 <= vals[3] <= MAX_ID):
            why = f"node ids must be in [0, 2**62), found {_found(line)}"
        elif not _I64_EDGES[0] <= tick <= _I64_EDGES[1]:
            why = f"tick must fit in int64, found {_found(line)}"
        if why:
            return (np.array(rows, dtype=np.int64).reshape(-1, 4), np.array(nos, np.int64),
                    InputFileError(f"{name}:{no}: {why}", name, no, tick))
        rows.append((tick, 1 if fields[1] == b"+" else -1, vals[2], vals[3]))
        nos.append(no)
    return np.array(rows, dtype=np.int64).reshape(-1, 4), np.array(nos, np.int64), None


def _fast_changes(block: bytes) -> tuple[I64, I64] | None:
    """Rows ``(tick, op, src, dst)`` and 0-based line positions of a well-formed block.

    None when anything is unusual (a line without 4 fields, an op other than a lone ``+``
    or ``-``, a non-integer, a saturated or out-of-range value): ``_parse_changes`` then
    goes line by line and names the line. Vectorised like ``_fast_table``: the op bytes
    and comment lines are blanked in a copy of the block, one ``np.fromstring`` parses the
    rest.
    """
    buf = np.frombuffer(block, dtype=np.uint8)
    space = buf <= 32
    starts = ~space
    starts[1:] &= space[:-1]
    token_pos = np.flatnonzero(starts)
    newline_pos = np.flatnonzero(buf == 10)
    line_lo = np.concatenate([[0], newline_pos + 1])
    line_hi = np.concatenate([newline_pos, [len(buf)]])
    first_tok = np.searchsorted(token_pos, line_lo)
    per_line = np.searchsorted(token_pos, line_hi) - first_tok
    used = np.flatnonzero(per_line > 0)
    lead = buf[token_pos[first_tok[used]]]
    comment = (lead == ord("#")) | (lead == ord("%"))
    data_lines = used[~comment]
    if (per_line[data_lines] != 4).any():
        return None
    op_pos = token_pos[first_tok[data_lines] + 1]
    ops = buf[op_pos]
    if (((ops != ord("+")) & (ops != ord("-"))) | ~space[op_pos + 1]).any():
        return None
    text = bytearray(block)
    blank = np.frombuffer(text, dtype=np.uint8)
    blank[op_pos] = 32
    if comment.any():  # blank whole comment lines: a +1/-1 step at each end, then cumsum
        step = np.zeros(len(buf) + 1, np.int8)
        step[line_lo[used[comment]]] += 1
        step[line_hi[used[comment]]] -= 1
        blank[np.cumsum(step[:-1]) > 0] = 32
    try:
        values = np.fromstring(bytes(text), dtype=np.int64, sep=" ")
    except ValueError:
        return None
    if values.size != 3 * len(data_lines) or np.isin(values, _I64_EDGES).any():
        return None
    values = values.reshape(-1, 3)
    ids = values[:, 1:]
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) > MAX_ID):
        return None
    rows = np.empty((len(values), 4), np.int64)
    rows[:, 0] = values[:, 0]
    rows[:, 1] = np.where(ops == ord("+"), 1, -1)
    rows[:, 2:] = ids
    return rows, data_lines


def _split_ops(rows: I64) -> tuple[I64, I64]:
    """One tick's rows ``(tick, op, src, dst)`` as its inserts and deletes."""
    return (np.ascontiguousarray(rows[rows[:, 1] == 1][:, 2:]),
            np.ascontiguousarray(rows[rows[:, 1] == -1][:, 2:]))


def write_changes(path: str | os.PathLike,
                  ticks: Iterable[tuple[int, npt.ArrayLike, npt.ArrayLike]]) -> int:
    """Write ``(tick, inserts, deletes)`` as lines ``TICK + SRC DST`` then ``TICK - SRC DST``.

    Gzip-compressed when ``path`` ends in ``.gz``. Returns the number of lines written.
    The file appears whole or not at all: it is written to a hidden temporary beside
    ``path`` (``.NAME.PID.RANDOM.tmp``, which no reader looking for ``NAME`` or for
    ``*.gz`` picks up), flushed to disk with ``fsync``, renamed over ``path``, and the
    folder is fsynced so the rename survives a crash. An exception removes the
    temporary; a writer killed outright (SIGKILL, power loss) leaves it behind, and the
    next ``write_changes`` to the same ``path`` removes it once its process is gone.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> write_changes(os.path.join(d, "c.txt"), [(1, [[1, 2]], [[2, 3]]), (2, [], [[1, 2]])])
    3
    >>> print(open(os.path.join(d, "c.txt")).read(), end=""); os.listdir(d)
    1 + 1 2
    1 - 2 3
    2 - 1 2
    ['c.txt']
    """
    path = os.fspath(path)
    with atomic_path(path) as tmp, open(tmp, "xb") as raw:
        if path.endswith(".gz"):
            with gzip.GzipFile(filename=os.path.basename(path), mode="wb", fileobj=raw) as fh:
                return _write_lines(fh, ticks)
        return _write_lines(raw, ticks)


def _write_lines(fh, ticks: Iterable[tuple[int, npt.ArrayLike, npt.ArrayLike]]) -> int:
    n_lines = 0
    for tick, inserts, deletes in ticks:
        for sign, edges in ((b"+", inserts), (b"-", deletes)):
            e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
            if not len(e):
                continue
            prefix = b"%d %s " % (int(tick), sign)
            fh.write(b"\n".join(prefix + b"%d %d" % (a, b) for a, b in e.tolist()) + b"\n")
            n_lines += len(e)
    return n_lines
