"""Ctrl-C held back where stopping half-way would do harm: a commit applied to some
indexes and not others, or a kernel half loaded by LLVM.

``deferred_interrupts`` holds back SIGINT inside a block and raises its
``KeyboardInterrupt`` when the block is done. Ticks and transactions enter one around
their commit (``indexes.transaction``, ``queries.graph``, ``queries.database``), and
every kernel's compile or load from Numba's disk cache runs inside one (hooked here into
``wcoj.kernels.memory``): an interrupt landing in llvmlite's object-cache callback, a
Python function called from C++, was reported as "Exception ignored" and LLVM then read
a buffer that was never filled, crashing the process (SIGSEGV).

>>> import signal
>>> try:
...     with deferred_interrupts():
...         signal.raise_signal(signal.SIGINT)
...         print("the block finishes")
... except KeyboardInterrupt:
...     print("then Ctrl-C is raised")
the block finishes
then Ctrl-C is raised
"""

from __future__ import annotations

import _signal
import signal
import threading

from wcoj.kernels import memory as _memory

__all__ = ["deferred_interrupts", "interrupt_pending", "interrupts_default"]


class deferred_interrupts:  # noqa: N801 - used like a function: ``with deferred_interrupts():``
    """Hold back Ctrl-C (SIGINT) inside the block; raise its ``KeyboardInterrupt`` when
    the block is done. Only the main thread receives signals, so elsewhere (and where a
    program installed its own handler) this does nothing; blocks nest.

    Every small tick enters one, and swapping signal handlers costs two system calls
    (over a microsecond), so the first block replaces Python's default SIGINT handler
    once by ``_int_handler``, which acts exactly like it (raises ``KeyboardInterrupt``)
    except inside a block, where it notes the interrupt for the block's end.
    """

    __slots__ = ("active",)

    def __enter__(self):
        self.active = False
        if _STATE[0] or _get_ident() != _MAIN_IDENT:
            return self
        handler = _getsignal(_SIGINT)
        if handler is not _int_handler:
            if handler is not _default_int_handler:
                return self
            _signal.signal(_SIGINT, _int_handler)
        _STATE[0] = self.active = True
        return self

    def __exit__(self, *exc) -> None:
        if self.active:
            _STATE[0] = False
            if _STATE[1]:
                _STATE[1] = False
                raise KeyboardInterrupt


def _int_handler(signum, frame) -> None:
    """Python's default SIGINT behaviour, held back inside ``deferred_interrupts``."""
    if _STATE[0]:
        _STATE[1] = True
    else:
        raise KeyboardInterrupt


_STATE = [False, False]  # inside a block; an interrupt came meanwhile
_MAIN_IDENT = threading.main_thread().ident
_get_ident = threading.get_ident
_getsignal = _signal.getsignal
_SIGINT = int(signal.SIGINT)
_default_int_handler = signal.default_int_handler


def interrupt_pending() -> bool:
    """Whether a Ctrl-C came inside the ``deferred_interrupts`` block now running and
    waits for its end: long work polls it to stop early (``wcoj.shares``)."""
    return _STATE[1]


def interrupts_default() -> bool:
    """Whether SIGINT does what Python does by default (raise ``KeyboardInterrupt``),
    through Python's handler or ``deferred_interrupts``'."""
    return _getsignal(_SIGINT) in (_default_int_handler, _int_handler)


_memory.set_compile_guard(deferred_interrupts)
