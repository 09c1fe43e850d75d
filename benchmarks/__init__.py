"""Benchmarks: ``python -m benchmarks.bench_<topic> --sizes ... --repeat 5 --seed 0``.

Never collected by pytest (``testpaths`` leaves this folder out); no test asserts a timing.
Shared helpers (header line, median timing, tables) live in ``benchmarks._common``.
"""
