"""A target's matmuls are held to the share of their datasheet one public harness measured them to sustain
(planner/model/performance.py `sustained_fraction`), read from the shipped catalog."""

from __future__ import annotations

import pytest

from planner.check.crossarch import CrossCheck, CrossRow
from planner.model.performance import Rates, sm_time_ratio, sustained_fraction, target_rates
from planner.specs import match_gpu

H100 = match_gpu("H100 SXM")
# What an H100 SXM measures of its matmuls and bandwidth, as its ceilings collector reports them.
SOURCE = Rates({"bf16": 810.6e12, "tf32": 416.1e12, "fp16": 775.2e12}, 3.011e12, "measured ceilings", 6e-6)


def test_a_power_capped_gpu_runs_its_matmuls_as_far_below_its_datasheet_as_it_was_measured():
    l4 = match_gpu("L4")
    held = sustained_fraction(H100, l4, "bf16")
    # the harness: L4 70.89 of 121 TFLOPS, H100 SXM 790.59 of 989
    assert held == pytest.approx((70.89 / 121) / (790.59 / 989), rel=1e-6)
    assert 0.70 < held < 0.76
    rates = target_rates(SOURCE, H100, l4)
    assert rates.flops_per_s["bf16"] == pytest.approx(121e12 * 810.6 / 989 * held)
    assert "matmul held to its measured sustained rate (bf16 ×0.73" in rates.basis
    # bandwidth and the below-roof clock ratio are not touched by it
    plain = target_rates(SOURCE, H100, match_gpu("A10G"))
    bandwidth = l4.memory_bandwidth_bytes_per_s * 3.011e12 / H100.memory_bandwidth_bytes_per_s
    assert rates.bytes_per_s == pytest.approx(bandwidth) and rates.sm_time_ratio == sm_time_ratio(H100, l4)
    assert "held" not in plain.basis


@pytest.mark.parametrize(("target", "dtype"), [
    ("RTX 4090", "bf16"),   # measured above its datasheet in short bursts: held to the datasheet, not above
    ("A10G", "bf16"),       # no entry in the harness's table
    ("H200 SXM", "tf32"),   # the harness measured no tf32 on it
    ("T4", "bf16"),         # no bf16 on a T4 at all
    ("RTX A6000", "bf16"),  # 0.3 % below the H100's share: inside the harness's own 2 % spread
    ("V100 SXM2 16GB", "fp16"),  # 1.1 % below
])
def test_without_a_lower_measurement_on_both_sides_the_datasheet_stands(target, dtype):
    assert sustained_fraction(H100, match_gpu(target), dtype) == 1.0


def test_a_t4s_fp16_is_held_to_what_was_measured_of_it():
    # 41.93 of 65 TFLOPS, further below its datasheet than the H100 SXM's 759.09 of 989
    held = sustained_fraction(H100, match_gpu("T4"), "fp16")
    assert held == pytest.approx((41.93 / 65) / (759.09 / 989), rel=1e-6)
    assert 0.8 < held < 0.86


def test_the_source_itself_and_its_twin_are_unchanged():
    assert sustained_fraction(H100, H100, "bf16") == 1.0
    assert sustained_fraction(H100, match_gpu("H200 SXM"), "bf16") == 1.0  # the same die, 0.04 % apart


def test_what_informed_rows_changed_is_said_once_each():
    def row(gpu: str, informed: str | None) -> CrossRow:
        return CrossRow("t", gpu, "bf16", 64, 64, 0.5, 0.5, None, 0.5, True, "memory", informed=informed)
    check = CrossCheck("m", "H100 SXM", [row("A10", "a; b"), row("A10", "b"), row("L4", None), row("T4", "c; a")],
                       [])
    assert check.informed_reasons == ["a", "b", "c"]
