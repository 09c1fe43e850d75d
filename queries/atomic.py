"""Files that appear whole or not at all: write beside, fsync, rename, fsync the folder.

:func:`atomic_path` hands out a hidden temporary path beside the target
(``.NAME.PID.RANDOM.tmp``, which no reader looking for ``NAME`` or ``*.gz`` picks up);
on a clean exit the file is flushed to disk, renamed over the target and the folder
fsynced, so the rename survives a crash; an exception removes it. A writer killed
outright leaves its temporary behind; the next write to the same target removes it once
that process is gone. Standard library only; used by :mod:`queries.graphio` and
:mod:`queries.durable`.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> with atomic_path(os.path.join(d, "x.txt")) as tmp:
...     _ = open(tmp, "w").write("whole")
>>> os.listdir(d), open(os.path.join(d, "x.txt")).read()
(['x.txt'], 'whole')
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator

__all__ = ["atomic_path", "fsync_file", "fsync_folder"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """A temporary path to write ``path``'s new content to (see the module docstring)."""
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    _remove_stale_temps(folder, base)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_folder(folder)


def fsync_file(path: str | os.PathLike) -> None:
    """Flush a written file's data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_temps(folder: str, base: str) -> None:
    """Remove ``atomic_path`` temporaries of ``base`` whose writer process is gone."""
    prefix = f".{base}."
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for n in names:
        pid = n[len(prefix):-len(".tmp")].split(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, n))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: leave its file alone
        return True
    return True


def fsync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the data file is synced
        pass
    finally:
        os.close(fd)
