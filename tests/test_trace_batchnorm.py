"""A training batch norm on ATen's per-channel NCHW kernels, told from cuDNN's and timed by the share of the SMs its one
block per channel fills (collectors/trace/batchnorm.py, planner/trace/plane.py, training.py, efficiency.py)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from collectors.trace.batchnorm import NATIVE, batch_norm_variant
from collectors.trace.collect import load_on_meta, trace_run
from gpuplan_schema.payloads import TracedOp, TraceRun
from planner.trace.efficiency import Efficiency, KindFit, Shape
from planner.trace.kinds import Roofs, base_kind, kind_family
from planner.trace.learn import CompileModel
from planner.trace.plane import RESIDENT, PlaneGrid, plane_of
from planner.trace.predict import PhaseTime, StepTime
from planner.trace.training import traced_kinds


class Decisions(TorchDispatchMode):
    """The variant the trace gives each batch-norm op run under it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, str | None] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        kwargs = kwargs or {}
        if "batch_norm" in func._schema.name:
            self.seen[func._schema.name] = batch_norm_variant(func, args, kwargs)
        return func(*args, **kwargs)


def decisions(norm: nn.Module, x: torch.Tensor, backward: bool = True) -> dict[str, str | None]:
    with Decisions() as mode:
        y = norm(x.requires_grad_(backward))
        if backward:
            y.float().sum().backward()
    return mode.seen


FORWARD, BACKWARD = "aten::native_batch_norm", "aten::native_batch_norm_backward"
MS = 1e-3


def test_cudnn_takes_fp32_and_an_fp16_input_with_fp32_weights_aten_takes_bf16_fp16_weights_and_no_weights():
    x = torch.randn(4, 8, 5, 5)
    both = {FORWARD: NATIVE, BACKWARD: NATIVE}
    assert decisions(nn.BatchNorm2d(8), x.clone()) == {FORWARD: None, BACKWARD: None}           # fp32: cuDNN
    assert decisions(nn.BatchNorm2d(8), x.half()) == {FORWARD: None, BACKWARD: None}            # fp16 autocast
    assert decisions(nn.BatchNorm2d(8), x.bfloat16()) == both                                  # bf16 autocast
    assert decisions(nn.BatchNorm2d(8).half(), x.half()) == both                               # an fp16 model
    assert decisions(nn.InstanceNorm2d(8), x.clone()) == both                                  # no weight
    assert decisions(nn.BatchNorm1d(8), torch.randn(4, 8, 7).bfloat16()) == both               # 1-D maps too


def test_channels_last_and_2d_batch_norms_that_cudnn_does_not_take_are_atens_an_eval_forward_is_neither():
    x = torch.randn(4, 8, 5, 5).bfloat16()
    both = {FORWARD: NATIVE, BACKWARD: NATIVE}
    assert decisions(nn.BatchNorm2d(8), x.to(memory_format=torch.channels_last)) == both
    assert decisions(nn.BatchNorm1d(8), torch.randn(4, 8).bfloat16()) == both
    assert decisions(nn.BatchNorm1d(8), torch.randn(4, 8)) == both          # fp32 too: cuDNN takes 3-D and more
    assert decisions(nn.BatchNorm2d(8), x.float().to(memory_format=torch.channels_last)) == \
        {FORWARD: None, BACKWARD: None}                                     # cuDNN's NHWC kernels
    assert decisions(nn.BatchNorm2d(8).eval(), x, backward=False) == {FORWARD: None}   # no statistics kernel


def test_a_bf16_unet_traces_native_batch_norms_its_tf32_and_fp16_steps_cudnns():
    workload = load_on_meta("examples/unet_seg.py:build_tiny")
    for precision, variant in (("bf16", NATIVE), ("fp16", None), ("tf32", None)):
        run = trace_run(workload, precision, 2)
        norms = [op for op in run.ops if "batch_norm" in op.name]
        assert run.status == "ok" and sum(op.calls for op in norms) == 36   # 18 forward, 18 backward
        assert {op.variant for op in norms} == {variant}, precision


def test_a_launch_fills_the_sms_block_slots_by_its_channels_and_its_lanes_by_its_map():
    slots = 132 * RESIDENT
    assert PlaneGrid(64, 32, 256 * 256).fill(132) == pytest.approx(64 / slots)       # unet-seg's first level
    assert PlaneGrid(slots, 32, 64 * 64).fill(132) == pytest.approx(1.0)
    assert PlaneGrid(slots + 1, 32, 64 * 64).fill(132) == pytest.approx((slots + 1) / (2 * slots))   # two waves
    # a 3 × 3 map: rows of 32 threads, 16 rows a block: 9 of each 32 lanes busy
    assert PlaneGrid(slots, 32, 9).fill(132) == pytest.approx(9 / 32)
    assert plane_of([[32, 64, 256, 256], [64]], backward=False) == PlaneGrid(64, 32, 65536)
    assert plane_of([[32, 64, 16, 16], [32, 64, 16, 16], [64]], backward=True) == PlaneGrid(64, 32, 256)
    assert plane_of([[32, 256, 1, 1]], backward=False) is None       # channel stride 1: the channels-last kernels
    assert plane_of([[64, 2048, 128, 128]], backward=False) is None  # 2^31 elements: TensorIterator's


def _norm(variant: str | None, name: str = "aten::native_batch_norm") -> TracedOp:
    x = [32, 64, 256, 256]   # unet-seg's first level in bf16: 256 MiB read, 256 MiB written
    nbytes = 2 * 32 * 64 * 256 * 256
    shapes = [x, [64]] if name.endswith("norm") else [x, x, [64]]
    return TracedOp(name, "forward" if name.endswith("norm") else "backward", 1, nbytes * (1 if name.endswith("norm")
                    else 2), nbytes, 1, "bf16", shapes, None, variant)


def test_a_native_batch_norm_is_a_kind_of_its_own_timed_by_the_blocks_its_channels_fill():
    roofs, shape = Roofs({"bf16": 7e14}, 3e12), Shape()
    nbytes, fill = 2 * 32 * 64 * 256 * 256, 64 / (132 * RESIDENT)
    run = TraceRun("bf16", 32, "ok", ops=[_norm(NATIVE), _norm(NATIVE, "aten::native_batch_norm_backward")])
    kinds = traced_kinds(run, roofs)
    (forward,), (backward,) = kinds[("batch_norm_native", "any")], kinds[("batch_norm_backward_native", "any")]
    assert base_kind("batch_norm_native") == "batch_norm"
    # the forward: the statistics' read at the blocks' share of the GPU, then the output's pass at the copy roof
    assert forward.roof_s(132, shape) == pytest.approx(nbytes / 3e12 / fill + 2 * nbytes / 3e12)
    # the fused backward is per-channel throughout
    assert backward.roof_s(132, shape) == pytest.approx(3 * nbytes / 3e12 / fill)
    (cudnn,) = traced_kinds(TraceRun("bf16", 32, "ok", ops=[_norm(None)]), roofs)[("batch_norm", "any")]
    assert cudnn.plane is None and cudnn.roof_s(132, shape) == pytest.approx(2 * nbytes / 3e12)
    fit = KindFit(1e-6, 1.5, 3)
    only_cudnn = Efficiency(132, {}, {"batch_norm": fit}, KindFit(5e-6, 2.0, 0))
    assert only_cudnn.key("batch_norm_native", "any") is None   # never timed as cuDNN's: unlearned, in the unknown
    learned = Efficiency(132, {}, {"batch_norm": fit, "batch_norm_native": fit}, KindFit(5e-6, 2.0, 0))
    assert learned.key("batch_norm_native", "any") == "batch_norm_native"


def test_in_a_channels_last_network_a_batch_norm_runs_cudnns_nhwc_kernels_or_atens_channels_last_ones():
    """bf16 autocast's NHWC batch norm runs ATen's channels-last kernels (ResNet-50's profile:
    batch_norm_collect_statistics_channels_last_kernel), TF32's cuDNN's (batchnorm_fwtr_nhwc_semiPersist): kinds
    apart, and the channels-last one is a 2-D input's too (mlp-stgan's BatchNorm1d runs the same kernels)."""
    conv = TracedOp("aten::convolution", "forward", 1, 1e6, 1e6, 1, "bf16", [[32, 64, 56, 56], [64, 64, 1, 1]],
                    1e9, "channels_last")
    roofs = Roofs({"bf16": 7e14}, 3e12)
    kinds = traced_kinds(TraceRun("bf16", 32, "ok", ops=[conv, _norm(NATIVE)]), roofs)
    (group,) = kinds[("batch_norm_native_cl", "any")]
    assert group.plane is None and group.memory_s == pytest.approx(4 * 32 * 64 * 256 * 256 / 3e12)
    assert ("batch_norm_nhwc", "any") in traced_kinds(TraceRun("tf32", 32, "ok", ops=[conv, _norm(None)]), roofs)
    rows = TracedOp("aten::native_batch_norm_backward", "backward", 1, 4e6, 2e6, 1, "bf16",
                    [[4096, 512], [4096, 512], [512]], None, NATIVE)
    assert ("batch_norm_backward_native_cl", "any") in traced_kinds(TraceRun("bf16", 32, "ok", ops=[rows]), roofs)
    assert base_kind("batch_norm_backward_native_cl") == "batch_norm_backward"
    fit = KindFit(1e-6, 1.5, 3)
    others = Efficiency(132, {}, {k: fit for k in ("batch_norm", "batch_norm_nhwc", "batch_norm_native")}, fit)
    assert others.key("batch_norm_native_cl", "any") is None    # never timed as another kind's kernels
    assert kind_family("batch_norm_native_cl") is None


def test_a_compiled_step_drops_the_per_channel_excess_as_inductors_own_batch_norm_kernels_fill_the_gpu():
    roofs = Roofs({"bf16": 7e14}, 3e12)
    (group,) = traced_kinds(TraceRun("bf16", 32, "ok", ops=[_norm(NATIVE)]), roofs)[("batch_norm_native", "any")]
    fit = KindFit(0.0, 2.0, 3)
    learned = Efficiency(132, {}, {"batch_norm_native": fit}, KindFit(5e-6, 2.0, 0))
    seconds, _ = learned.time_s("batch_norm_native", "any", [group])
    excess = learned.plane_excess_s("batch_norm_native", "any", [group])
    at_full_fill = 2.0 * (group.memory_s + group.plane_s)   # the same op had its blocks filled every SM
    assert seconds - excess == pytest.approx(at_full_fill)
    phase = PhaseTime("forward", 0.0, 10 * MS, 2 * MS, 4 * MS)
    assert CompileModel(0.5, 1.0).step_s(StepTime(10 * MS, 0.0, 10 * MS, [], (phase,)), 4.0) == \
        pytest.approx(2 * MS + 0.5 * (10 - 2 - 4) * MS)
