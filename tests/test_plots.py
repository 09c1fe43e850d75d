"""benchmarks/plots.py draws each figure from a benchmark's JSON and writes PNGs."""

import json

import pytest

pytest.importorskip("matplotlib")

from benchmarks import plots  # noqa: E402
from benchmarks._common import Results  # noqa: E402


def complexity_results() -> dict:
    r = Results("bench_complexity", 0)
    for pattern, power in (("triangle", 1.5), ("4-cycle", 2.0)):
        for m in (1000, 10000):
            for method, t, inter in (("wcoj", 1e-6 * m, m), ("binary", 1e-9 * m**2, m**2 // 16),
                                     ("duckdb", None, None)):
                r.add("growth", pattern=pattern, family="skewed", m=m, edges=m, method=method,
                      seconds=t, intermediate=inter, peak_mib=None if t is None else 1.0,
                      count=int(m**power / 100), note="" if t else "interrupted")
    return r.data()


def ticks_results() -> dict:
    r = Results("bench_ticks", 0)
    for k in (1, 10, 100):
        r.add("ticks", k=k, edges=1000, ticks=3, apply_ms=0.01 * k, python_ms=0.02 * k,
              recompute_ms=5.0, floor_ms=0.001 * k)
    r.add("latency", edges=1000, updates=5, p50_us=10.0, p99_us=50.0, max_us=60.0,
          microseconds=[9.0, 10.0, 11.0, 50.0, 60.0])
    return r.data()


def datalog_results() -> dict:
    r = Results("bench_datalog", 0)
    for q in ("triangle", "ancestors"):
        for k in (1, 100):
            r.add("views", query=q, tx_datoms=k, view_ms=0.1 * k, requery_ms=20.0)
    for n in (1000, 4000):
        r.add("batch", query="reach-one", people=n, rows=n, engine_ms=0.01 * n, duckdb_ms=0.005 * n,
              datascript_ms="timeout", engine_mb=None, duckdb_mb=None)
        r.add("batch", query="closure", people=n, rows=n, engine_ms=1e-4 * n**2, duckdb_ms=2e-4 * n**2,
              datascript_ms="timeout", engine_mb=0.01 * n**2, duckdb_mb=0.004 * n**2)
    return r.data()


def test_fit_exponent_recovers_a_power_law():
    assert plots.fit_exponent([1e3, 1e4, 1e5], [1e3**1.5, 1e4**1.5, 1e5**1.5]) == pytest.approx(1.5)


def test_every_figure_is_written_as_a_png(tmp_path):
    files = []
    for i, data in enumerate((complexity_results(), ticks_results(), datalog_results())):
        f = tmp_path / f"r{i}.json"
        f.write_text(json.dumps(data))
        files.append(str(f))
    plots.main(files + ["--out", str(tmp_path / "figs")])
    pngs = sorted(p.name for p in (tmp_path / "figs").glob("*.png"))
    assert pngs == ["complexity-4cycle.png", "complexity-triangle.png", "datalog.png", "recursion.png", "ticks.png"]
    assert all((tmp_path / "figs" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_the_legend_carries_the_fitted_exponents():
    fig = plots.complexity_figure(complexity_results(), "triangle")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "generic join (slope 1.00)" in labels and "binary plan (same runtime) (slope 2.00)" in labels
    assert not any(label.startswith("DuckDB") for label in labels)  # no measured point: no line


def test_the_recursion_figure_fits_the_closure_s_growth():
    fig = plots.recursion_figure(datalog_results())
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["this engine (q) (slope 2.00)", "DuckDB recursive CTE (slope 2.00)"]
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()][0] == "this engine (q) (slope 1.00)"
