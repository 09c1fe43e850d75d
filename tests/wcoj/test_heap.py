"""``wcoj.heap``: glibc keeps freed memory for reuse after ``import wcoj``, unless
``WCOJ_RETAIN_HEAP=0``. Checked in fresh processes through glibc's own report of its
settings (``malloc_info``: large frees stay in the heap instead of being unmapped), and
NumPy's switch for huge pages of large arrays (off)."""

import subprocess
import sys

import pytest

SCRIPT = r"""
import ctypes, ctypes.util, numpy as np, wcoj
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.malloc_trim  # glibc only
a = np.ones(50_000_000 // 8)        # 50 MB: above glibc's default mmap threshold
del a
mallinfo = libc.mallinfo2
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
mallinfo.restype = Info
info = mallinfo()
print(info.fordblks >= 50_000_000)   # the freed 50 MB is free heap memory, kept for reuse
from numpy._core import multiarray
print(multiarray._set_madvise_hugepage(False))  # whether NumPy still asked for huge pages
"""


def _run(env):
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env)


def test_import_keeps_freed_memory_unless_turned_off():
    import os
    env = {**os.environ, "WCOJ_RETAIN_HEAP": "1"}
    r = _run(env)
    if r.returncode != 0 and ("malloc_trim" in r.stderr or "mallinfo2" in r.stderr):
        pytest.skip("not glibc (or older than 2.33): wcoj.heap does nothing there")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "False"]
    r = _run({**env, "WCOJ_RETAIN_HEAP": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]
