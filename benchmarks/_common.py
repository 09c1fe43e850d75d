"""Shared benchmark helpers: the header line, median timing after warm-up, tables.

Every benchmark prints one header (name, git commit, versions, seed), then tables whose
ratios are measured side by side in the same run, because these machines are shared and
noisy. Relies on numpy and numba only (for their versions) and on ``git`` when present.

>>> fmt_ratio(10.0, 2.5), fmt_ratio(None, 1.0), fmt_ms(1234.5678), fmt_ms(0.01234)
('4.0x', '-', '1234.6', '0.0123')
>>> print_table(["n", "ms"], [[10, "1.5"], [1000, "12.0"]])
   n    ms
  10   1.5
1000  12.0
>>> row = row_printer(["op", "n"], [5, 4])
   op     n
>>> row("plus", 10)
 plus    10
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["base_parser", "parse_size", "commit", "header", "median_ms", "time_once_ms",
           "fmt_ms", "fmt_ratio", "print_table", "row_printer", "Results", "add_json_arg", "peak_mib"]

ROOT = Path(__file__).resolve().parents[1]


def parse_size(text: str) -> int:
    """``"1e6"`` or ``"1000000"`` -> 1000000."""
    return int(float(text))


def base_parser(description: str, sizes: Sequence[str] = ("1e4", "1e5")) -> argparse.ArgumentParser:
    """An argument parser with the common ``--sizes``, ``--repeat`` and ``--seed``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--sizes", nargs="+", type=parse_size, default=[parse_size(s) for s in sizes],
                   help="input sizes, e.g. 1e4 1e5 (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per cell; the median is shown")
    p.add_argument("--seed", type=int, default=0, help="seed of the numpy generator")
    return p


def add_json_arg(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--json FILE``: also write what the benchmark prints as data (``Results``)."""
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE "
                   "(benchmarks/plots.py draws figures from it)")
    return p


class Results:
    """What a benchmark prints, kept as data: rows per table, plus the header's facts.

    ``add`` one dict per printed row; ``write`` dumps ``{"benchmark", "header", "args",
    "tables": {name: [row, ...]}}`` as JSON (nothing when ``path`` is None).

    >>> r = Results("bench_x", seed=0, args={"sizes": [10]})
    >>> r.add("rows", n=10, ms=1.5)
    >>> r.tables["rows"], r.data()["benchmark"]
    ([{'n': 10, 'ms': 1.5}], 'bench_x')
    """

    def __init__(self, name: str, seed: int, args: dict[str, Any] | None = None, **extra: Any):
        self.name, self.args = name, dict(args or {})
        self.header = header(name, seed, **extra)  # what the run printed first
        self.tables: dict[str, list[dict[str, Any]]] = {}

    def add(self, table: str, **row: Any) -> None:
        self.tables.setdefault(table, []).append(row)

    def data(self) -> dict[str, Any]:
        return {"benchmark": self.name, "header": self.header,
                "args": self.args, "tables": self.tables}

    def write(self, path: str | Path | None) -> None:
        if path:
            Path(path).write_text(json.dumps(self.data(), indent=1, default=_plain) + "\n")


def _plain(x: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists (for ``json.dumps``)."""
    return x.tolist() if hasattr(x, "tolist") else str(x)


def peak_mib(fn: Callable[[], Any]) -> tuple[Any, float | None]:
    """Run ``fn``; return its result and how far the process's resident set rose above
    its size before the call at its peak, in MiB (Linux: the peak is reset through
    ``/proc/self/clear_refs``; None where that is not possible)."""
    def status(field: str) -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field))
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current resident set
        before = status("VmRSS:")
    except OSError:
        return fn(), None
    out = fn()
    return out, max(status("VmHWM:") - before, 0) / 1024


def commit() -> str:
    """Short hash of HEAD, with ``+dirty`` when tracked files differ; ``unknown`` without git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def header(name: str, seed: int, **extra: Any) -> str:
    """``bench_x  commit=ab12cd3 numba=0.68.1 numpy=2.4.6 python=3.11.7 seed=0 ...``."""
    import numba
    import numpy

    parts = [name, f" commit={commit()}", f"numba={numba.__version__}", f"numpy={numpy.__version__}",
             f"python={platform.python_version()}", f"seed={seed}"]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(parts)


def time_once_ms(fn: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``fn`` once; return its result and the wall time in milliseconds."""
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e3


def median_ms(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``repeat`` calls of ``fn`` in ms, after ``warmup`` untimed calls
    (JIT compilation and first-touch page faults are not what we measure)."""
    for _ in range(warmup):
        fn()
    return statistics.median(time_once_ms(fn)[1] for _ in range(max(repeat, 1)))


def fmt_ms(ms: float | None) -> str:
    """Milliseconds with about four significant digits; ``skipped`` for None."""
    if ms is None:
        return "skipped"
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.3g}"


def fmt_ratio(num: float | None, den: float | None) -> str:
    """``num / den`` as ``12.3x``; ``-`` when either side is missing."""
    if num is None or den is None or den == 0:
        return "-"
    r = num / den
    return f"{r:.0f}x" if r >= 100 else f"{r:.1f}x" if r >= 0.1 else f"{r:.3f}x"


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Right-aligned columns, each as wide as its widest cell."""
    cells = [[str(c) for c in columns]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(columns))]
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)), flush=True)


def row_printer(columns: Sequence[str], widths: Sequence[int]) -> Callable[..., None]:
    """Print the header now; return a function printing one row, flushed at once (long
    runs show each row as soon as it is measured). Columns are right-aligned, at least
    as wide as their names."""
    widths = [max(w, len(c)) for c, w in zip(columns, widths)]

    def row(*cells: Any) -> None:
        print("  ".join(str(c).rjust(w) for c, w in zip(cells, widths)), flush=True)

    row(*columns)
    return row


def measure_tree(script: str, tree: str, argv: Sequence[str]) -> dict:
    """Run benchmark ``script`` with ``--child`` and ``argv`` on another checkout ``tree``
    (``PYTHONPATH`` on it, in a subprocess) and return the JSON it prints last: the same
    measurement of another version of the code, side by side with this one."""
    import os
    import sys
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    res = subprocess.run([sys.executable, str(Path(script).resolve()), "--child", *argv],
                         env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_trees(script: str, here: Callable[[], dict], tree: str | None, argv: Sequence[str]) -> dict:
    """``{"this tree": here()}``, plus ``tree``'s measurement by ``measure_tree`` when a
    tree is given (the ``--tree`` option of ``bench_q`` and ``bench_ontology``)."""
    trees = {"this tree": here()}
    if tree:
        trees[tree] = measure_tree(script, tree, argv)
    return trees
