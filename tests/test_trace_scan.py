"""A scan along an outer dimension in a CPU trace (a mixture-of-experts router's cumsum over its tokens): recorded
as such (collectors/trace/recorder.py outer_scan) and timed by its dependent steps at the GPU's clock
(planner/trace/scan.py), the constants the fit of the committed H200 grid (benchmarks/scan_fit.py)."""

from __future__ import annotations

import json
import statistics

import pytest
import torch
from grid_runs import small_grid
from paths import REPO, load_script
from torch import nn

from collectors.trace.collect import trace_run
from collectors.workloads import Workload
from planner.trace.efficiency import Efficiency, KindFit
from planner.trace.kinds import Roofs
from planner.trace.predict import op_times
from planner.trace.roll import ROLL_CYCLES
from planner.trace.scan import CYCLES_FEW, CYCLES_MANY, MANY_COLUMNS, outer_scan
from planner.trace.training import kind_and_class

ROOFS = Roofs({"fp32": 50e12, "tf32": 400e12, "bf16": 800e12}, 3e12, 132, 1.98e9)


class Router(nn.Module):
    """Top-1 routing of each row to one of `experts` (a one-hot and its cumsum over the rows: each row's slot), and
    the same over the experts (an innermost scan)."""

    def __init__(self, width: int, experts: int):
        super().__init__()
        self.gate = nn.Linear(width, experts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.gate(x)
        choice = nn.functional.one_hot(logits.argmax(-1), logits.shape[-1])
        slot = (choice.cumsum(dim=0) * choice).sum(-1)          # over the rows: an outer scan
        share = logits.softmax(-1).cumsum(dim=-1)                 # over the experts: innermost
        return (share * slot.unsqueeze(-1)).sum()


def router(experts: int) -> Workload:
    with torch.device("meta"):
        model = Router(16, experts)

    def make_batch(n: int, device: torch.device) -> tuple[torch.Tensor, None]:
        return torch.randn(n, 16, device=device), None
    return Workload("router", model, make_batch, lambda out, _: out)


def scans(experts: int, rows: int) -> tuple:
    run = trace_run(router(experts), "fp32", rows)
    assert run.status == "ok", run.reason
    return run, [op for op in run.ops if op.name == "aten::cumsum" and op.phase == "forward"]


def test_a_cumsum_over_the_rows_is_recorded_as_an_outer_scan_and_one_over_the_last_dimension_is_not():
    _, ops = scans(8, 4096)
    variants = sorted(str(op.variant) for op in ops)
    assert variants == ["None", "outer:0"]
    outer = next(op for op in ops if op.variant)
    assert outer_scan(outer) == (4096, 8)


@pytest.mark.parametrize("experts", [8, 512])
def test_an_outer_scan_takes_its_rows_dependent_steps_at_the_clock(experts):
    run, ops = scans(experts, 65536)
    outer = next(op for op in ops if op.variant)
    kind, cls = kind_and_class(outer, "fp32")
    assert (kind, cls) == ("cumsum_scan_outer", "sm")
    efficiency = Efficiency(ROOFS.sms, {}, {}, KindFit(2e-6, 1.0, 0))   # a fixed cost a launch, none learned
    timed = next(o for o in op_times(run, efficiency, ROOFS) if o.kind == kind)
    cycles = CYCLES_MANY if experts >= MANY_COLUMNS else CYCLES_FEW
    assert timed.learned   # measured on a grid: known, not the unknown share
    assert timed.seconds == pytest.approx(outer.calls * (65536 * cycles / ROOFS.clock_hz + 2e-6), rel=1e-9)
    assert timed.seconds > 100 * outer.bytes / ROOFS.bytes_per_s   # its bytes are not what sets it


def test_the_constants_are_the_fit_of_the_committed_grid(capsys):
    fit = load_script(REPO / "benchmarks" / "scan_fit.py")
    assert fit.main([]) == 0, capsys.readouterr().out
    assert f"CYCLES_FEW {CYCLES_FEW:.0f}" in capsys.readouterr().out


def test_the_grid_benchmark_times_every_sweep_on_the_cpu_and_writes_one_json(tmp_path, capsys):
    bench, doc = small_grid("gpu_scan_grid.py", tmp_path, "--budget-s", "3600")
    assert {p["sweep"] for p in doc["points"]} == {"scan_outer", "scan_inner", "roll", "bmm49"}
    assert all(p["time"]["median_s"] > 0 and p["time"]["n"] == bench.REPEATS for p in doc["points"])
    assert "ns/element" in capsys.readouterr().out


class Shift(nn.Module):
    """Swin's shifted windows: a channels-last map rolled by (-3, -3) over its height and width."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(torch.roll(x, shifts=(-3, -3), dims=(1, 2))).sum()


def test_a_roll_takes_its_elements_measured_cycles_and_the_constant_is_the_grids_median():
    with torch.device("meta"):
        model = Shift()
    run = trace_run(Workload("shift", model, lambda n, d: (torch.randn(n, 56, 56, 8, device=d), None),
                             lambda out, _: out), "fp32", 64)
    assert run.status == "ok", run.reason
    rolls = [op for op in run.ops if op.name == "aten::roll"]   # the input needs no gradient: the forward's alone
    assert [op.phase for op in rolls] == ["forward"]
    efficiency = Efficiency(ROOFS.sms, {}, {}, KindFit(2e-6, 1.0, 0))
    timed = [o for o in op_times(run, efficiency, ROOFS) if o.kind == "roll"]
    elements = 64 * 56 * 56 * 8   # a call's, fp32
    assert all(o.learned for o in timed)
    assert sum(o.seconds for o in timed) == pytest.approx(
        sum(op.calls for op in rolls) * (elements * ROLL_CYCLES / (ROOFS.sms * ROOFS.clock_hz) + 2e-6), rel=1e-6)
    grid = json.loads((REPO / "results/h200/diagnostics/scan-grid-2026-11-28/scan-grid.json").read_text())
    cycles = [p["time"]["median_s"] * 1.98e9 * grid["environment"]["sms"] / p["elements"]
              for p in grid["points"] if p["sweep"] == "roll"]
    assert round(statistics.median(cycles), 2) == ROLL_CYCLES


def test_a_compiled_step_does_not_pay_an_outer_scans_steps():
    from planner.trace.learn import CompileModel
    from planner.trace.predict import HostModel, predict_step

    run, _ = scans(8, 65536)
    efficiency = Efficiency(ROOFS.sms, {}, {}, KindFit(2e-6, 1.0, 0))
    step = predict_step(run, efficiency, ROOFS, HostModel({}, 0.0))
    scan = next(o for o in step.ops if o.kind == "cumsum_scan_outer")
    assert scan.plane_s == scan.seconds > 0
    compiled = CompileModel(fused=1.0, host=1.0).step_s(step, 4.0)
    assert compiled == pytest.approx(step.gpu_s - scan.seconds, rel=1e-6)   # no host: the GPU's time less the scan
