"""Raw memory access for the kernels, and the layout of the trie tables they read.

The join kernels read every trie through the addresses of its arrays (``wcoj.tables``
lays them out): a Numba tuple of arrays indexed at run time copies the whole tuple at
every access, which cost more than the join itself. ``load(addr, i)`` is the int64 at
``addr + 8 * i``; ``store(addr, i, x)`` writes it (the tries' in-place updates);
``prefetch(addr)`` asks the cache for a line (a hint; it never faults).

Under ``NUMBA_DISABLE_JIT=1`` the same names read and write through ``ctypes``, so the
kernels stay valid Python for coverage and ``pdb``. The caller keeps the arrays alive
while a kernel runs.

>>> import numpy as np
>>> from numba import njit
>>> third = njit(lambda addr: load(addr, 2))
>>> a = np.array([5, 6, 7], dtype=np.int64)
>>> int(third(a.ctypes.data))
7
"""

import contextlib
import ctypes
import time

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.core import cgutils
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

__all__ = ["load", "store", "prefetch", "cycles", "kernel", "row_kernel", "grown", "read_only", "TABLE_FIELDS", "V", "N", "LO", "HI", "BASE", "DENSE", "CAP",
           "USED", "DEAD", "ROOM", "LIVE", "MINV", "MAXV", "NONUNIT",
           "RUN_FIELDS", "RUN_KEYS", "RUN_WEIGHTS", "RUN_N"]

# A trie of arity r is described to the kernels by a table int64[r, TABLE_FIELDS], one row
# per level (``wcoj.tables`` is the one Python module that builds, stacks and keeps them):
#
#   V      address of the level's values
#   N      level 0: positions of the root segment (dense: of the value range); else 0
#   LO     address of the children's starts (at the last level: of the leaf weights)
#   HI     address of the children's ends (0 at the last level); a compact (CSR) trie
#          points it 8 bytes past LO, so the end of child p is the start of child p + 1
#   BASE   level 0 dense: the value at position 0
#   DENSE  level 0: 1 when position = value - BASE (a present value has children)
#   CAP    address of the children's capacities (0: an immutable, compact trie)
#   USED   entries of the level's pool in use (live, slack inside segments, dead)
#   DEAD   entries of the level's pool in freed or moved segments
#   ROOM   entries allocated for the level's arrays
#   LIVE   entries that hold a value (at the last level: the rows)
#   MINV   no value of the level is smaller (a bound: deletes do not raise it)
#   MAXV   no value of the level is larger
#   NONUNIT  at the last level: leaves whose weight is not 1 (0: the trie is a set)
TABLE_FIELDS = 14
V, N, LO, HI, BASE, DENSE, CAP, USED, DEAD, ROOM, LIVE, MINV, MAXV, NONUNIT = range(TABLE_FIELDS)

# A trace's runs are handed to the lattice kernels (``wcoj.kernels.lattice``) as a run
# table int64[runs, RUN_FIELDS + 2 d] (``wcoj.tables.RunTable`` builds it), one row per run:
#
#   RUN_KEYS     address of the run's keys, int64[n, arity + d] (rows then times), row-major
#   RUN_WEIGHTS  address of its weights, int64[n]
#   RUN_N        n
#   then the run's coordinate-wise least time (d values) and greatest time (d values)
RUN_FIELDS = 3
RUN_KEYS, RUN_WEIGHTS, RUN_N = range(RUN_FIELDS)

class _Kernel(CPUDispatcher):
    """A dispatcher that compiles one version per argument *types*: a kernel called from
    another with a constant (``f(x, 0)``, ``g(..., False)``) would otherwise get its own
    version for that constant's literal type, then another for the plain type. On a cold
    cache those duplicates cost seconds each (the demo's first count compiled
    ``_extend_rows`` twice, the generated tick's ``dispatch`` seven times). LLVM still
    folds a constant where it inlines the callee. ``get_call_template`` is Numba's
    (pinned in pyproject.toml); ``tests/wcoj/kernels/test_memory.py`` checks the effect."""

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(types.unliteral(a) for a in args),
                                         {k: types.unliteral(v) for k, v in kws.items()})

    def compile(self, sig):
        # compiling, or loading Numba's disk cache, under the guard ``wcoj.interrupts``
        # sets: Ctrl-C landing in one of llvmlite's callbacks crashes the process
        with _GUARD[0]():
            return super().compile(sig)

    def _compile_for_args(self, *args, **kws):
        # a first call from Python with new argument types: compiles, or loads Numba's disk
        # cache (the kernels it calls included); timed for ``load_seconds``
        t0 = time.perf_counter()
        try:
            return super()._compile_for_args(*args, **kws)
        finally:
            _LOADING[0] += time.perf_counter() - t0


_LOADING = [0.0]
_GUARD = [contextlib.nullcontext]


def set_compile_guard(guard) -> None:
    """Run every kernel's compile or cache load inside ``guard()``, a context manager
    (``wcoj.interrupts`` sets one that holds Ctrl-C back; kernels import nothing of ours)."""
    _GUARD[0] = guard


def load_seconds() -> float:
    """Seconds this process has spent compiling kernels or loading them from Numba's
    cache (their first calls with each set of argument types). Work timed to learn from
    (``queries.refresh``) subtracts what a first call added: a cold first tick is not what
    the next one will cost."""
    return _LOADING[0]


class _RowKernel(_Kernel):
    """A ``_Kernel`` compiled without an entry point from Python (Numba's
    ``no_cpython_wrapper`` and ``no_cfunc_wrapper``): only kernels call it, natively. A
    call from Python (a test, a doctest) goes through a jitted shim made at its first
    such call, where calling the missing wrapper would crash the process."""

    _shim = None

    def __call__(self, *args):
        if self._shim is None:
            f = self
            self._shim = _Kernel(py_func=lambda *a: f(*a), locals={}, targetoptions={"nopython": True})
        return self._shim(*args)


def _compiled(cls=_Kernel, **options):
    def wrap(f):
        if config.DISABLE_JIT:
            return f
        d = cls(py_func=f, locals={}, targetoptions={"nopython": True, "nogil": True, **options})
        d.enable_caching()
        return d
    return wrap


# ``kernel``: a compiled function (cached on disk, releasing the GIL). The helpers a join
# or a tick calls per row, per candidate or per change never allocate, so ``row_kernel``
# compiles them without Numba's reference counting (the ``_nrt`` option): with it, each
# call counted references to its array arguments on entry and exit, two atomic
# operations per array and call (Numba's pruning of those pairs gives up on paths longer
# than 15 blocks). Without it, an allocation in such a helper fails to compile. ``_nrt``
# is underscored in Numba (pinned in pyproject.toml): a version without it fails loudly at
# the first compile ("Unrecognized options"), never silently.
#
# Row kernels also get no entry point from Python (``_RowKernel``): a wrapper unboxes
# every argument, and for helpers of 10-25 array arguments, building and compiling the
# wrappers cost about 1 s of a cold first count (9.6-10.5 s instead of 11.1-12.5 s in
# alternating runs).
kernel = _compiled()
row_kernel = _compiled(_RowKernel, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)


def read_only(a):
    """``a``, or a read-only view of it: for the arrays a kernel only reads. Numba types a
    read-only array apart from a writable one, so a kernel fed a frozen Z-set's arrays one
    time and fresh ones the next compiled twice (seconds each on a cold cache)."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


@kernel
def grown(a, m, cap):
    """A copy of ``a`` with room for ``cap`` rows, its first ``m`` rows kept (the output
    buffers and frontiers of the kernels grow this way). Element by element: a slice
    assignment compiles Numba's shape-mismatch message, seconds of a cold start for a
    check that cannot fail here."""
    out = np.empty((cap,) + a.shape[1:], dtype=a.dtype)
    src, dst = a.reshape(-1), out.reshape(-1)
    for i in range(m * (src.shape[0] // max(a.shape[0], 1))):
        dst[i] = src[i]
    return out


if config.DISABLE_JIT:
    def load(addr, i):
        return ctypes.c_int64.from_address(int(addr) + 8 * int(i)).value

    def store(addr, i, x):
        ctypes.c_int64.from_address(int(addr) + 8 * int(i)).value = int(x)

    def prefetch(addr):
        pass

    def cycles():
        return time.perf_counter_ns()
else:
    @intrinsic
    def load(typingctx, addr, i):
        """``int64`` at ``addr + 8 * i``."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            return builder.load(builder.gep(ptr, [args[1]]))
        return types.int64(types.int64, types.int64), codegen

    @intrinsic
    def store(typingctx, addr, i, x):
        """Write the ``int64`` ``x`` at ``addr + 8 * i``."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
            builder.store(args[2], builder.gep(ptr, [args[1]]))
            return context.get_dummy_value()
        return types.void(types.int64, types.int64, types.int64), codegen

    @intrinsic
    def prefetch(typingctx, addr):
        """Ask the cache for the line at ``addr`` (``llvm.prefetch``: a read, kept close)."""
        def codegen(context, builder, signature, args):
            i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0")
            builder.call(fn, [builder.inttoptr(args[0], i8p), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()
        return types.void(types.int64), codegen

    @intrinsic
    def cycles(typingctx):
        """The CPU's cycle counter (``llvm.readcyclecounter``; on x86 the TSC, which ticks
        at a constant rate): for timestamps inside a kernel, scaled to seconds by the
        caller against a clock read around the call."""
        def codegen(context, builder, signature, args):
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                                "llvm.readcyclecounter")
            return builder.call(fn, [])
        return types.int64(), codegen
