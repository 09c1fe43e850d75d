"""Peak memory and time of the file readers, against an older commit's ``graphio``.

Run ``./dev bench readers --sizes 5e6 --baseline 0f1b291``. Per size it writes a change
log (``TICK +|- SRC DST``, 1000 lines a tick) and an edge list (``SRC DST``) of that many
lines, plain and gzip, then reads each one in a fresh process per reader and per version:
this tree's ``read_edges`` / ``read_changes`` / ``iter_change_rows`` (rows counted and
dropped), and the same readers of ``queries/graphio.py`` at ``--baseline`` (a git ref,
loaded from ``git show``; skipped when absent). Peak RSS is the child's high-water mark
(``VmHWM``, Linux only) minus that of a child that only imports the module (Python and
numpy), so it is what the read itself holds; ``out_MB`` is the size of the returned arrays. The median of
``--repeat`` runs is shown.
"""

from __future__ import annotations

import gzip
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, base_parser, header, print_table

CHILD = r"""
import importlib.util, sys, time
src, reader, path = sys.argv[1:4]
if src == "tree":
    import queries.graphio as g
else:
    spec = importlib.util.spec_from_file_location("graphio_baseline", src)
    g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
t0 = time.perf_counter()
if reader == "read_edges":
    out = g.read_edges(path).nbytes
elif reader == "read_changes":
    out = sum(i.nbytes + d.nbytes for _, i, d in g.read_changes(path))
elif reader == "iter_change_rows":
    out = sum(a.nbytes for a in g.iter_change_rows(path))
else:
    out = 0
seconds = time.perf_counter() - t0
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
print(seconds, out, hwm)
"""


def write_files(folder: Path, n: int, seed: int) -> dict[str, Path]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 1_000_000, size=(n, 2))
    ticks = np.arange(n) // 1000 + 1
    signs = np.where(rng.random(n) < 0.9, "+", "-")
    changes = "".join(f"{t} {s} {a} {b}\n" for t, s, (a, b) in zip(ticks.tolist(), signs,
                                                                   ids.tolist()))
    edges = "".join(f"{a} {b}\n" for a, b in ids.tolist())
    out = {}
    for name, text in (("changes.txt", changes), ("edges.txt", edges)):
        data = text.encode()
        (folder / name).write_bytes(data)
        (folder / (name + ".gz")).write_bytes(gzip.compress(data, 1))
        out[name], out[name + ".gz"] = folder / name, folder / (name + ".gz")
    return out


def run_child(src: str, reader: str, path: Path) -> tuple[float, int, float]:
    """(seconds, output bytes, peak RSS in MB) of one read in a fresh process.

    The peak is the child's own ``VmHWM`` (Linux): ``ru_maxrss`` would carry over the
    parent's resident size from before the ``exec``.
    """
    proc = subprocess.run([sys.executable, "-c", CHILD, src, reader, str(path)], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"child failed: {reader} {src} {path}\n{proc.stderr}")
    seconds, n_bytes, hwm_kib = proc.stdout.split()
    return float(seconds), int(n_bytes), int(hwm_kib) / 1024


def main(argv=None) -> None:
    p = base_parser(__doc__.splitlines()[0], sizes=("5e6",))
    p.add_argument("--baseline", default=None, metavar="REF",
                   help="git ref whose queries/graphio.py is the baseline (e.g. 0f1b291)")
    args = p.parse_args(argv)
    print(header("bench_readers", seed=args.seed))
    with tempfile.TemporaryDirectory() as tmp:
        versions = {"tree": "tree"}
        if args.baseline:
            text = subprocess.run(["git", "show", f"{args.baseline}:queries/graphio.py"], cwd=ROOT,
                                  capture_output=True, text=True)
            if text.returncode == 0:
                (Path(tmp) / "graphio_baseline.py").write_text(text.stdout)
                versions[args.baseline] = str(Path(tmp) / "graphio_baseline.py")
        rows = []
        for n in args.sizes:
            files = write_files(Path(tmp), n, args.seed)
            base = {v: run_child(src, "none", files["edges.txt"])[2]
                    for v, src in versions.items()}
            for fname, readers in (("edges.txt", ["read_edges"]),
                                   ("edges.txt.gz", ["read_edges"]),
                                   ("changes.txt", ["read_changes", "iter_change_rows"]),
                                   ("changes.txt.gz", ["read_changes", "iter_change_rows"])):
                size_mb = files[fname].stat().st_size / 1e6
                for reader in readers:
                    for v, src in versions.items():
                        if reader == "iter_change_rows" and v != "tree":
                            continue  # the baseline has no streaming reader
                        runs = [run_child(src, reader, files[fname]) for _ in range(args.repeat)]
                        secs = statistics.median(r[0] for r in runs)
                        peak = statistics.median(r[2] for r in runs) - base[v]
                        out_mb = runs[0][1] / 1e6
                        rows.append([n, fname, f"{size_mb:.1f}", reader, v, f"{secs:.2f}",
                                     f"{out_mb:.1f}", f"{peak:.0f}", f"{peak / size_mb:.2f}x"])
        print_table(["lines", "file", "file_MB", "reader", "version", "seconds", "out_MB",
                     "peak_MB", "peak/file"], rows)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"# {time.perf_counter() - t0:.0f} s", file=sys.stderr)
