"""Bounded reading of line-oriented text files: blocks of whole lines, a megabyte at a time.

Holds :func:`iter_blocks`, the one way :mod:`queries.graphio` reads a file: plain files,
gzip (recognised by its magic bytes ``1f 8b``, decompressed as a stream, several members
allowed) and devices or pipes such as ``/dev/zero`` or ``/dev/stdin``. Memory stays
proportional to ``chunk_bytes + max_line`` whatever the file's (or the gzip's inflated)
size, so a gzip bomb or an endless line ends in a typed error after a megabyte or two,
never in a ``MemoryError``. Every failure is an :class:`~wcoj.errors.InputFileError`
naming the file, and the line when it is known: unreadable files, corrupt or truncated
gzip data (never a raw ``zlib.error``, ``EOFError`` or ``BadGzipFile``), over-long lines.
Relies on the standard library and ``wcoj.errors``; used by :mod:`queries.graphio`.

>>> import gzip, os, tempfile
>>> p = os.path.join(tempfile.mkdtemp(), "t.txt.gz")
>>> _ = open(p, "wb").write(gzip.compress(b"1 2\\n3 4\\n5 6"))
>>> list(iter_blocks(p, chunk_bytes=5))
[(1, b'1 2\\n'), (2, b'3 4\\n'), (3, b'5 6')]
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from wcoj.errors import InputFileError

__all__ = ["iter_blocks", "CHUNK_BYTES", "MAX_LINE"]

CHUNK_BYTES = 1 << 20  # 1 MiB of (decompressed) text per read; parsing holds ~11x that
MAX_LINE = 1 << 20  # a line longer than 1 MiB is not an edge or a change: refuse it
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, dropped from the start of the file


def iter_blocks(path: str | os.PathLike, *, chunk_bytes: int = CHUNK_BYTES,
                max_line: int = MAX_LINE) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_no, block)``: the file's bytes cut at line ends, in order.

    Each block holds whole lines and ends with ``b"\\n"``, except the file's last block
    when the file does not end with one; ``first_line_no`` is the 1-based number of the
    block's first line. Blocks are about ``chunk_bytes`` long (longer by at most one
    line, shorter at the end). Empty files yield nothing.

    Parameters
    ----------
    path : path-like
        A file, a gzip file (by content, whatever its name) or a device.
    chunk_bytes : int
        Bytes read (after decompression) per step.
    max_line : int
        The longest line accepted, in bytes.

    Raises
    ------
    InputFileError
        The file cannot be opened or read, its gzip data is corrupt or truncated, or a
        line is longer than ``max_line`` bytes (``/dev/zero``, a gzip of zeros); the
        message names the file, and the line where it is known. Blocks before the
        failure have been yielded.

    Complexity: O(file size) time; O(chunk_bytes + max_line) memory.
    """
    name = os.fspath(path)
    chunk_bytes, max_line = max(int(chunk_bytes), 1), max(int(max_line), 1)
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputFileError(f"cannot read {name}: {_reason(exc)}", name) from None
    with raw:
        stream = _decompressed(raw, name)
        line_no, carry, first = 1, b"", True
        while True:
            chunk = _read(stream, chunk_bytes, path, line_no)
            if not chunk:
                if first and carry.startswith(_BOM):
                    carry = carry[len(_BOM):]
                if carry:
                    yield line_no, carry
                return
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n") + 1
            if cut:
                block, carry = buf[:cut], buf[cut:]
                if first and block.startswith(_BOM):
                    block = block[len(_BOM):]
                first = False
                yield line_no, block
                line_no += block.count(b"\n")
            else:
                carry = buf
            if len(carry) > max_line:  # no end in sight: /dev/zero, a gzip bomb of zeros
                raise InputFileError(f"{name}:{line_no}: line longer than {max_line} bytes; "
                                     "not a text file of edges or changes?", name, line_no)


def _decompressed(raw: BinaryIO, name: str) -> BinaryIO:
    """``raw`` itself, or a streaming gunzip of it when it starts with the gzip magic."""
    try:
        head = raw.peek(len(_GZIP_MAGIC))[:len(_GZIP_MAGIC)]
    except OSError as exc:
        raise InputFileError(f"cannot read {name}: {_reason(exc)}", name) from None
    return gzip.GzipFile(fileobj=raw, mode="rb") if head == _GZIP_MAGIC else raw


def _read(stream: BinaryIO, n: int, path, line_no: int) -> bytes:
    """Up to ``n`` bytes; gzip and I/O failures become an error naming the file and the
    line where the damage is (or the first line of the failed read, for I/O errors)."""
    name = os.fspath(path)
    try:
        return stream.read(n)
    except EOFError:  # the gzip module's word for a truncated member
        why, is_gzip = "truncated gzip data (the file ends inside a compressed member)", True
    except (OSError, zlib.error) as exc:  # BadGzipFile is an OSError
        is_gzip = isinstance(exc, (gzip.BadGzipFile, zlib.error))
        why = f"corrupt gzip data ({_reason(exc)})" if is_gzip else _reason(exc)
    if is_gzip:  # a read of n bytes fails as a whole: find the line that does not inflate
        line_no = max(line_no, _first_bad_line(path))
    raise InputFileError(f"cannot read {name}: {why} at or after line {line_no}", name,
                         line_no) from None


def _first_bad_line(path, step: int = 1 << 16) -> int:
    """The line of gzip file ``path`` in which its data stops inflating: the file read
    again ``step`` bytes at a time, counting the lines that came out whole (to within
    ``step`` bytes of text of the damage; the error path only, in bounded memory)."""
    lines = 1
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream:
            while chunk := stream.read(step):
                lines += chunk.count(b"\n")
    except (OSError, EOFError, zlib.error):
        pass
    return lines


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
