"""A depthwise convolution in a CPU trace: which kernels run it (planner/trace/depthwise.py) and the SM cycles they
were measured to take, and the channels-last layout the trace keeps as cuDNN does (collectors/trace/recorder.py)."""

from __future__ import annotations

import pytest
import torch
from example_workloads import image_classifier
from grid_runs import assert_every_setting_checked_and_timed, small_grid
from paths import REPO, load_script
from torch import nn

from collectors.trace.collect import trace_run
from collectors.trace.memory import LiveMemory
from collectors.trace.recorder import TraceRecorder
from collectors.workloads import Workload
from planner.trace.depthwise import ATEN, MEASURED, DepthwiseConv, depthwise_of
from planner.trace.efficiency import Efficiency, KindFit
from planner.trace.kinds import DEPTHWISE, SM_BOUND, Roofs, base_kind
from planner.trace.predict import op_times
from planner.trace.training import traced_kinds

H200 = (132, 1.98e9)


def separable(channels_last: bool = False) -> Workload:
    """A stem convolution, a 3×3 and a stride-2 5×5 depthwise convolution, a pointwise one."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.Conv2d(64, 64, 3, padding=1, groups=64),
                              nn.Conv2d(64, 64, 5, stride=2, padding=2, groups=64), nn.Conv2d(64, 32, 1),
                              nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    return image_classifier("separable", model, channels_last)


def convolutions(precision: str, channels_last: bool = False) -> list:
    run = trace_run(separable(channels_last), precision, 8)
    assert run.status == "ok", run.reason
    return [(op, depthwise_of(op)) for op in run.ops if "convolution" in op.name]


def test_the_committed_cycles_are_the_fit_of_the_committed_grids(capsys):
    fit = load_script(REPO / "benchmarks" / "depthwise_fit.py")
    assert fit.main([]) == 0, capsys.readouterr().out   # MEASURED is what the script derives, to the digit
    assert "aten       grad_weight" in capsys.readouterr().out


def test_a_bf16_depthwise_convolution_runs_atens_kernels_the_dense_ones_are_not_depthwise():
    convs = convolutions("bf16")
    depthwise = [(op, d) for op, d in convs if d is not None]
    assert {tuple(op.shapes[1 if "backward" in op.name else 0][1:2]) for op, _ in depthwise} == {(64,)}
    assert len(depthwise) == 4 and {d.library for _, d in depthwise} == {ATEN}
    forward = sorted((d for op, d in depthwise if d.parts == ("forward",)), key=lambda d: d.kh)
    assert [(d.kh, d.stride, d.out_map) for d in forward] == [(3, 1, 256), (5, 2, 64)]
    backward = [d for op, d in depthwise if "backward" in op.name]
    assert all(d.parts == ("grad_input", "grad_weight") for d in backward)
    # the stem and the pointwise convolution are dense: cuDNN's product, not a depthwise kernel
    assert sum(d is None for _, d in convs) == 4


def test_channels_last_goes_to_cudnns_nhwc_kernels_and_fp16_to_cudnns_where_pytorch_gives_it():
    assert {d.library for _, d in convolutions("bf16", channels_last=True) if d} == {"nhwc-half"}
    assert {d.library for _, d in convolutions("tf32", channels_last=True) if d} == {"nhwc-fp32"}
    # fp16 NCHW: cuDNN for 64 channels of 3×3 at stride 1 (and a 5×5 stride 2 of fewer than 256 channels stays ATen's)
    fp16 = {(d.kh, d.stride): d.library for _, d in convolutions("fp16") if d}
    assert fp16 == {(3, 1): "nchw-fp16", (5, 2): ATEN}


def test_a_depthwise_conv1d_goes_to_cudnn_in_fp16_as_pytorch_views_it_as_2d():
    """A Conformer's depthwise Conv1d (kernel 31, stride 1): ATen's kernels in bf16, cuDNN's in fp16, where PyTorch
    views it as a 2-D convolution of height 1 before it picks the backend and cuDNN takes any 1-D one of stride 1
    (`check_cudnn_depthwise_workload_with_filter`); ATen's under 32 channels."""
    def libraries(precision: str, channels: int) -> dict:
        with torch.device("meta"):
            model = nn.Sequential(nn.Conv1d(channels, channels, 31, padding=15, groups=channels), nn.Flatten(),
                                  nn.Linear(channels * 100, 10))
        workload = image_classifier("depthwise-1d", model)
        workload.make_batch = lambda n, device: (torch.randn(n, channels, 100, device=device),
                                                 torch.randint(0, 10, (n,), device=device))
        run = trace_run(workload, precision, 8)
        assert run.status == "ok", run.reason
        found = {op.name: depthwise_of(op) for op in run.ops if "convolution" in op.name}
        assert all(d is not None and (d.kh, d.kw, d.stride, d.in_map) == (1, 31, 1, 100) for d in found.values())
        return {name: d.library for name, d in found.items()}
    both = ("aten::convolution", "aten::convolution_backward")
    assert libraries("fp16", 64) == dict.fromkeys(both, "nchw-fp16")
    assert libraries("bf16", 64) == dict.fromkeys(both, ATEN)
    assert libraries("fp16", 16) == dict.fromkeys(both, ATEN)


def test_the_weight_gradient_is_latency_bound_until_its_blocks_fill_the_sms():
    def grad_weight(channels: int, batch: int = 64) -> float:
        return DepthwiseConv(batch, channels, 28 * 28, 28 * 28, 3, 3, 1, ("grad_weight",)).seconds(*H200)
    # 16 and 32 channels are 144 and 288 blocks of 8 warps: fewer than 24 warps an SM, each block's loop alone
    assert grad_weight(32) == pytest.approx(grad_weight(16), rel=0.01)
    # past a full wave (132 SMs × 8 blocks) the time grows with the blocks
    assert grad_weight(2048) == pytest.approx(2 * grad_weight(1024), rel=0.05)
    # a warp an image: fewer images than 8 leave a block's other warps unlaunched, not idle
    assert grad_weight(256, batch=1) < grad_weight(256, batch=8)


def test_the_forward_and_input_gradient_take_their_measured_cycles_a_warp_on_any_gpu():
    conv = DepthwiseConv(64, 256, 28 * 28, 28 * 28, 3, 3, 1, ("forward",))
    warps = 64 * 256 * 28 * 28 / 32
    assert conv.seconds(*H200) == pytest.approx(warps * MEASURED.aten[("forward", 3, 1)] / (132 * 1.98e9))
    assert conv.seconds(66, 1.98e9) == pytest.approx(2 * conv.seconds(*H200))   # half the SMs, twice the time
    assert conv.seconds(0, 0.0) == 0.0   # a GPU of unknown SMs: timed by its bytes' roof instead
    # a filter no grid measured: the generic kernel's cycles a tap
    nine = DepthwiseConv(64, 256, 784, 784, 9, 9, 1, ("forward",))
    assert nine.seconds(*H200) == pytest.approx(warps * 81 * MEASURED.per_tap["forward"] / (132 * 1.98e9))


def test_a_depthwise_kind_is_timed_by_its_cycles_known_not_learned_and_kept_under_torch_compile():
    roofs = Roofs({"bf16": 7e14, "fp32": 5e13}, 4e12, *H200)
    run = trace_run(separable(), "bf16", 8)
    kinds = traced_kinds(run, roofs)
    depthwise = {k: g for k, g in kinds.items() if k[0].endswith(DEPTHWISE)}
    assert set(depthwise) == {("convolution" + DEPTHWISE, SM_BOUND), ("convolution_backward" + DEPTHWISE, SM_BOUND)}
    assert base_kind("convolution_backward" + DEPTHWISE) == "convolution_backward"
    pooled = KindFit(4e-6, 1.6, 0)
    efficiency = Efficiency(132, {}, {}, pooled)
    times = {o.kind: o for o in op_times(run, efficiency, roofs)}
    for (kind, _), groups in depthwise.items():
        op = times[kind]
        expected = sum(g.calls * (pooled.per_call_s + max(g.sm_s, g.memory_s, g.math_s)) for g in groups)
        assert op.learned and op.seconds == pytest.approx(expected)   # no slowdown on measured cycles
        assert all(g.sm_s > g.memory_s for g in groups)   # SM-bound: the cycles, not the bytes, set it
        assert op.cls != "any"   # kept by torch.compile's model (Inductor calls the convolution, fuses nothing)


def test_a_convolution_on_meta_keeps_the_channels_last_layout_cudnn_gives_its_output():
    recorder = TraceRecorder(LiveMemory())
    x = torch.empty(2, 8, 6, 6, device="meta").to(memory_format=torch.channels_last)
    w = torch.empty(8, 1, 3, 3, device="meta")
    with recorder:
        y = nn.functional.conv2d(x, w, padding=1, groups=8)
        z = y + torch.empty(2, 8, 6, 6, device="meta")   # the residual add sees the GPU's layout
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()
    assert z.is_contiguous(memory_format=torch.channels_last)
    # an NCHW convolution stays NCHW
    with recorder:
        plain = nn.functional.conv2d(torch.empty(2, 8, 6, 6, device="meta"), w, padding=1, groups=8)
    assert plain.is_contiguous()


def test_the_grid_benchmark_times_every_kernel_and_setting_on_the_cpu_and_writes_one_json(tmp_path, capsys):
    bench, doc = small_grid("gpu_depthwise_grid.py", tmp_path, "--budget-s", "3600")
    assert_every_setting_checked_and_timed(bench, doc)
    assert all(p[part]["median_s"] > 0 and p[part]["n"] == bench.REPEATS for p in doc["points"] for part in bench.PARTS)
    assert "channels (k 3)" in capsys.readouterr().out
