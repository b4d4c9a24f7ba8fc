"""Plain fp32 in a CPU trace: which convolutions cuDNN runs as FFT or Winograd transforms, the transposes its NCHW
fp32 kernels put around a channels-last convolution, and the convolutions' measured slowdowns
(planner/trace/efficiency.py Fp32Scale, FP32_CONV; planner/trace/training.py transformed)."""

from __future__ import annotations

import pytest
import torch
from example_workloads import image_classifier
from grid_runs import assert_every_setting_checked_and_timed, small_grid
from paths import REPO, load_script
from torch import nn

from collectors.trace.collect import trace_run
from collectors.workloads import Workload
from planner.trace.efficiency import FP32_CONV, Efficiency, Fp32Scale, KindFit, Shape
from planner.trace.kinds import Roofs
from planner.trace.predict import op_times
from planner.trace.training import group_of, pointwise, transformed

ROOFS = Roofs({"fp32": 50e12, "tf32": 400e12, "bf16": 800e12}, 3e12, 132, 1.98e9)


def network(channels_last: bool) -> Workload:
    """A 3-channel 3x3 stem, a 3x3 stride-1, a 3x3 stride-2 and a 1x1 convolution."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1, bias=False),
                              nn.Conv2d(64, 64, 3, stride=2, padding=1), nn.Conv2d(64, 8, 1), nn.Flatten(),
                              nn.Linear(8 * 8 * 8, 10))
    return image_classifier("three-convs", model, channels_last)


def convolutions(precision: str, channels_last: bool = False) -> list:
    run = trace_run(network(channels_last), precision, 4)
    assert run.status == "ok", run.reason
    return [op for op in run.ops if op.name in ("aten::convolution", "aten::convolution_backward")]


def weight_side(op) -> tuple[int, int]:   # noqa: ANN001
    w = op.shapes[2 if op.name.endswith("backward") else 1]
    return w[1], w[2]


@pytest.mark.parametrize("channels_last", [False, True])
def test_only_a_3x3_stride_1_convolution_is_a_transform_forward_and_backward(channels_last):
    convs = convolutions("fp32", channels_last)
    assert len(convs) == 8
    # by input channels: the stem 3, the 3x3 stride-1 convolution 32, the stride-2 3x3 and the 1x1 64
    assert {(weight_side(op), transformed(op)) for op in convs} == {((3, 3), False), ((32, 3), True),
                                                                     ((64, 3), False), ((64, 1), False)}
    assert all(group_of(op, ROOFS, "fp32", channels_last).transform == transformed(op) for op in convs)


def test_a_transform_is_plain_fp32s_alone():
    for precision in ("tf32", "bf16"):
        assert not any(group_of(op, ROOFS, precision).transform for op in convolutions(precision))


@pytest.mark.parametrize("precision, transposed", [("fp32", True), ("tf32", False)])
def test_cudnns_fp32_kernels_transpose_a_channels_last_convolution_its_tensor_core_ones_an_nchw_one(precision,
                                                                                                   transposed):
    for channels_last in (False, True):
        for op in convolutions(precision, channels_last):   # but TF32's NCHW 1x1 one, a product on the NCHW tensors
            expected = channels_last == transposed and (precision == "fp32" or not pointwise(op))
            assert (group_of(op, ROOFS, precision, channels_last).nchw_s > 0) == expected


def test_each_convolution_takes_its_class_slowdown_and_a_matmul_the_learned_one():
    run = trace_run(network(False), "fp32", 4)
    efficiency = Efficiency(ROOFS.sms, {}, {}, KindFit(0.0, 1.0, 0))   # no fixed cost: the roofs' time alone
    timed = {o.kind: o.seconds for o in op_times(run, efficiency, ROOFS, Fp32Scale(gemm=0.5, conv=2.0, transform=0.25))}
    at_one = {o.kind: o.seconds for o in op_times(run, efficiency, ROOFS, Fp32Scale(1.0, 1.0, 1.0))}
    groups = [group_of(op, ROOFS, "fp32") for op in run.ops if op.name == "aten::convolution"]
    assert [g.transform for g in groups] == [False, True, False, False]
    expected = sum(g.roof_s(ROOFS.sms, Shape().unaligned) * (0.25 if g.transform else 2.0) + g.outright_s
                   for g in groups)
    assert timed["convolution"] == pytest.approx(expected, rel=1e-9)
    assert timed["addmm"] == pytest.approx(0.5 * at_one["addmm"], rel=1e-9) and at_one["addmm"] > 0


def test_the_committed_slowdowns_are_the_fit_of_the_committed_grid(capsys):
    fit = load_script(REPO / "benchmarks" / "conv_fp32_fit.py")
    assert fit.main([]) == 0, capsys.readouterr().out   # FP32_CONV is what the script derives, to the digit
    out = capsys.readouterr().out
    assert f"conv {FP32_CONV.conv}, transform {FP32_CONV.transform}" in out and "resnet50" in out
    # measured: an implicit GEMM under half its roof's rate, a transform at about its direct product's
    assert FP32_CONV.conv > 1.5 and 0.5 < FP32_CONV.transform < FP32_CONV.conv / 1.5


def test_the_grid_benchmark_times_every_direction_and_setting_on_the_cpu_and_writes_one_json(tmp_path, capsys):
    bench, doc = small_grid("gpu_conv_fp32_grid.py", tmp_path, "--budget-s", "3600")
    assert_every_setting_checked_and_timed(bench, doc)
    assert all(p[part]["median_s"] > 0 and p[part]["n"] == bench.REPEATS for p in doc["points"] for part in bench.PARTS)
    assert all(p[f"{part}_kernels"] for p in doc["points"] for part in bench.PARTS)
    assert "TFLOP/s (direct product)" in capsys.readouterr().out
