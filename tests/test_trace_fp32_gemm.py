"""Plain fp32 matrix products in a CPU trace: cuBLAS's SIMT SGEMM splits a deep reduction along K whatever its waves
(planner/trace/gemm.py Gemm.fill split_waves, efficiency.py Shape.simt), measured by benchmarks/gpu_gemm_grid.py."""

from __future__ import annotations

import pytest
import torch
from grid_runs import assert_every_setting_checked_and_timed, small_grid
from paths import REPO, load_script
from torch import nn

from collectors.trace.collect import trace_run
from collectors.workloads import Workload
from planner.trace.efficiency import AT_ROOF, Efficiency, KindFit, Shape
from planner.trace.gemm import Gemm
from planner.trace.kinds import Roofs
from planner.trace.predict import op_times
from planner.trace.training import group_of

ROOFS = Roofs({"fp32": 50e12, "tf32": 400e12, "bf16": 800e12}, 3e12, 132, 1.98e9)


def test_a_weight_gradient_of_two_part_waves_is_split_only_where_asked():
    grad = Gemm(3000, 700, 131072)   # mlp-stgan's: 24 x 6 = 144 tiles of 128 on 132 SMs
    whole = grad.fill(132, 0.0)
    assert whole == pytest.approx(144 / 264 * (3000 * 700) / (144 * 128 * 128), rel=1e-9)   # two waves, one nearly idle
    assert grad.fill(132, 0.0, split_waves=True) > 0.85 > 0.55 > whole
    shallow = Gemm(3000, 700, 700)   # no reduction deep enough to split: the same either way
    assert shallow.fill(132, 0.0, split_waves=True) == shallow.fill(132, 0.0)


def two_layers() -> Workload:
    """mlp-stgan's widest pair of layers: their weight gradients reduce over every row of the batch."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(3000, 700), nn.ReLU(), nn.Linear(700, 3000))

    def make_batch(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(n, 3000, device=device), torch.randn(n, 3000, device=device)
    return Workload("two-layers", model, make_batch, nn.functional.mse_loss)


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
def test_only_a_plain_fp32_products_deep_reduction_is_timed_split(precision):
    run = trace_run(two_layers(), precision, 131072)
    assert run.status == "ok", run.reason
    efficiency = Efficiency(ROOFS.sms, {}, {"gemm": Shape()}, KindFit(0.0, 1.0, 0))   # the roofs' time alone
    timed = sum(o.seconds for o in op_times(run, efficiency, ROOFS, AT_ROOF) if o.kind == "mm")
    products = [group_of(op, ROOFS, precision) for op in run.ops if op.name == "aten::mm"]
    split = sum(g.roof_s(ROOFS.sms, Shape().simt) for g in products)
    whole = sum(g.roof_s(ROOFS.sms, Shape().unaligned) for g in products)
    assert split < 0.8 * whole   # the 3000 x 700 weight gradients: two part-empty waves when whole
    assert timed == pytest.approx(split if precision == "fp32" else whole, rel=1e-9)


def test_the_committed_grid_says_split(capsys):
    check = load_script(REPO / "benchmarks" / "gemm_fp32_check.py")
    assert check.main([]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "split along K: deep median" in out and "whole tiles" in out


def test_the_grid_benchmark_times_every_setting_on_the_cpu_and_writes_one_json(tmp_path, capsys):
    bench, doc = small_grid("gpu_gemm_grid.py", tmp_path, "--budget-s", "3600")
    assert_every_setting_checked_and_timed(bench, doc)
    assert all(p["time"]["median_s"] > 0 and p["time"]["n"] == bench.REPEATS and p["kernels"] for p in doc["points"])
    assert "TFLOP/s per setting" in capsys.readouterr().out
