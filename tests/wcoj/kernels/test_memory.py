"""The kernel decorators and raw memory access. Also run with ``NUMBA_DISABLE_JIT=1``."""

import numpy as np
import pytest
from numba import config

from wcoj.kernels.memory import _Kernel, grown, kernel, load, load_seconds, store


def _add(a, b):
    return a + b


def _calls_with_constants(x):
    return _add(x, 0) + _add(x, np.int64(1)) + _add(x, 2)


@pytest.mark.skipif(config.DISABLE_JIT, reason="compiled versions exist only with the JIT on")
def test_a_constant_argument_compiles_no_version_of_its_own():
    # a callee called with literal constants used to get one version per constant's
    # literal type, then one more for the plain type: seconds each on a cold cache.
    # Built here without the disk cache, which would load the caller without compiling.
    global _add
    plain = _add
    options = {"nopython": True, "nogil": True}
    try:
        _add = _Kernel(py_func=plain, locals={}, targetoptions=options)
        caller = _Kernel(py_func=_calls_with_constants, locals={}, targetoptions=options)
        assert caller(np.int64(5)) == 18
        assert len(_add.signatures) == 1
    finally:
        _add = plain


def _twice(x):
    return 2 * x


@pytest.mark.skipif(config.DISABLE_JIT, reason="nothing is compiled with the JIT off")
def test_a_first_call_counts_its_compile_in_load_seconds_a_second_does_not():
    # views learn from times less this (queries.refresh.stopwatch): a cold first tick
    # is not what the next one costs. No disk cache here: the first call compiles.
    k = _Kernel(py_func=_twice, locals={}, targetoptions={"nopython": True})
    before = load_seconds()
    assert k(np.int64(3)) == 6
    spent = load_seconds() - before
    assert spent > 0.001   # typing and compiling a function takes milliseconds at least
    assert k(np.int64(4)) == 8 and load_seconds() - before == spent
    assert k(2.5) == 5.0 and load_seconds() - before > spent   # a new type compiles again


@kernel
def _swap_in(addr, i, x):
    old = load(addr, i)
    store(addr, i, x)
    return old


def test_load_and_store_reach_an_array_through_its_address():
    a = np.array([5, 6, 7], dtype=np.int64)
    assert _swap_in(a.ctypes.data, 1, -4) == 6
    assert a.tolist() == [5, -4, 7]


@pytest.mark.parametrize("shape", [(5,), (5, 3), (0, 2)])
def test_grown_keeps_the_first_rows_and_makes_room(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    m = min(3, shape[0])
    out = grown(a, m, 9)
    assert out.shape == (9,) + shape[1:]
    assert np.array_equal(out[:m], a[:m])


@pytest.mark.parametrize("jit_off", [False, True])
def test_a_process_with_the_jit_off_is_warned_once_at_import(jit_off):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    if jit_off:
        env["NUMBA_DISABLE_JIT"] = "1"
    code = ("import warnings\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    warnings.simplefilter('always')\n"
            "    import wcoj.kernels.zsets, wcoj.kernels.program\n"
            "print(sum(type(w.message).__name__ == 'PerformanceWarning' for w in seen))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == ("1" if jit_off else "0")
