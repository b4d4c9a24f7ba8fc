"""A TF32 step predicted on a GPU without TF32 runs its 3×3 convolutions as cuDNN's Winograd on CUDA cores (issue 39):
the dense 3×3 stride-1 convolutions' forward and input gradient are counted apart (collectors/core/winograd_flops.py)
and take 4/9 of their counted multiplies there (planner/model/winograd.py); nothing else moves."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from paths import RESULTS
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from collectors.core.winograd_flops import WinogradFlopCounter
from gpuplan_schema.results import load_machine
from planner.check.dle_points import load_dle_points
from planner.model import winograd
from planner.model.performance import ceiling_floor_s, measured_rates, predict_point, target_rates
from planner.specs import match_gpu


def _forward_flops(conv: nn.Conv2d, x: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as counter:
        conv(x)
    return counter.get_total_flops()


def test_only_dense_3x3_stride_1_convolutions_forward_and_input_gradient_are_counted():
    torch.manual_seed(0)
    stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)            # strided: not eligible (and its input needs no gradient)
    dense = nn.Conv2d(8, 8, 3, padding=1)                      # eligible
    depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)        # grouped: not eligible
    pointwise = nn.Conv2d(8, 4, 1)                             # 1×1: not eligible
    dilated = nn.Conv2d(4, 4, 3, padding=2, dilation=2)        # dilated: not eligible
    model = nn.Sequential(stem, dense, depthwise, pointwise, dilated)
    x = torch.randn(2, 3, 16, 16)
    counter = WinogradFlopCounter()
    with counter:
        model(x).sum().backward()
    inner = stem(x).detach()
    assert counter.flops == 2 * _forward_flops(dense, inner)   # its forward and its input's gradient, not its weight's


def test_the_counted_work_is_the_eligible_share_at_four_ninths():
    point = replace(_v100_fp32_point()[0], flops_per_step=100.0, winograd_flops_per_step=45.0)
    assert winograd.counted_work(point) == pytest.approx(1 - 0.45 * (1 - 16 / 36))
    assert winograd.counted_work(replace(point, winograd_flops_per_step=None)) == 1.0   # not counted: as before
    assert winograd.counted_work(replace(point, winograd_flops_per_step=0.0)) == 1.0


def _v100_fp32_point():
    """The H200's SSD300 TF32 point in DLE's V100 FP32 configuration (NHWC, batch 32), with its machine."""
    h200 = load_machine(RESULTS / "h200")
    dle, _ = load_dle_points(h200)
    point, payload, _profiles = dle.point("ssd300", "tf32", 32, "channels_last")
    return point, payload, h200


def test_committed_results_the_v100_runs_the_counted_winograd_flops_at_four_ninths():
    """SSD300's 3×3 stride-1 convolutions are 60 % of its forward FLOPs; DLE's V100 FP32 step (298 ms at 32) is shorter
    than its counted FLOPs at the V100's datasheet fp32 rate plus its bytes at the datasheet bandwidth, which no
    direct convolution can be."""
    point, payload, h200 = _v100_fp32_point()
    # the forward and input gradient of 60 % of the forward, of forward + both gradients
    assert 0.35 < point.winograd_flops_per_step / point.flops_per_step < 0.45
    source, h200_spec, v100 = measured_rates(h200.ceilings), match_gpu(h200.gpu_name), match_gpu("V100 SXM2 16GB")
    rates = target_rates(source, h200_spec, v100)
    now = predict_point(point, payload, source, rates, False, [], v100)
    before = predict_point(replace(point, winograd_flops_per_step=None), payload, source, rates, False, [], v100)
    assert now.precision == "fp32" and now.measured_precision == "tf32"
    k = winograd.counted_work(point)
    math_before = before.split.math_roof["tf32"] * source.flops_per_s["tf32"] / rates.flops_per_s["fp32"]
    assert before.step_s - now.step_s == pytest.approx(math_before * (1 - k) * point.step_s.median, rel=1e-6)
    assert 0.27 < now.step_s < 0.31                                   # DLE's row: 32 / 107.22 = 0.298 s
    assert ceiling_floor_s(point, v100, "fp32") == pytest.approx(k * point.flops_per_step / v100.flops_per_s["fp32"])


def test_tensor_core_targets_and_half_precision_steps_do_not_move():
    point, payload, h200 = _v100_fp32_point()
    source, h200_spec = measured_rates(h200.ceilings), match_gpu(h200.gpu_name)
    for gpu, pt in ((match_gpu("A100 80GB SXM"), point),                                # TF32 there: implicit GEMM
                    (match_gpu("V100 SXM2 16GB"), replace(point, precision="fp16"))):  # tensor cores in fp16
        rates = target_rates(source, h200_spec, gpu)
        now = predict_point(pt, payload, source, rates, False, [], gpu)
        before = predict_point(replace(pt, winograd_flops_per_step=None), payload, source, rates, False, [], gpu)
        assert now.step_s == before.step_s
