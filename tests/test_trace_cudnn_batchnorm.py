"""cuDNN's NCHW training batch norm (an fp32 or fp16-autocast one) launches one block per channel as ATen's per-channel
kernels do: timed by the share of the SMs its channels fill, all of its bytes, and by its elements at fp32's width
(planner/trace/training.py CUDNN_NCHW_BYTES), which the committed H100 grid measured."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from collectors.trace.collect import load_on_meta, trace_run
from gpuplan_schema.payloads import TracedOp, TraceRun
from gpuplan_schema.schema import load_document
from planner.trace.efficiency import Efficiency, KindFit, Shape
from planner.trace.kinds import Roofs, op_kind, own_roof
from planner.trace.plane import CUDNN_RESIDENT, CudnnPlane
from planner.trace.training import traced_kinds

ROOT = Path(__file__).resolve().parent.parent
GRID = ROOT / "results/h100-80gb/diagnostics/batchnorm-grid-2026-11-28/batchnorm-grid.json"
ROOFS = Roofs({"bf16": 7e14, "fp16": 7e14, "tf32": 3.5e14}, 3e12, 132)
H200 = Roofs({"bf16": 7e14, "tf32": 3.5e14}, 4.0e12, 132)
X = [32, 64, 56, 56]   # ResNet-18's first stage at 32 images


def _norm(dtype: str, backward: bool = False, variant: str | None = None) -> TracedOp:
    width = {"fp16": 2, "fp32": 4}[dtype]
    nbytes = width * 32 * 64 * 56 * 56
    if backward:
        return TracedOp("aten::native_batch_norm_backward", "backward", 1, 2 * nbytes, nbytes, 1, dtype,
                        [X, X, [64]], None, variant)
    return TracedOp("aten::native_batch_norm", "forward", 1, nbytes, nbytes, 1, dtype, [X, [64]], None, variant)


def _groups(precision: str, dtype: str, training: bool = True):  # noqa: ANN202 - (forward, backward or None)
    ops = [_norm(dtype)] + ([_norm(dtype, backward=True)] if training else [])
    kinds = traced_kinds(TraceRun(precision, 32, "ok", ops=ops), ROOFS)
    forward = kinds[("batch_norm", "any")][0]
    return forward, kinds[("batch_norm_backward", "any")][0] if training else None


def test_a_training_cudnn_nchw_batch_norm_is_timed_by_the_channel_slots_its_channels_fill():
    forward, backward = _groups("tf32", "fp32")
    nbytes = 4 * 32 * 64 * 56 * 56
    for group, moved, resident in ((forward, 2 * nbytes, 1), (backward, 3 * nbytes, 2)):
        assert group.plane == CudnnPlane(64, resident) and group.memory_s == 0.0   # per-channel throughout
        assert group.roof_s(132, Shape()) == pytest.approx(moved / 3e12 / (64 / (132 * resident)))
    assert CUDNN_RESIDENT == {"forward": 1, "backward": 2}
    # a channel an SM forward: 132 channels fill the GPU, 133 take a second wave
    assert CudnnPlane(132, 1).fill(132) == 1.0 and CudnnPlane(133, 1).fill(132) == pytest.approx(133 / 264)
    assert CudnnPlane(264, 2).fill(132) == 1.0


def test_the_profiles_kernels_run_alike_against_that_roof():
    """SSD300's TF32 profile on the H200 against ResNet-18's (never learned from: its NCHW batch norms of 64-512
    channels where SSD300's are of 64-1,024): within 25 % of each other per pass against the channel slots, where
    by their bytes ResNet-18's backward ran twice as slow per byte."""
    rows = {}
    for spec, path in (("examples/ssd300.py:build", "results/h200/roofline-ssd300-tf32.json"),
                       ("examples/resnet18.py:build",
                        "results/h200/diagnostics/resnet18-2026-11-28/runs/new-models/roofline-resnet18-tf32.json")):
        profile = load_document(ROOT / path).payload
        run = trace_run(load_on_meta(spec), "tf32", profile.batch)
        measured = {op_kind(o.name): o.time_s.median for o in profile.ops if "cudnn_batch_norm" in o.name}
        kinds = traced_kinds(run, H200)
        for kind in ("batch_norm", "batch_norm_backward"):
            groups = kinds[(kind, "any")]
            plane = sum(g.roof_s(132, Shape()) for g in groups)
            moved = sum(g.calls * (g.memory_s + g.plane_s) for g in groups)
            rows[(spec, kind)] = (measured[kind] / plane, measured[kind] / moved)
    for kind in ("batch_norm", "batch_norm_backward"):
        (ssd, ssd_bytes), (r18, r18_bytes) = (rows[(s, kind)] for s in ("examples/ssd300.py:build",
                                                                       "examples/resnet18.py:build"))
        assert 0.8 < r18 / ssd < 1.25
    assert r18_bytes / ssd_bytes > 1.8   # the backward's, by its bytes


def test_an_fp16_one_counts_its_elements_at_fp32s_width():
    """fp16 autocast and fp32 on the same tensor take the same time: the kind's figures are learned from TF32
    profiles (fp32 tensors), so an fp16 batch norm is not timed at half of them for its halved bytes."""
    for half, single in zip(_groups("fp16", "fp16"), _groups("tf32", "fp32"), strict=True):
        assert half.plane_s == pytest.approx(single.plane_s) and half.roof_s(132, Shape()) == \
            pytest.approx(single.roof_s(132, Shape()))


def test_an_inference_step_and_a_channels_last_network_keep_the_bytes():
    forward, _ = _groups("fp16", "fp16", training=False)   # cuDNN's inference kernel fills the GPU
    assert forward.plane is None and forward.memory_s == pytest.approx(2 * 2 * 32 * 64 * 56 * 56 / 3e12)
    conv = TracedOp("aten::convolution", "forward", 1, 1e6, 1e6, 1, "fp16", [X, [64, 64, 1, 1]], 1e9, "channels_last")
    kinds = traced_kinds(TraceRun("fp16", 32, "ok", ops=[conv, _norm("fp16"), _norm("fp16", True)]), ROOFS)
    (nhwc,) = kinds[("batch_norm_nhwc", "any")]
    assert nhwc.plane is None and nhwc.memory_s == pytest.approx(2 * 2 * 32 * 64 * 56 * 56 / 3e12)


def test_its_figures_are_of_its_own_roof_and_unlearned_it_takes_its_other_pass_then_atens():
    assert own_roof("batch_norm") and own_roof("batch_norm_backward") and not own_roof("batch_norm_nhwc")
    cudnn, native = KindFit(1e-6, 1.2, 4), KindFit(0.0, 2.5, 4)
    pooled = KindFit(5e-6, 1.4, 0)
    assert Efficiency(132, {}, {"batch_norm": cudnn}, pooled).unlearned("batch_norm_backward") == cudnn
    assert Efficiency(132, {}, {"batch_norm_backward_native": native}, pooled).unlearned("batch_norm_backward") \
        == native
    assert Efficiency(132, {}, {"batch_norm": cudnn}, pooled).pooled == pooled


def test_the_h100_grid_measured_fp16_as_long_as_fp32_where_its_bytes_halve():
    """results/h100-80gb/diagnostics/batchnorm-grid-2026-11-28: every shape timed in both settings, cuDNN's NCHW
    kernels (its `kernels`: bn_fw_tr_1C11_kernel_NCHW, bn_bw_1C11_kernel_new, 512 threads)."""
    grid = json.loads(GRID.read_text())
    names = [k["name"] for s in ("fp16-autocast-nchw", "fp32-nchw") for k in grid["kernels"][s]]
    assert any("bn_fw_tr_1C11_kernel_NCHW<__half" in n for n in names)
    assert any("bn_bw_1C11_kernel_new<float" in n for n in names)
    points = {(p["sweep"], p["n"], p["c"], p["h"], p["w"], p["setting"]): p for p in grid["points"]}
    forward, backward = [], []
    for key, p in points.items():
        if key[-1] == "fp16-autocast-nchw" and (q := points.get((*key[:-1], "fp32-nchw"))):
            forward.append(p["forward"]["median_s"] / q["forward"]["median_s"])
            backward.append(p["backward_median_s"] / q["backward_median_s"])
    assert len(forward) >= 30
    assert 0.8 <= statistics.median(forward) <= 1.0 and 0.85 <= statistics.median(backward) <= 1.05
    # the same elements in fewer channels take longer, as one block a channel predicts
    total = {p["c"]: p for p in grid["points"] if p["sweep"] == "channels_fixed_total" and p["setting"] == "fp32-nchw"}
    assert total[16]["forward"]["median_s"] / total[64]["forward"]["median_s"] > 3
    assert total[16]["backward_median_s"] / total[64]["backward_median_s"] > 3
    # and a forward of more channels than SMs took no less: one channel an SM at a time (CUDNN_RESIDENT), the same
    # elements x waves from 128 channels to 1,024 (2^27 elements in all)
    flat = [total[c]["forward"]["median_s"] for c in (128, 256, 512, 1024)]
    assert max(flat) / min(flat) < 1.25
