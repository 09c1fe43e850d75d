"""``wcoj`` on hostile or corrupt input files: one line on stderr, exit status 2, no traceback."""

import gzip
import os
import subprocess
import sys

import pytest

from queries.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _corrupt_gzip(path, lines=b"1 2\n2 3\n3 1\n" * 5000, how="truncate"):
    data = gzip.compress(lines)
    if how == "truncate":
        data = data[:len(data) // 2]
    else:  # flip one byte of the CRC
        data = data[:-8] + bytes([data[-8] ^ 0xFF]) + data[-7:]
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("how, why", [("truncate", "truncated gzip data"),
                                      ("flip", "corrupt gzip data")])
@pytest.mark.parametrize("which", ["graph", "changes"])
def test_corrupt_gzip_is_one_line_and_exit_2(tmp_path, capsys, how, why, which):
    good = tmp_path / "ok.txt"
    good.write_text("1 2\n2 3\n")
    bad = _corrupt_gzip(tmp_path / f"{which}.txt.gz",
                        b"1 + 1 2\n" * 5000 if which == "changes" else b"1 2\n2 3\n3 1\n" * 5000,
                        how)
    argv = (["count", "--graph", str(bad), "--pattern", "triangle"] if which == "graph" else
            ["stream", "--graph", str(good), "--changes", str(bad), "--pattern", "triangle"])
    assert main(argv + ["-q"]) == 2
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err == [err[0]] and err[0].startswith(f"wcoj: error: cannot read {bad}: {why}")
    assert "Traceback" not in captured.err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_as_the_graph_is_one_line_and_exit_2(capsys):
    assert main(["count", "--graph", "/dev/zero", "--pattern", "triangle", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wcoj: error: /dev/zero:1: line longer than") and err.count("\n") == 1


def test_console_exit_status_for_a_corrupt_gzip(tmp_path):
    bad = _corrupt_gzip(tmp_path / "g.txt.gz")
    proc = subprocess.run([sys.executable, "-m", "queries.cli", "count", "--graph", str(bad),
                           "--pattern", "triangle", "-q"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("wcoj: error: cannot read") and proc.stderr.count("\n") == 1


def test_edges_past_memory_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    """A 1 MB gzip can expand to 268M valid edges: past the memory limit, reading them
    raised a bare ``MemoryError`` and ``wcoj count`` printed a traceback. (The error is
    injected where the blocks' edges are joined, the allocation that failed.)"""
    from queries import graphio

    def no_memory(parts, n_cols):
        raise MemoryError
    monkeypatch.setattr(graphio, "_concat", no_memory)
    big = tmp_path / "bomb.txt.gz"
    big.write_bytes(gzip.compress(b"1 2\n" * 100_000))
    assert main(["count", "--graph", str(big), "--pattern", "triangle", "-q"]) == 2
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err == [err[0]] and err[0].startswith(f"wcoj: error: {big}: out of memory while reading its edges")
    assert "Traceback" not in captured.err
