"""Ctrl-C held back (``wcoj.interrupts``): raised at the end of a block, never inside it,
and never inside a kernel's compile or load from Numba's cache, where it crashed LLVM.

The interrupts are real SIGINTs (``signal.raise_signal``), handled by Python's handler as
a user's Ctrl-C is.
"""

import signal
import threading

import numpy as np
import pytest
from numba import config as numba_config
from numba.core import event

from wcoj.interrupts import deferred_interrupts, interrupts_default
from wcoj.kernels.memory import kernel

pytestmark = pytest.mark.skipif(not interrupts_default(), reason="the test runner handles SIGINT itself")


def test_an_interrupt_in_a_block_is_raised_when_the_block_ends():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts():
            with deferred_interrupts():         # nested: only the outer block raises
                signal.raise_signal(signal.SIGINT)
                done.append("inner")
            done.append("outer")
    assert done == ["inner", "outer"]
    with deferred_interrupts():                 # the interrupt was consumed: nothing left over
        done.append("next")
    with pytest.raises(KeyboardInterrupt):      # outside a block, Ctrl-C acts as Python's default
        signal.raise_signal(signal.SIGINT)


def test_a_block_off_the_main_thread_holds_nothing_back():
    seen = []

    def worker():
        with deferred_interrupts() as block:
            seen.append(block.active)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [False]


class _InterruptOnce(event.Listener):
    """Sends one SIGINT when the dispatcher takes Numba's compiler lock: inside the
    compile (or cache load) of the kernel being called."""

    def __init__(self):
        self.sent = 0

    def on_start(self, ev):
        if not self.sent:
            self.sent += 1
            signal.raise_signal(signal.SIGINT)

    def on_end(self, ev):
        pass


@pytest.mark.skipif(numba_config.DISABLE_JIT, reason="no compiling without the JIT")
def test_ctrl_c_during_a_kernels_first_compile_waits_for_the_compile_to_finish():
    @kernel
    def doubled_sum(a):
        total = 0
        for x in a:
            total += 2 * x
        return total

    a = np.arange(5, dtype=np.int64)
    listener = _InterruptOnce()
    with event.install_listener("numba:compiler_lock", listener):
        with pytest.raises(KeyboardInterrupt):
            doubled_sum(a)
    assert listener.sent == 1
    # the compile (or load) ran to its end before the interrupt was raised: the kernel is
    # whole, and the next call runs it without compiling again
    assert len(doubled_sum.signatures) == 1
    assert doubled_sum(a) == 20
    assert len(doubled_sum.signatures) == 1
