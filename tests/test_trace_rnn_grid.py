"""collectors/trace/rnn.py's launch rule against the kernels cuDNN launched on an H200 (a frozen copy of
results/h200/diagnostics/rnn-kernels-2026-11-28/rnn-kernels.json): every constant of the rule is what
benchmarks/rnn_kernel_grid.py derives from that grid, and the rule counts every backward call within its tolerance."""

from __future__ import annotations

import json
import statistics

import pytest
from paths import FROZEN, REPO, load_script

from collectors.trace import rnn
from planner.trace.predict import LIBRARY_LAUNCH

GRID = FROZEN / "h200" / "diagnostics" / "rnn-kernels-2026-11-28" / "rnn-kernels.json"
CEILINGS = FROZEN / "h200" / "ceilings.json"   # the same GPU type's dispatch benchmark


@pytest.fixture(scope="module")
def bench():
    return load_script(REPO / "benchmarks" / "rnn_kernel_grid.py")


@pytest.fixture(scope="module")
def grid() -> dict:
    return json.loads(GRID.read_text(encoding="utf-8"))


def test_every_constant_of_the_rule_is_the_one_the_grid_gives(bench, grid):
    derived = bench.derive(grid)
    assert derived == bench.in_rule()
    assert derived["SPLIT_DEPTH fp16"] > derived["SPLIT_DEPTH tf32"]   # fp16 splits only the deeper products


def test_the_rule_counts_every_backward_within_ten_percent_and_the_persistent_within_a_few_kernels(bench, grid):
    """The old rule counted a backward call about as its forward: 0.31-0.96 of what was launched, median 0.63."""
    rows = bench.compare(grid)
    backward = [r for r in rows if not r["call"].forward]
    standard = [r for r in backward if r["algorithm"] == rnn.STANDARD]
    assert len(standard) == 18 and all(abs(r["error"]) <= bench.TOLERANCE for r in standard)
    persistent = [r for r in rows if r["algorithm"] == rnn.PERSISTENT]
    assert len(persistent) == 15 and all(abs(r["rule"] - r["measured"]) <= 4 for r in persistent)
    packed = [r for r in standard if r["call"].packed]
    assert all(r["measured"] > 2.4 * r["call"].cell_steps for r in packed)   # ~3x the forward's, counted so
    assert all(r["rule"] > 2.4 * r["call"].cell_steps for r in packed)
    old = [p["rule"]["aten::_cudnn_rnn_backward"]["launches"] / p["launches"]["aten::_cudnn_rnn_backward"]
           for p in grid["points"] if p["rule"]["aten::_cudnn_rnn_backward"]["algorithm"] == rnn.STANDARD]
    assert statistics.median(old) < 0.7 and min(old) < 0.35   # what the grid said of the rule it was run beside
    assert statistics.median(abs(r["error"]) for r in standard) < 0.03


def test_the_benchmark_fails_where_the_rule_and_the_grid_part(bench, grid, monkeypatch, capsys):
    assert bench.main([str(GRID), str(CEILINGS)]) == 0
    monkeypatch.setattr(rnn, "SPLIT_DEPTH", {True: 4096, False: 4096})   # TF32's memsets no longer counted
    assert bench.main([str(GRID), str(CEILINGS)]) == 1
    err = capsys.readouterr().err
    assert "SPLIT_DEPTH tf32: derived 1024, the rule has 4096" in err
    assert "h256   L2 bi  T64" in err   # a backward 798 → 542 of 806 launches: off by a third


def test_the_split_depth_is_derived_only_where_the_grid_separates_it(bench, grid):
    """Where a shallower product split and a deeper did not, no depth is a threshold: none is derived (0), and the
    constant then differs from the rule's."""
    bad = json.loads(json.dumps(grid))
    for p in bad["points"]:   # the GRU's backward (depth 768) given an LSTM's memset each cell step
        if p["mode"] == "gru" and p["dtype"] == "tf32":
            p["kernels"]["aten::_cudnn_rnn_backward"]["Memset (Device)"] = p["steps"] * p["layers"]
    assert bench.derive(bad)["SPLIT_DEPTH tf32"] == 768
    for p in bad["points"]:   # and the deeper h1024 TF32 backward given none
        if p["hidden"] == 1024 and p["dtype"] == "tf32":
            p["kernels"]["aten::_cudnn_rnn_backward"]["Memset (Device)"] = 0
    assert bench.derive(bad)["SPLIT_DEPTH tf32"] == 0


def test_a_library_launch_costs_the_host_what_the_grid_measured_over_one_ops_dispatch(bench, grid):
    """predict.py's LIBRARY_LAUNCH: the issue time's growth a launch from 16 to 64 time steps (8 pairs, 5-11 µs)
    over the H200's dispatch benchmark's op_issue_s (6.3 µs)."""
    slopes = bench.launch_slopes(grid)
    assert len(slopes) == 8 and all(4e-6 < s < 12e-6 for s in slopes)
    ceilings = json.loads(CEILINGS.read_text(encoding="utf-8"))
    assert bench.library_launch(grid, ceilings) == LIBRARY_LAUNCH == 1.5
