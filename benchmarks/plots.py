"""Figures from benchmark results: the files ``./dev bench NAME --json FILE`` writes.

Run ``python -m benchmarks.plots FILE.json [FILE.json ...] --out docs/figures`` to write
PNGs (headless: the Agg backend). Each figure reads only the numbers in its file; the
notebooks call the same functions on the results of the runs they make, so the pictures
in ``docs/performance.md`` and in the notebooks are drawn by one piece of code.

* ``bench_complexity``: ``complexity_figure(data, pattern)`` per pattern: per family, time
  against m, the largest intermediate result against m (log-log, the fitted exponent of
  each method in the legend, the AGM bound as a reference line) and the peak memory.
* ``bench_ticks``: ``ticks_figure(data)``: per-tick time against k, and the distribution of
  the latency of single-edge updates with p50 and p99 marked.
* ``bench_datalog``: ``datalog_figure(data)``: a view's update against re-running ``q``,
  per transaction size; ``recursion_figure(data)`` (a run with the closure at several
  sizes): the recursive queries' time and the closure's memory against people, with DuckDB.

Relies on matplotlib and numpy; used by the notebooks and by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["load", "fit_exponent", "complexity_figure", "ticks_figure", "datalog_figure",
           "recursion_figure", "figures", "main"]

AGM = {"triangle": 1.5, "4-cycle": 2.0}
STYLE = {"wcoj": dict(color="C0", marker="o"), "binary": dict(color="C3", marker="s"),
         "duckdb": dict(color="C2", marker="^")}
LABEL = {"wcoj": "generic join", "binary": "binary plan (same runtime)", "duckdb": "DuckDB"}


def load(path: str | Path) -> dict[str, Any]:
    """The JSON a benchmark wrote with ``--json``."""
    return json.loads(Path(path).read_text())


def fit_exponent(xs, ys) -> float | None:
    """Slope of the least-squares line through (log x, log y) over the positive points;
    None under two points.

    >>> round(fit_exponent([1e3, 1e4, 1e5], [2.0, 20.0, 200.0]), 6)
    1.0
    >>> fit_exponent([1e3, 1e4], [None, 5.0]) is None
    True
    """
    pts = [(np.log(x), np.log(y)) for x, y in zip(xs, ys) if y is not None and y > 0]
    if len(pts) < 2:
        return None
    a, b = zip(*pts)
    return float(np.polyfit(a, b, 1)[0])


def _plt():
    import matplotlib.pyplot as plt
    return plt


def _slope(e: float | None) -> str:
    return f"slope {e:.2f}" if e is not None else "slope -"


def _reference(ax, ms, anchor_m, anchor_y, power: float, label: str) -> None:
    """A dashed line y = c m^power through (anchor_m, anchor_y)."""
    ms = np.array(sorted(ms), dtype=float)
    ax.plot(ms, anchor_y * (ms / anchor_m) ** power, ls="--", color="0.5", lw=1, label=label)


# ---------------------------------------------------------------- complexity
def complexity_figure(data: dict[str, Any], pattern: str = "triangle"):
    """One row per graph family: seconds, largest intermediate rows and peak MiB against m."""
    plt = _plt()
    rows = [r for r in data["tables"]["growth"] if r["pattern"] == pattern]
    families = list(dict.fromkeys(r["family"] for r in rows))
    fig, axes = plt.subplots(len(families), 3, figsize=(15, 4.2 * len(families)), squeeze=False)
    power = AGM[pattern]
    for row_axes, family in zip(axes, families):
        cells = [r for r in rows if r["family"] == family]
        methods = list(dict.fromkeys(r["method"] for r in cells))
        ms = sorted({r["m"] for r in cells})
        t_ax, i_ax, p_ax = row_axes
        for method in methods:
            mine = [r for r in cells if r["method"] == method]
            x = [r["m"] for r in mine]
            for ax, key in ((t_ax, "seconds"), (i_ax, "intermediate")):
                y = [r[key] for r in mine]
                pts = [(a, b) for a, b in zip(x, y) if b]
                if not pts:
                    continue
                e = fit_exponent(x, y)
                ax.plot(*zip(*pts), label=f"{LABEL[method]} ({_slope(e)})", **STYLE[method])
            pts = [(r["m"], r["peak_mib"]) for r in mine if r["peak_mib"] is not None and r["seconds"]]
            if pts:
                p_ax.plot(*zip(*pts), label=LABEL[method], **STYLE[method])
        counts = {r["m"]: r["count"] for r in cells if r["count"] is not None}
        if counts:
            i_ax.plot(list(counts), list(counts.values()), color="0.3", ls=":", marker=".",
                      label=f"result ({_slope(fit_exponent(list(counts), list(counts.values())))})")
        i_ax.plot(ms, np.array(ms, dtype=float) ** power, ls="--", color="0.5", lw=1,
                  label=f"AGM bound m^{power:g}")
        first = next((r for r in cells if r["method"] == "wcoj" and r["seconds"]), None)
        if first:
            _reference(t_ax, ms, first["m"], first["seconds"], power, f"m^{power:g} (AGM), through wcoj's first point")
        t_ax.set(xscale="log", yscale="log", xlabel="edges m", ylabel="seconds (median)",
                 title=f"{pattern}s, {family}: time")
        i_ax.set(xscale="log", yscale="log", xlabel="edges m", ylabel="rows",
                 title=f"{pattern}s, {family}: largest intermediate result")
        p_ax.set(xscale="log", xlabel="edges m", ylabel="MiB above the process before the run",
                 title=f"{pattern}s, {family}: peak memory")
        for ax in row_axes:
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(_caption(data), fontsize=8, y=1.0)
    fig.tight_layout()
    return fig


def _caption(data: dict[str, Any]) -> str:
    return data.get("header", data.get("benchmark", ""))


# ---------------------------------------------------------------- ticks
TICK_LINES = [("apply_ms", "Graph.apply", dict(color="C0", marker="o")),
              ("python_ms", "Python sets: N(u) & N(v), rows built", dict(color="C1", marker="s")),
              ("recompute_ms", "recompute from scratch", dict(color="C3", marker="^")),
              ("floor_ms", "floor: one merge per changed edge (1 thread)", dict(color="0.4", marker="v", ls="--"))]


def ticks_figure(data: dict[str, Any]):
    """Per-tick ms against k (log-log), and the single-edge update latency distribution."""
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
    rows = data["tables"]["ticks"]
    ks = [r["k"] for r in rows]
    for key, label, style in TICK_LINES:
        y = [r.get(key) for r in rows]
        if any(v for v in y):
            a.plot(ks, y, label=f"{label} ({_slope(fit_exponent(ks, y))})", **style)
    edges = rows[0].get("edges") if rows else None
    a.set(xscale="log", yscale="log", xlabel="changed edges per tick, k", ylabel="ms per tick (median)",
          title=f"triangle view ticks on a power-law graph of {edges} edges")
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8)
    lat = np.array(data["tables"]["latency"][0]["microseconds"], dtype=float)
    if lat.size:
        bins = np.logspace(np.log10(max(lat.min(), 1e-3)), np.log10(lat.max()), 60)
        b.hist(lat, bins=bins, color="C0", alpha=0.8)
        for q, ls in ((50, "-"), (99, "--")):
            v = float(np.percentile(lat, q))
            b.axvline(v, color="k", ls=ls, label=f"p{q} = {v:.0f} µs")
        b.set(xscale="log", xlabel="µs per single-edge update (Graph.apply)", ylabel="updates",
              title=f"latency of {lat.size} single-edge updates")
        b.legend(fontsize=8)
        b.grid(True, which="both", alpha=0.3)
    fig.suptitle(_caption(data), fontsize=8, y=1.0)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- datalog
def datalog_figure(data: dict[str, Any]):
    """Per query: ms of a transaction with the view kept against transact + ``q`` (and
    DuckDB applying the change and re-running the query, when the run has it)."""
    plt = _plt()
    rows = data["tables"]["views"]
    queries = list(dict.fromkeys(r["query"] for r in rows))
    fig, axes = plt.subplots(1, len(queries), figsize=(6.5 * len(queries), 4.5), squeeze=False)
    for ax, q in zip(axes[0], queries):
        routes = list(dict.fromkeys(r.get("route", "auto") for r in rows if r["query"] == q))
        for i, route in enumerate(routes):  # --routes: one line per view route
            mine = [r for r in rows if r["query"] == q and r.get("route", "auto") == route]
            k = [r["tx_datoms"] for r in mine]
            y = [r["view_ms"] for r in mine]
            label = "transact with the view kept" + (f", routes={route}" if len(routes) > 1 else "")
            ax.plot(k, y, label=f"{label} ({_slope(fit_exponent(k, y))})", color=f"C{4 * i}", marker="o")
        mine = [r for r in rows if r["query"] == q and r.get("route", "auto") == routes[0]]
        k, y = [r["tx_datoms"] for r in mine], [r["requery_ms"] for r in mine]
        ax.plot(k, y, label=f"transact, then re-run q ({_slope(fit_exponent(k, y))})", color="C3", marker="s")
        duck = [r.get("duckdb_ms") for r in mine]
        if all(x is not None for x in duck):
            ax.plot(k, duck, label="DuckDB: apply the change, re-run the SQL (wall time)",
                    color="C2", marker="^", linestyle="--")
        ax.set(xscale="log", yscale="log", xlabel="datoms per transaction", ylabel="ms (median)",
               title=f"{q} view")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(_caption(data), fontsize=8, y=1.0)
    fig.tight_layout()
    return fig


def recursion_figure(data: dict[str, Any]):
    """Recursive queries asked once (table ``batch``): time against people for the
    transitive closure and reachability from one person, ours against DuckDB, and the
    closure's peak memory (each engine in a process of its own)."""
    plt = _plt()
    rows = data["tables"]["batch"]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.5))
    for ax, q, unit in ((axes[0], "closure", "ms"), (axes[1], "reach-one", "ms"), (axes[2], "closure", "mb")):
        mine = sorted((r for r in rows if r["query"] == q), key=lambda r: r["people"])
        n = [r["people"] for r in mine]
        for eng, style, label in (("engine", dict(color="C0", marker="o"), "this engine (q)"),
                                  ("duckdb", dict(color="C2", marker="^", linestyle="--"), "DuckDB recursive CTE")):
            y = [r.get(f"{eng}_{unit}") for r in mine]
            pts = [(a, b) for a, b in zip(n, y) if b is not None]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, label=f"{label} ({_slope(fit_exponent(xs, ys))})", **style)
        what = "peak RSS, MB" if unit == "mb" else "ms (wall)"
        title = {"closure": "transitive closure", "reach-one": "reachability from one person"}[q]
        ax.set(xscale="log", yscale="log", xlabel="people (each follows 10)", ylabel=what,
               title=title + (": memory" if unit == "mb" else ""))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(_caption(data), fontsize=8, y=1.0)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- files
def figures(data: dict[str, Any]) -> dict[str, Any]:
    """``{file stem: figure}`` for a benchmark's results."""
    name = data["benchmark"]
    if name == "bench_complexity":
        pats = dict.fromkeys(r["pattern"] for r in data["tables"]["growth"])
        return {f"complexity-{p.replace('-', '')}": complexity_figure(data, p) for p in pats}
    if name == "bench_ticks":
        return {"ticks": ticks_figure(data)}
    if name == "bench_datalog":
        out = {"datalog": datalog_figure(data)} if data["tables"].get("views") else {}
        if len({r["people"] for r in data["tables"].get("batch", []) if r["query"] == "closure"}) > 1:
            out["recursion"] = recursion_figure(data)
        return out
    raise SystemExit(f"no figure for {name}; plots draws bench_complexity, bench_ticks, bench_datalog")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", help="JSON files written by ./dev bench NAME --json FILE")
    p.add_argument("--out", default="docs/figures", help="folder for the PNGs (default: %(default)s)")
    p.add_argument("--dpi", type=int, default=90)
    args = p.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in args.files:
        for stem, fig in figures(load(f)).items():
            path = out / f"{stem}.png"
            fig.savefig(path, dpi=args.dpi, bbox_inches="tight")
            _plt().close(fig)
            print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
