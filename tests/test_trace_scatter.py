"""Row gathers and scatter-adds in a CPU trace (planner/trace/scatter.py): timed by the SM cycles the H200 grid measured
(a row's lookup, an element's atomic), not by their bytes at the copy roof; the constants are the grid's medians."""

from __future__ import annotations

import json
import statistics

import pytest
import torch
from paths import REPO
from torch import nn

from collectors.trace.collect import trace_run
from collectors.workloads import Workload
from planner.trace.efficiency import Efficiency, KindFit
from planner.trace.kinds import Roofs
from planner.trace.predict import op_times
from planner.trace.scatter import GATHER_ROW_CYCLES, SCATTER_CYCLES, scatter_cycles

ROOFS = Roofs({"fp32": 50e12, "tf32": 400e12, "bf16": 800e12}, 4e12, 132, 1.98e9)
GRID = REPO / "results/h200/diagnostics/newex5-2026-11-28/index-add-grid.json"
NODES, EDGES, WIDTH = 4096, 65536, 64


class MeanOfNeighbours(nn.Module):
    """One message-passing step: gather each edge's source row, scatter-add it into its destination."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)
        generator = torch.Generator().manual_seed(0)
        self.src = torch.randint(0, NODES, (EDGES,), generator=generator)
        self.dst = torch.randint(0, NODES, (EDGES,), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        messages = h.index_select(0, self.src.to(h.device))
        return torch.zeros_like(h).index_add_(0, self.dst.to(h.device), messages).sum()


def test_a_gather_and_a_scatter_add_take_their_measured_cycles():
    with torch.device("meta"):
        model = MeanOfNeighbours()
    run = trace_run(Workload("mp", model, lambda n, d: (torch.randn(n, WIDTH, device=d), None),
                             lambda out, _: out), "fp32", NODES)
    assert run.status == "ok", run.reason
    efficiency = Efficiency(ROOFS.sms, {}, {}, KindFit(0.0, 1.0, 0))   # nothing learned: known by their cycles
    timed = {o.kind: o for o in op_times(run, efficiency, ROOFS)}
    rate = ROOFS.sms * ROOFS.clock_hz
    gathers = sum(op.calls for op in run.ops if op.name == "aten::index_select")
    scatters = sum(op.calls for op in run.ops if op.name.startswith("aten::index_add"))
    assert gathers >= 2 and scatters >= 2          # forward and backward each: the other's gradient
    assert timed["index_select"].learned and timed["index_add"].learned
    assert timed["index_select"].seconds == pytest.approx(gathers * EDGES * GATHER_ROW_CYCLES / rate, rel=1e-9)
    assert timed["index_add"].seconds == pytest.approx(scatters * EDGES * WIDTH * SCATTER_CYCLES[4][0][1] / rate,
                                                       rel=1e-9)   # fewer rows than the grid's fewest: its figure
    assert timed["index_add"].seconds > 5 * timed["index_add"].memory_s   # not its bytes at the copy roof


def test_the_constants_are_the_grids_medians():
    grid = json.loads(GRID.read_text())
    rate = 1.98e9 * grid["environment"]["sms"]   # the H200's boost clock (its catalog entry) on every SM
    gathers = [p["time"]["median_s"] * rate / p["e"] for p in grid["points"] if p["sweep"] == "gather"]
    assert round(statistics.median(gathers)) == GATHER_ROW_CYCLES
    for setting, size in (("bf16", 2), ("fp32", 4)):
        rows = sorted({p["e"] for p in grid["points"] if p["sweep"] == "scatter"})
        medians = tuple((e, round(statistics.median(p["time"]["median_s"] * rate / (p["e"] * p["d"])
                                                    for p in grid["points"] if p["sweep"] == "scatter" and
                                                    p["e"] == e and p["setting"].startswith(setting)), 2))
                        for e in rows)
        assert medians == SCATTER_CYCLES[size]


def test_a_scatter_add_of_more_rows_takes_more_cycles_an_element_between_the_grids_row_counts():
    assert scatter_cycles(1000, 2) == SCATTER_CYCLES[2][0][1] and scatter_cycles(1 << 30, 2) == SCATTER_CYCLES[2][-1][1]
    assert scatter_cycles(1 << 24, 2) == pytest.approx(3.14)
    assert scatter_cycles(1 << 23, 2) == pytest.approx((2.25 + 3.14) / 2)   # halfway between 2^22 and 2^24 in log2
