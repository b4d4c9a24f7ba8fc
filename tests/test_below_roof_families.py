"""benchmarks/below_roof_families.py: what an op's below-roof time scales with, read from the H100 and H200 profiles
of the same configurations (docs/prediction-model.md § 1a). Synthetic ops for the arithmetic, the frozen fixture's
two machines for the table."""

from __future__ import annotations

import math

import pytest
from paths import REPO, load_script

from gpuplan_schema.payloads import KernelTime, OpRoofline, RooflinePayload, RooflineRoofs
from gpuplan_schema.stats import summarize

FROZEN = REPO / "tests" / "fixtures" / "frozen"


@pytest.fixture(scope="module")
def families():
    return load_script(REPO / "benchmarks" / "below_roof_families.py")


def op(name: str, time: float, roof: float, kernels: tuple[tuple[str, float], ...] = (), cls: str = "memory-bound"):
    return OpRoofline(name, 1.0, summarize([time]), 1e9, 1e9, cls, memory_s=roof, math_s=0.0, expected_s=roof,
                      kernels=[KernelTime(k, t, 1.0) for k, t in kernels])


def test_a_convolution_mostly_in_depthwise_kernels_is_its_own_family(families):
    depthwise = op("aten::convolution_backward", 1.0, 0.1,
                   (("conv_depthwise2d_grad_weight_kernel<float>", 0.7), ("cutlass gemm", 0.3)))
    dense = op("aten::convolution_backward", 1.0, 0.1, (("conv_depthwise2d_grad_weight_kernel", 0.2), ("gemm", 0.8)))
    assert families.family_of(depthwise) == families.DEPTHWISE
    assert families.family_of(dense) == "convolution backward (dense)"
    assert families.family_of(op("aten::_log_softmax", 1.0, 0.5)) == "softmax and loss"
    assert families.family_of(op("aten::hardswish", 1.0, 0.5)) == "elementwise"   # not named: elementwise


def test_below_roof_is_the_time_past_the_roof_and_never_negative(families):
    assert families.below_roof(op("aten::add", 1.0, 0.25)) == pytest.approx(0.75)
    assert families.below_roof(op("aten::add", 1.0, 1.2)) == 0.0   # a cache beat the roof


def test_the_exponent_is_one_for_bandwidth_time_and_zero_for_time_bandwidth_does_not_move(families):
    assert families.exponent(1.415, 1.415) == pytest.approx(1.0)
    assert families.exponent(1.0, 1.415) == pytest.approx(0.0)
    assert math.isnan(families.exponent(0.0, 1.415))


@pytest.mark.parametrize("a", [0.0, 1.0, 0.5])
def test_a_step_timed_on_both_gives_back_the_exponent_its_below_roof_time_had(families, a):
    """An H200 profile whose roof time is 0.3 and below-roof time 0.7: on the H100 the roof takes bw x as long and the
    below-roof part bw**a x; the step row recovers a from the two busy times."""
    bw = 1.415
    payload = RooflinePayload("efficientnet-b0", "test", "cuda", "tf32", 256, True, "ok", RooflineRoofs("test"), 1.0,
                              variant="contiguous+no_cudnn_benchmark")
    ops = [op("aten::convolution_backward", 1.0, 0.3)]
    h100 = 0.3 * bw + 0.7 * bw ** a
    row = families._step_row(payload, ops, h100, 1.0, bw)
    assert row.exponent == pytest.approx(a, abs=1e-9)
    assert row.below_share == pytest.approx(0.7) and row.layout == "NCHW"


def test_the_frozen_pair_matches_ops_of_the_same_configuration_and_reports_each_family(families):
    table = families.family_table(FROZEN)
    bw = families.copy_bandwidth(FROZEN / "h200") / families.copy_bandwidth(FROZEN / "h100-80gb")
    assert bw == pytest.approx(1.415, abs=0.01)
    assert {"matmul (GEMM)", "batch norm, native", "softmax and loss"} <= set(table.index)
    for _, row in table.iterrows():
        assert row.below_ratio == pytest.approx(row.below_src_ms / row.below_tgt_ms)
        assert bw ** row.exponent == pytest.approx(row.below_ratio)
    text = families.render(FROZEN)
    assert "| softmax and loss |" in text and "only the H200 profiled" in text
