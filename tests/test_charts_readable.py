"""Charts a person can read in the PDF: round ticks on log axes, no boundary labels stacked over the lines."""

from __future__ import annotations

import json

from paths import FROZEN

from gpuplan_schema.results import load_machine
from planner.charts.base import build_memory_chart, build_throughput_chart
from planner.charts.ticks import decade_ticks, log_ticks, pow2_ticks


def test_log2_ticks_are_powers_of_two_and_never_more_than_eight():
    assert pow2_ticks(1 / 1.15, 131072 * 1.15, [1, 2]) == [1, 8, 64, 512, 4096, 32768]
    assert pow2_ticks(8 / 1.15, 64 * 1.15, [8, 16]) == [8, 16, 32, 64]
    assert pow2_ticks(35, 46, [40]) == [40]  # no power of two inside: the measured batch
    assert decade_ticks(0.004, 2000) == [0.01, 0.1, 1, 10, 100, 1000]
    assert log_ticks(150, 4000) == [200, 500, 1000, 2000] and log_ticks(1 / 1.3, 156) == [1, 3, 10, 30, 100]


def test_memory_chart_names_close_boundaries_in_its_subtitle_not_over_the_lines():
    machine = load_machine(FROZEN / "h100-80gb")
    conv = next(w for w in machine.workloads if w.workload == "conv-rollout")
    spec = build_memory_chart(conv, 85_000_000_000)
    assert not any(layer.get("mark", {}).get("type") == "text" and "boundary" in json.dumps(layer)
                   for layer in spec["layer"])  # the stacked "max 6542: fp32 / max 6543: bf16" labels are gone
    subtitle = " ".join(spec["title"]["subtitle"])
    close = {b.precision: b.max_batch for b in conv.boundaries if b.allocator == "default" and b.precision in
             ("fp32", "bf16")}   # measured within 1 % of each other: their labels would overlap on the chart
    assert abs(close["fp32"] / close["bf16"] - 1) < 0.01
    assert f"max {close['fp32']}: fp32" in subtitle and f"max {close['bf16']}: bf16" in subtitle
    x = spec["layer"][0]["encoding"]["x"]["axis"]["values"]
    assert len(x) >= 4 and all(v & (v - 1) == 0 for v in x)  # enough ticks, each a power of two
    sweep = build_throughput_chart(next(w for w in machine.workloads if w.workload == "mlp-stgan"))
    ticks = sweep["encoding"]["x"]["axis"]["values"]
    assert 4 <= len(ticks) <= 8 and all(v & (v - 1) == 0 for v in ticks)
