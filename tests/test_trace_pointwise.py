"""A 1x1 stride-1 convolution on NCHW tensors is a matrix product on them as they are, without the NHWC transposes
cuDNN's other tensor-core kernels need (planner/trace/training.py pointwise, pointwise_gemm), and a native batch norm
no profile showed is timed with its other pass's figures (planner/trace/efficiency.py Efficiency.unlearned)."""

from __future__ import annotations

import pytest
import torch
from example_workloads import image_classifier
from torch import nn

from collectors.trace.collect import trace_run
from gpuplan_schema.payloads import TracedOp
from planner.trace.efficiency import Efficiency, KindFit, Shape
from planner.trace.gemm import Gemm
from planner.trace.kinds import Roofs
from planner.trace.training import group_of, pointwise, pointwise_gemm

ROOFS = Roofs({"fp32": 50e12, "tf32": 400e12, "bf16": 800e12}, 3e12, 132, 1.98e9)


def convolutions(precision: str, channels_last: bool = False) -> list[TracedOp]:
    """A 3x3 stem, a 1x1 stride-1 convolution (16 x 16 map), a 1x1 stride-2 one and a 3x3 one, traced."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 64, 1, bias=False),
                              nn.Conv2d(64, 64, 1, stride=2), nn.Conv2d(64, 8, 3, padding=1), nn.Flatten(),
                              nn.Linear(8 * 8 * 8, 10))
    run = trace_run(image_classifier("pointwise", model, channels_last), precision, 4)
    assert run.status == "ok", run.reason
    return [op for op in run.ops if op.name in ("aten::convolution", "aten::convolution_backward")]


def in_channels(op: TracedOp) -> tuple[int, int]:
    w = op.shapes[2 if op.name.endswith("backward") else 1]
    return w[1], w[2]


def test_only_a_1x1_stride_1_convolution_is_pointwise_forward_and_backward():
    convs = convolutions("bf16")
    assert len(convs) == 8
    assert {(in_channels(op), pointwise(op)) for op in convs} == {((3, 3), False), ((32, 1), True), ((64, 1), False),
                                                                   ((64, 3), False)}


@pytest.mark.parametrize("precision, vector", [("bf16", 8), ("tf32", 4)])
def test_an_nchw_pointwise_convolution_runs_without_transposes_as_the_product_of_its_map(precision, vector):
    for op in convolutions(precision):
        group = group_of(op, ROOFS, precision)
        if pointwise(op):   # the 32 -> 64 one over 4 images' 16 x 16 maps
            assert group.nchw_s == 0 and group.gemm == Gemm(256, 64, 32, 4, vector)
        else:   # the others keep cuDNN's NHWC transposes: their bytes twice
            assert group.nchw_s == pytest.approx(2 * group.memory_s) and group.gemm.vector is None


@pytest.mark.parametrize("precision", ["bf16", "tf32", "fp32"])
def test_a_channels_last_pointwise_convolution_is_timed_as_any_other(precision):
    """Channels-last: cuDNN's NHWC kernels (no transposes but in plain fp32, whose kernels are NCHW ones), the
    product over every image's pixels as gemm_of counts it."""
    for op in convolutions(precision, channels_last=True):
        group = group_of(op, ROOFS, precision, nhwc=True)
        assert group.gemm.vector is None and (group.nchw_s > 0) == (precision == "fp32")


def test_plain_fp32_is_left_as_it_was():
    for op in convolutions("fp32"):
        group = group_of(op, ROOFS, "fp32")
        assert group.nchw_s == 0 and group.gemm.vector is None


def _pointwise(side: int, dtype: str) -> TracedOp:
    x, w = [256, 1024, side, side], [256, 1024, 1, 1]
    flops = 2 * 256 * side * side * 256 * 1024
    return TracedOp("aten::convolution", "forward", 1, 1e9, 1e9, 1, dtype, [x, w], flops, None)


@pytest.mark.parametrize("side, bf16, tf32", [(38, 0.45, 1.0), (75, 0.2, 0.2), (32, 1.0, 1.0)])
def test_its_loads_are_aligned_as_its_map_is(side, bf16, tf32):
    """SSD300's 38 x 38 maps (1,444: a multiple of 4, not of 8) ran CUTLASS's align2 kernels in bf16 and aligned ones in
    TF32 (16-byte loads of 4 elements); its 75 x 75 maps align1 kernels."""
    shape = Shape(even=0.45, odd=0.2)
    for precision, dtype, factor in (("bf16", "bf16", bf16), ("tf32", "fp32", tf32)):
        gemm = group_of(_pointwise(side, dtype), ROOFS, precision).gemm
        assert gemm.m == side * side and shape.aligned(gemm.alignment, gemm.vector) == factor


@pytest.mark.parametrize("precision, vector", [("bf16", 8), ("tf32", 4)])
def test_a_kernel_1_conv1d_is_pointwise_the_product_of_its_length(precision, vector):
    """PyTorch hands cuDNN a Conv1d as a 2-D convolution of height 1 (`view4d`): its kernel-1 stride-1 one is the
    same 1x1 product on the NCL tensors, no transposes; a kernel-3 one keeps them."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Conv1d(16, 64, 1), nn.Conv1d(64, 64, 3, padding=1), nn.Flatten(),
                              nn.Linear(64 * 299, 10))

    def make_batch(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(n, 16, 299, device=device), torch.randint(0, 10, (n,), device=device)
    workload = image_classifier("conv1d", model)
    workload.make_batch = make_batch
    run = trace_run(workload, precision, 4)
    assert run.status == "ok", run.reason
    convs = [op for op in run.ops if op.name in ("aten::convolution", "aten::convolution_backward")]
    flat = [op for op in convs if pointwise(op)]
    assert len(convs) == 4 and [in_channels(op)[0] for op in flat] == [16, 16]   # the first, forward and backward
    for op in convs:
        group = group_of(op, ROOFS, precision)
        if pointwise(op):
            assert group.nchw_s == 0 and group.gemm == Gemm(299, 64, 16, 4, vector)
        else:
            assert group.nchw_s == pytest.approx(2 * group.memory_s) and group.gemm.vector is None


def test_pointwise_gemm_reads_the_backwards_input_and_weight():
    op = TracedOp("aten::convolution_backward", "backward", 1, 1e9, 1e9, 1, "bf16",
                  [[8, 256, 38, 38], [8, 1024, 38, 38], [256, 1024, 1, 1]], 1e9, None)
    assert pointwise(op) and pointwise_gemm(op) == Gemm(1444, 256, 1024, 8, 8)
    strided = TracedOp("aten::convolution_backward", "backward", 1, 1e9, 1e9, 1, "bf16",
                       [[8, 256, 19, 19], [8, 1024, 38, 38], [256, 1024, 1, 1]], 1e9, None)
    assert not pointwise(strided)


def test_a_native_batch_norm_no_profile_showed_takes_its_other_pass_figures():
    forward, backward, pooled = KindFit(1e-6, 2.0, 4), KindFit(2e-6, 2.6, 4), KindFit(5e-6, 1.3, 0)
    only_forward = Efficiency(132, {}, {"batch_norm_native": forward}, pooled)
    assert only_forward.unlearned("batch_norm_backward_native") == forward
    only_backward = Efficiency(132, {}, {"batch_norm_backward_native": backward}, pooled)
    assert only_backward.unlearned("batch_norm_native") == backward
    neither = Efficiency(132, {}, {"batch_norm": forward}, pooled)   # cuDNN's is another kernel: not its figures
    assert neither.unlearned("batch_norm_backward_native") == pooled
    # and it still counts as unlearned: its time is in the plan's unknown share
    assert only_forward.key("batch_norm_backward_native", "any") is None
