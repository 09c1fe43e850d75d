"""Freed memory kept in the process for reuse, instead of handed back to the OS at once.

A big query allocates and frees arrays of tens to hundreds of megabytes many times over
(join outputs, sort buffers, trace runs). glibc's ``malloc`` serves each of them with a
fresh ``mmap`` and returns it with ``munmap`` when freed, so every new array costs page
faults and zeroing by the kernel: in the 1,000-person transitive closure of
``bench_datalog`` that was 1.6-1.9 s of system time and about 40% of the query's wall
time. ``retain()`` raises glibc's mmap and trim thresholds (``mallopt``), so large arrays
come from the heap and freed ones are reused: there the closure took 0.62-0.64 s instead
of 0.95-1.05 s, and peak RSS 713 MB instead of 662 MB. The price is that memory a big
query freed stays with the process (up to the thresholds, 2 GB) rather than going back
to the OS, as in database engines that bring their own allocator.

``retain()`` also stops NumPy from asking the kernel for transparent huge pages for its
large arrays (``madvise(MADV_HUGEPAGE)``, which NumPy does for arrays of 4 MB and more).
Where the kernel then defragments memory on demand (``defrag`` set to ``madvise``, a common
default), the first touch of such an array can stall for compaction: on this project's
machine the first closure query after loading spent 0.4-0.5 s more in the kernel with
them (system time 0.63-0.73 s against 0.22-0.24 s, the query 1.07-1.35 s against
0.82-0.88 s), and later queries were no faster for them.

``import wcoj`` calls ``retain()`` unless the environment sets ``WCOJ_RETAIN_HEAP=0``;
the ``mallopt`` part does nothing where the C library is not glibc.

>>> retain() in (True, False)
True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["retain", "THRESHOLD"]

THRESHOLD = (1 << 31) - 1
"""Allocations up to this size come from the heap, and up to this much free memory at
its top is kept (``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD``; an int, as ``mallopt`` takes)."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def retain(threshold: int = THRESHOLD) -> bool:
    """Keep freed memory up to ``threshold`` bytes for reuse, and no huge pages for NumPy's
    arrays (see the module docstring); True when the C library took both settings."""
    _no_huge_pages()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold)) & bool(mallopt(_M_TRIM_THRESHOLD, threshold))


def _no_huge_pages() -> None:
    """NumPy's ``madvise(MADV_HUGEPAGE)`` of large arrays turned off (the switch NumPy's own
    ``NUMPY_MADVISE_HUGEPAGE=0`` sets, which only works before NumPy is imported)."""
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is not None:
        switch(False)


def retain_by_default() -> None:
    """``import wcoj``: ``retain()`` unless ``WCOJ_RETAIN_HEAP=0``."""
    if os.environ.get("WCOJ_RETAIN_HEAP", "1") != "0":
        retain()
