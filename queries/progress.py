"""What a long step tells its user: ``slow_step`` announces a step that is still running
after a second, then how long it took (a first run compiles the kernels it needs for
seconds to tens of seconds, and nothing else moves meanwhile); ``duration`` writes a time
in the unit that reads best. Used by the command-line tool and the demo.

>>> duration(0.0000042), duration(0.0042), duration(4.2)
('4.2 µs', '4.20 ms', '4.20 s')
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["slow_step", "duration", "NOTICE_AFTER"]

NOTICE_AFTER = 1.0  # seconds a step runs before slow_step announces it
COMPILES = "a first run compiles its kernels, later runs read them from the cache"


@contextlib.contextmanager
def slow_step(say: Callable[[str], None] | None, what: str, after: float | None = None,
              done: bool = True) -> Iterator[None]:
    """Inside the block, ``say("<what> (<why it may be slow>) ...")`` once the block has
    run ``after`` seconds (``NOTICE_AFTER``; from a timer thread), and at its end, if it
    was announced and ``done``, ``say("<what>: done in <time>")``. ``say`` None: silent."""
    said = []

    def notice() -> None:
        said.append(True)
        say(f"{what} ({COMPILES}) ...")

    timer = threading.Timer(NOTICE_AFTER if after is None else after, notice)
    timer.daemon = True
    if say is not None:
        timer.start()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timer.cancel()
    if said and done:
        say(f"{what}: done in {duration(time.perf_counter() - t0)}")


def duration(seconds: float) -> str:
    """``seconds`` as µs, ms or s, three significant digits or so."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
