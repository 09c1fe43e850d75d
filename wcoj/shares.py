"""Thread shares of one job: the calling thread and pinned helper threads work together.

A large tick's delta terms run as several calls of one kernel (``run_program``), each over
a share of the delta; the kernels release the GIL. ``run_shares(fn, n, threads)`` returns
``[fn(0), ..., fn(n - 1)]``, computed by the caller and up to ``threads - 1`` helpers, each
taking the next share nobody has taken. Two things made the obvious ``pool.map`` slower
than one thread at a thousand changes a tick (measured on this project's 2-core host):

* the caller waited idle while the pool's threads woke up, instead of working;
* Linux put a woken helper on the CPU of the thread that woke it, the one about to run a
  share itself, and the two shares took turns on one CPU until the scheduler moved one
  (a few milliseconds: longer than the whole job).

So each helper thread is pinned to one CPU the process may use (its main thread's
affinity: ``taskset``, cgroups), and a job goes to the helpers of the CPUs other than the
caller's. Where the CPU of a thread cannot be read (not Linux), the helpers are not
pinned.

Relies on the standard library, ``wcoj.errors`` and ``wcoj.interrupts``. Used by ``wcoj.generic_join`` (a tick's delta
terms) and ``indexes.index`` (a large change staged on every index at once).

>>> run_shares(lambda i: i * i, 5, 2)
[0, 1, 4, 9, 16]
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from wcoj.errors import as_interrupt
from wcoj.interrupts import deferred_interrupts, interrupt_pending

__all__ = ["run_shares"]

_LOCK = threading.Lock()
_HELPERS: dict[int, ThreadPoolExecutor] = {}  # CPU (or -1 - i when not pinned) -> its one-thread helper
_GETCPU: Callable[[], int] | bool | None = None  # None: not looked up yet; False: missing
_LOCAL = threading.local()  # .helper: this thread is one of the helpers


def _getcpu() -> Callable[[], int] | None:
    """glibc's ``sched_getcpu`` (the caller's CPU now), or ``None`` where it is missing
    (looked up once)."""
    global _GETCPU
    if _GETCPU is None:
        _GETCPU = False
        if hasattr(os, "sched_setaffinity"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).sched_getcpu
                fn.restype, fn.argtypes = ctypes.c_int, []
                if fn() >= 0:
                    _GETCPU = fn
            except (OSError, AttributeError):
                pass
    return _GETCPU or None


def _start_helper(cpu: int) -> None:
    """Mark the calling thread as a helper and pin it to ``cpu`` (when ``cpu >= 0`` and
    the process may use it)."""
    _LOCAL.helper = True
    if cpu >= 0:
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            pass


def _helper(key: int) -> ThreadPoolExecutor:
    """The one-thread helper of CPU ``key`` (pinned to it), or the ``-1 - key``-th unpinned one."""
    h = _HELPERS.get(key)
    if h is None:
        with _LOCK:
            h = _HELPERS.get(key)
            if h is None:
                h = _HELPERS[key] = ThreadPoolExecutor(1, thread_name_prefix=f"wcoj-share-{key}",
                                                       initializer=_start_helper, initargs=(key,))
    return h


def _helpers(n: int) -> list[ThreadPoolExecutor]:
    """Up to ``n`` helpers on CPUs other than the caller's."""
    if n <= 0:
        return []
    getcpu = _getcpu()
    if getcpu is None:
        return [_helper(-1 - i) for i in range(n)]
    here = getcpu()
    return [_helper(c) for c in sorted(os.sched_getaffinity(os.getpid())) if c != here][:n]


def run_shares(fn: Callable[[int], object], n: int, threads: int) -> list:
    """``[fn(0), ..., fn(n - 1)]``, computed by this thread and up to ``threads - 1``
    helper threads (fewer when the process may use fewer CPUs), each taking the next
    share not yet taken. ``fn`` should release the GIL (a ``nogil`` kernel) for the shares
    to overlap. Returns once every started share is done, also when one raises: the first
    error (by share) is raised then, and no further shares start. Called inside a share
    (on a helper), it runs every share on its caller: a helper waiting for another
    helper that waits for it would wait for ever.

    Ctrl-C is held back for the whole job (``deferred_interrupts``): no share starts once
    it came, and its ``KeyboardInterrupt`` is raised when every helper is done. Raised
    anywhere inside, it could leave a helper running a kernel over arrays the caller then
    freed (a crash), or break the lock of a ``Future`` being waited on."""
    results: list = [None] * n
    errors: dict[int, BaseException] = {}
    claim = itertools.count()

    def work() -> None:
        while not errors and not interrupt_pending():
            i = next(claim)
            if i >= n:
                return
            try:
                results[i] = fn(i)
            except BaseException as e:  # noqa: BLE001 - re-raised below, after every share stopped
                errors[i] = as_interrupt(e)

    with deferred_interrupts():
        helpers = _helpers(min(threads, n) - 1) if not getattr(_LOCAL, "helper", False) else []
        futures: list[Future] = [h.submit(work) for h in helpers]
        try:
            work()
        finally:
            for f in futures:  # every helper is done before this returns or raises
                while True:
                    try:
                        f.result()  # ``work`` raises nothing; a program's own SIGINT handler may
                        break
                    except BaseException as e:  # noqa: BLE001 - stop the shares, keep waiting
                        errors.setdefault(-1, e)
    if errors:
        raise errors[min(errors)]
    return results
