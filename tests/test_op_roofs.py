"""Issue 39's two rate changes: no profiled op runs faster than its roofs at the target's datasheet (the ridge point
moves with the GPU: a kernel memory-bound on an H100 can be math-bound where the tensor rate falls further than the
bandwidth), and CUDA-core fp32 runs at the share of its datasheet its architecture sustains."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.model.performance import (
    Rates,
    op_floor,
    run_precision,
    scale_factor,
    sustained_fraction,
    target_rates,
)
from planner.model.split import OpRoof, StepSplit
from planner.specs import match_gpu

H100, V100, A100 = match_gpu("H100 SXM"), match_gpu("V100 SXM2 16GB"), match_gpu("A100 80GB SXM")
RTX3090 = match_gpu("RTX 3090")
SOURCE = Rates({"bf16": 811e12, "fp16": 775e12, "tf32": 416e12, "fp32": 53e12}, 3.01e12, "measured")


def _conv_split() -> StepSplit:
    """One op, ResNet-50's convolution backward as the H100 profiled it: 12 ms, its FLOPs 5.1 ms at the bf16 rate,
    its bytes 5.5 ms at the copy bandwidth (memory-bound there, 46 % of its roof), the whole step."""
    op = OpRoof("bf16", 5.09 / 12, 5.52 / 12, 1.0, math_class=False)
    return StepSplit(0.0, {}, op.roof, 0.0, 1 - op.roof, 0.0, 1.0, "roofline bf16 batch 256", ops=(op,))


def test_a_convolution_memory_bound_on_the_h100_is_held_to_its_math_roof_on_an_rtx_3090():
    """The RTX 3090's bf16 tensor rate (71 TFLOPS with fp32 accumulate) falls 14× from the H100's where its bandwidth
    falls 3.6×: the convolution's FLOPs alone take longer there than its memory roof and SM time scaled."""
    split = _conv_split()
    rtx = target_rates(SOURCE, H100, RTX3090)
    scaled = split.ops[0].scaled_on(1.0, SOURCE.bytes_per_s / rtx.bytes_per_s, rtx.sm_time_ratio)
    roof = 5.09 / 12 * SOURCE.flops_per_s["bf16"] / RTX3090.flops_per_s["bf16"]   # its FLOPs at the datasheet rate
    assert roof > scaled
    math, memory = op_floor(split, SOURCE, rtx)
    assert memory == 0.0 and math == pytest.approx(roof - scaled)
    assert scale_factor(split, SOURCE, rtx) == pytest.approx(roof)


def test_the_floor_does_not_bind_where_the_scaled_time_is_slower_than_both_roofs():
    a100 = target_rates(SOURCE, H100, A100)
    assert op_floor(_conv_split(), SOURCE, a100) == (0.0, 0.0)


def test_the_source_itself_and_a_split_without_ops_have_no_floor():
    assert op_floor(_conv_split(), SOURCE, SOURCE) == (0.0, 0.0)   # measured rates: no datasheet roofs
    plain = StepSplit(0.0, {"bf16": 0.4}, 0.3, 0.0, 0.3, 0.4, 0.3, "FLOP/byte counts")
    assert op_floor(plain, SOURCE, target_rates(SOURCE, H100, V100)) == (0.0, 0.0)


def test_fp32_runs_at_the_share_its_architecture_sustains():
    """The harness measured the V100's fp32 matmuls at 90 % of its datasheet, the H100's at 78 % (its SMs issue two
    fp32 FMAs a clock and do not keep both busy): the V100's fp32 rate is no longer held to the H100's share."""
    held = sustained_fraction(H100, V100, "fp32")
    assert held == pytest.approx((14.06 / 15.7) / (52.0 / 67.0), rel=1e-3) and held > 1.1
    rates = target_rates(SOURCE, H100, V100)
    assert rates.flops_per_s["fp32"] == pytest.approx(14.06e12 * 53e12 / 52.0e12, rel=1e-3)


def test_tensor_rates_keep_their_cap():
    """A GeForce card's matmul burst above the H100's share is not sustained in training (§ 4): still capped."""
    assert sustained_fraction(H100, match_gpu("RTX 3090"), "bf16") == 1.0


def test_a_profiled_split_carries_each_op_and_their_roofs_add_up_to_its_class_roofs(h100):
    from planner.model.split import machine_rooflines, split_from_roofline, with_measured_host
    roofline = next(r for r in machine_rooflines(h100) if r.workload == "resnet50")
    split = split_from_roofline(roofline)
    assert split.ops and sum(op.time for op in split.ops) == pytest.approx(split.math_class + split.memory_class)
    assert sum(op.roof for op in split.ops) == pytest.approx(sum(split.math_roof.values()) + split.memory_roof)
    point = next(p for p in next(w for w in h100.workloads if w.workload == "resnet50").points if p.gpu_busy_s)
    moved = with_measured_host(split, point)   # the ops scale with the GPU's share, as every other part
    assert sum(op.time for op in moved.ops) == pytest.approx(moved.math_class + moved.memory_class)


def test_tf32_is_its_own_rate_per_architecture_and_a_v100_runs_a_tf32_step_on_its_cuda_cores():
    """docs/prediction-model.md § 4, "What the remaining TF32 / FP32 misses are": an A100's TF32 is its datasheet TF32
    (156, half its fp16) at the source's TF32 efficiency, not its fp16 rate halved at the fp16 efficiency; a V100, which
    has no TF32, runs the tf32 step's matmuls at its CUDA-core fp32 rate (14.2 TFLOPS here), never at a tensor rate."""
    a100 = target_rates(SOURCE, H100, A100)
    assert a100.flops_per_s["tf32"] == pytest.approx(156e12 * 416e12 / 494.5e12, rel=1e-6)
    assert a100.flops_per_s["tf32"] != pytest.approx(a100.flops_per_s["fp16"] / 2, rel=1e-3)
    v100 = target_rates(SOURCE, H100, V100)
    assert "tf32" not in v100.flops_per_s and run_precision("tf32", v100.flops_per_s) == "fp32"
    split = StepSplit(0.0, {"tf32": 0.4}, 0.0, 0.0, 0.6, 0.4, 0.0, "FLOP/byte counts")
    stand_in = replace(v100, flops_per_s={**v100.flops_per_s, "tf32": v100.flops_per_s["fp32"]})
    expected = 0.4 * 416e12 / v100.flops_per_s["fp32"] + 0.6 * v100.sm_time_ratio
    assert scale_factor(split, SOURCE, stand_in) == pytest.approx(expected)
    assert v100.flops_per_s["fp32"] == pytest.approx(14.06e12 * 53 / 52.0, rel=1e-3)  # the SGEMM rate measured there
    assert v100.flops_per_s["fp32"] < V100.flops_per_s["fp32"] < v100.flops_per_s["fp16"] / 5
