"""The rows the per-op efficiency is learned from: each op of each profiled step of a reference workload, its calls by
shape from the same step traced on the meta device, its time from the GPU's profile.

The trace and the profile count the same calls (the trace records what the GPU's profile recorded: the same aten
ops, FLOPs and bytes; tests/test_trace.py checks gpt-small op by op), so a profile's row for `aten::mm` is matched
with the trace's mm calls of that step, shape by shape. A kind the trace launches kernels for but the profile does
not list took no measurable time there: a row of zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from gpuplan_schema.payloads import CeilingsPayload, RooflinePayload, TracedOp, TracePayload, TraceRun
from planner.specs import match_gpu
from planner.trace.depthwise import ATEN, depthwise_of
from planner.trace.efficiency import ANY, BIAS_ADD_OPS, Blocks, Group, Row, math_class
from planner.trace.gemm import Gemm, gemm_of, unaligned_s
from planner.trace.kinds import (
    BATCH_NORMS,
    CHANNELS_LAST,
    DEPTHWISE,
    ELEMENT_BYTES,
    MATMUL_KINDS,
    NATIVE,
    NHWC,
    RNN_KINDS,
    ROLL,
    ROW_KINDS,
    SCAN_OUTER,
    SM_BOUND,
    VARIANT_SUFFIX,
    VOLUMETRIC,
    Roofs,
    base_kind,
    op_kind,
)
from planner.trace.plane import cudnn_plane_of, plane_of, rows_input
from planner.trace.roll import roll_s
from planner.trace.rows import rows_of
from planner.trace.scan import outer_scan, scan_s
from planner.trace.scatter import GATHER, SCATTER, gather_s, scatter_s


def roofs_of(ceilings: CeilingsPayload) -> Roofs:
    flops = {m.dtype: m.flops_per_s.median for m in ceilings.matmul if m.flops_per_s}
    copy = next((b.bytes_per_s.median for b in ceilings.memory if b.name == "copy" and b.bytes_per_s), 0.0)
    spec = match_gpu(ceilings.device_name)
    sms, clock = (spec.sm_count or 0, (spec.boost_clock_mhz or 0.0) * 1e6) if spec else (0, 0.0)
    return Roofs(flops, copy, sms, clock)


def group_of(op: TracedOp, roofs: Roofs, precision: str, nhwc: bool = False, training: bool = True) -> Group:
    """One traced op row as a Group: its calls' per-call math and memory seconds on these roofs (`nhwc`: the op is
    of a channels-last network, whose batch norms run NHWC kernels, cuDNN's or ATen's channels-last ones, whatever
    the input's layout on the meta device; `training`: of a training step, whose cuDNN batch norms run cuDNN's
    training kernels, an inference step's its inference kernel)."""
    calls = max(op.calls, 1)
    flops = op.flops / calls if op.flops is not None else None
    kind = op_kind(op.name)
    memory_s = op.bytes / calls / roofs.bytes_per_s
    # cuDNN runs a channels-first convolution (1-D ones too, as 2-D of height 1) through NHWC transposes; in plain
    # fp32 the other way round: its fp32 kernels are NCHW ones, a channels-last convolution transposed in and back
    # (nhwcToNchwKernel / nchwToNhwcKernel in results/h200/diagnostics/conv-fp32-grid-2026-11-28); but a
    # channels-first 1x1 stride-1 convolution is a matrix product on the NCHW tensors themselves (`pointwise`)
    plain = math_class(op.dtype, precision) == "fp32"
    conv = kind.startswith("convolution") and bool(op.shapes) and len(op.shapes[0]) in (3, 4, 5)
    nchw = conv and (op.variant == "channels_last") == plain
    depthwise = depthwise_of(op)
    if depthwise is not None:   # no transposes, no tensor-core product (depthwise.py); ATen's kernel adds the bias
        bias_s = 0.0 if depthwise.library == ATEN else bias_add_s(op, kind, roofs)   # inside, cuDNN's apart
        return Group(op.calls, roofs.math_s(flops, op.dtype, precision), memory_s,
                     sm_s=depthwise.seconds(roofs.sms, roofs.clock_hz), bias_s=bias_s)
    if outer_scan(op) is not None:   # its dependent steps, whatever its bytes (scan.py)
        return Group(op.calls, 0.0, memory_s, sm_s=scan_s(op, roofs.clock_hz))
    if kind == ROLL:                  # its index arithmetic an element (roll.py)
        return Group(op.calls, 0.0, memory_s, sm_s=roll_s(op, roofs.sms, roofs.clock_hz))
    if kind in (GATHER, SCATTER):     # a row's lookup, an element's atomic (scatter.py)
        timed = gather_s if kind == GATHER else scatter_s
        return Group(op.calls, 0.0, memory_s, sm_s=timed(op, roofs.sms, roofs.clock_hz))
    native = op.variant == "native" and kind in BATCH_NORMS and not nhwc
    cudnn = op.variant != "native" and kind in BATCH_NORMS and not nhwc and training   # cuDNN's NCHW training kernels
    backward = kind == "batch_norm_backward"
    plane: Blocks | None = plane_of(op.shapes, backward) if native else \
        cudnn_plane_of(op.shapes, backward) if cudnn else None
    plane_s = 0.0
    if plane is not None and cudnn:   # one fused kernel a pass, all per-channel, by its elements (CUDNN_NCHW_BYTES)
        plane_s, memory_s = memory_s * CUDNN_NCHW_BYTES / ELEMENT_BYTES.get(op.dtype or "", CUDNN_NCHW_BYTES), 0.0
    elif plane is not None:   # the statistics' pass reads the input (the output's kernel fills the GPU); the fused
        forward = kind == "batch_norm"   # backward is all per-channel
        plane_s = op.read_bytes / calls / roofs.bytes_per_s if forward else memory_s
        memory_s = memory_s if forward else 0.0
    elif kind in ROW_KINDS and (plane := rows_of(op.shapes)) is not None:   # one block a row: all its bytes
        plane_s, memory_s = memory_s, 0.0
    flat = conv and not plain and op.variant != "channels_last" and pointwise(op)   # a product on the NCHW tensors
    gemm = pointwise_gemm(op) if flat else gemm_of(kind, op.shapes, flops)
    elements = op.bytes / calls / ELEMENT_BYTES.get(op.dtype or "", 4)
    sm_s = 0.0 if kind.startswith("convolution") else unaligned_s(gemm, elements, roofs.sms, roofs.clock_hz)
    return Group(op.calls, roofs.math_s(flops, op.dtype, precision), memory_s, gemm,
                 2 * memory_s if nchw and not flat else 0.0,
                 plane, plane_s, sm_s, bias_add_s(op, kind, roofs), plain and conv and transformed(op),
                 launches_of(op, kind))


# cuDNN's NCHW training batch norm runs one fused kernel a pass, `bn_fw_tr_1C11_kernel_NCHW` and
# `bn_bw_1C11_kernel_new` (every cuDNN batch norm of the NCHW TF32 profiles: SSD300, sensor-cnn, EfficientNet-B0,
# MobileNetV3, ResNet-18, ResNeXt-101, unet-seg; 32, 128 or 512 threads by the map's size), ONE block per channel
# looping over its channel's elements, as ATen's per-channel kernels do: on an H100's grid
# (results/h100-80gb/diagnostics/batchnorm-grid-2026-11-28) the same elements took 3-4x as long in 16 channels as
# in 64. So all of its bytes are timed by the SMs' channel slots its channels fill (plane.py CudnnPlane). Against
# that roof the TF32 NCHW profiles of six models on an H200 (SSD300; EfficientNet-B0, MobileNetV3, ResNet-18,
# ResNeXt-101 and unet-seg, never learned from) ran their backward at 1.95-2.30x and forward at 2.03-2.73x, against
# their bytes 2.7-9.7x and 2.2-5.9x (benchmarks/trace_batchnorm_rows.py); on the H100 (SSD300, unet-seg) 1.49-1.98x
# and 1.59-2.41x, against their bytes 2.9-4.4x and 2.5-2.8x. And by its elements, not its bytes: on the H100 grid
# fp16 autocast over fp32 on the same tensor took a median 0.88x forward (0.50-1.59, 35 shapes) and 0.94x backward
# (0.64-1.43), where its bytes halve; its learned figures are of TF32 profiles (no profile runs fp16), so an fp16 one
# is counted at fp32's width. Counted by its bytes, ResNet-18's fp16 batch norms were timed at half its TF32 ones.
# cuDNN's NHWC kernels do follow the bytes (ResNet-50 channels-last on an H200, results/h200/diagnostics/dle-points:
# fp16 0.55x its TF32 time, forward and backward), and fill the GPU.
CUDNN_NCHW_BYTES = 4

# The fewest channels a transformed convolution was seen with: 3 never, 64 always; 32 between, unmeasured
TRANSFORM_CHANNELS = 32


def transformed(op: TracedOp) -> bool:
    """Whether cuDNN's heuristics run this fp32 convolution as a transform (FFT, Winograd) that does fewer
    multiplications than the direct product the trace counts: a 3x3 stride-1 2-D one of TRANSFORM_CHANNELS input
    and output channels or more (the kernels named in results/h200/diagnostics/conv-fp32-grid-2026-11-28:
    fft2d_r2c / winograd_nonfused at every 3x3 stride-1 point of 64 channels and more, but the forward of some;
    implicit GEMMs at every 1x1, stride-2 and 7x7 one and at conv-rollout's 3-channel input layer)."""
    backward = op.name.endswith("convolution_backward")
    if len(op.shapes) < (3 if backward else 2):
        return False
    x, w = op.shapes[1 if backward else 0], op.shapes[2 if backward else 1]
    if len(x) != 4 or len(w) != 4 or tuple(w[2:]) != (3, 3) or min(w[:2]) < TRANSFORM_CHANNELS \
            or not (backward or op.flops):
        return False
    if backward:   # (grad of the output, input, weight): the output's map as large as the input's
        return math.prod(op.shapes[0][2:]) >= 0.8 * x[2] * x[3]
    out_map = op.flops / max(op.calls, 1) / (2 * x[0] * w[0] * w[1] * 9)   # type: ignore[operator]
    return out_map >= 0.8 * x[2] * x[3]   # stride 1: an output as large as the input (padding 1)


def pointwise(op: TracedOp) -> bool:
    """Whether a convolution is 1x1 of stride 1 over a 2-D map (a 1-D one's kernel 1 over its length too: PyTorch
    hands cuDNN a Conv1d as a 2-D one of height 1, `view4d` in aten/src/ATen/native/Convolution.cpp, so the same
    call), groups 1: a matrix product per image, weight x input,
    that cuDNN runs on NCHW tensors as they are (cuBLAS's `xmma_gemm` nn/tn/nt kernels in TF32, CUTLASS's
    `s16816gemm` in bf16), with none of the NHWC transposes its other tensor-core kernels need: in TF32 on an H200,
    49 of the 54 directions of the 1x1 stride-1 convolutions in results/h200/diagnostics/conv-fp32-grid-2026-11-28
    ran GEMM kernels and no transpose (the others: ResNet-50's 2048 -> 512 over 7 x 7 maps, two weight gradients),
    84 of the other 90 transposed. In the profiles of the NCHW networks about as many convolutions are transposed back
    (`nhwcToNchwKernel`) as are not 1x1 of stride 1: SSD300 35 (bf16) and 41 (TF32) of 65 where 32 are not,
    ResNet-50 24 of 53 where 20 are not (H200, results/h200/diagnostics/dle-points). Charged their transposes,
    SSD300's held-out TF32 convolutions were timed 1.7-2.3x their measured time (H100 and H200)."""
    backward = op.name.endswith("convolution_backward")
    if len(op.shapes) < (3 if backward else 2):
        return False
    x, w = op.shapes[1 if backward else 0], op.shapes[2 if backward else 1]
    if len(x) not in (3, 4) or len(w) != len(x) or any(k != 1 for k in w[2:]) or w[1] != x[1]:
        return False
    if backward:   # (grad of the output, input, weight): the output's map as large as the input's
        return len(op.shapes[0]) == len(x) and math.prod(op.shapes[0][2:]) == math.prod(x[2:])
    if not op.flops:
        return False
    out_map = op.flops / max(op.calls, 1) / (2 * x[0] * w[0] * w[1])
    return out_map >= 0.8 * math.prod(x[2:])


def pointwise_gemm(op: TracedOp) -> Gemm:
    """A pointwise NCHW convolution's product per image, weight (Cout x Cin) x input (Cin x H*W), the map its rows'
    leading dimension: its kernels' loads are aligned as H*W is (SSD300's 38 x 38 maps, 4-aligned, ran CUTLASS's
    `align2` kernels in bf16 and aligned ones in TF32, its 75 x 75 maps `align1`)."""
    backward = op.name.endswith("convolution_backward")
    x, w = op.shapes[1 if backward else 0], op.shapes[2 if backward else 1]
    return Gemm(math.prod(x[2:]), w[0], w[1], x[0], 8 if op.dtype in ("fp16", "bf16") else 4)


def launches_of(op: TracedOp, kind: str) -> int | None:
    """The kernels the op's calls launch where the trace counts more than one a call (efficiency.py): a cuDNN RNN's
    per time step (collectors/trace/rnn.py); None for the others (one a call)."""
    return op.launches if kind in RNN_KINDS else None


def bias_add_s(op: TracedOp, kind: str, roofs: Roofs) -> float:
    """Per call, ATen's add of a convolution's bias to its output (efficiency.py BIAS_ADD_OPS): every output element
    at BIAS_ADD_OPS operations at the FP32 roof, whatever its dtype; 0 without a bias (a third input shape)."""
    peak = roofs.flops_per_s.get("fp32")
    if kind != "convolution" or len(op.shapes) < 3 or not op.shapes[2] or not peak:
        return 0.0
    return op.written_bytes / max(op.calls, 1) / ELEMENT_BYTES.get(op.dtype or "", 4) * BIAS_ADD_OPS / peak


def kind_and_class(op: TracedOp, precision: str, nhwc: bool = False) -> tuple[str, str]:
    """The op's kind (with its variant where the kind has kernels of its own for it: a masked or causal attention)
    and, for a matmul kind, its math class ("any" for the others: their
    efficiency is learned across dtypes, as the profile lists each op once whatever dtypes its calls had)."""
    kind = op_kind(op.name)
    if depthwise_of(op) is not None:
        return kind + DEPTHWISE, SM_BOUND
    if outer_scan(op) is not None:
        return kind + SCAN_OUTER, SM_BOUND
    suffix = VARIANT_SUFFIX.get(op.variant or "")
    if suffix and kind.startswith("attention"):
        kind += suffix   # a convolution's layout is in its Group (the NCHW transposes)
    if kind.startswith("convolution") and op.shapes and len(op.shapes[0]) == 5:   # its input, or its output's gradient
        kind += VOLUMETRIC
    if kind in BATCH_NORMS and op.variant == "native":   # ATen's kernels: channels-last, or one block per channel
        kind += CHANNELS_LAST if nhwc or rows_input(op.shapes, kind == "batch_norm_backward") else NATIVE
    elif kind in BATCH_NORMS and nhwc:                   # cuDNN's NHWC kernels
        kind += NHWC
    return kind, math_class(op.dtype, precision) if kind in MATMUL_KINDS else ANY


STEP_PHASES = ("forward", "backward", "optimizer")


def channels_last(run: TraceRun) -> bool:
    """Whether the step's images are NHWC: its convolutions are (the meta device's batch norm returns contiguous
    outputs whatever its input, so a batch norm's own variant cannot say; on a GPU it keeps its input's layout)."""
    return any(op.variant == "channels_last" for op in run.ops if op_kind(op.name).startswith("convolution"))


def phase_of(op: TracedOp) -> str:
    """The step's phase an op ran in (one a trace does not name, such as the loss, counts as the forward's)."""
    return op.phase if op.phase in STEP_PHASES else "forward"


def traced_kinds(run: TraceRun, roofs: Roofs, phase: str | None = None) -> dict[tuple[str, str], list[Group]]:
    """The run's launching ops (those of `phase` alone if given) by (kind, class), each a list of Groups."""
    out: dict[tuple[str, str], list[Group]] = defaultdict(list)
    nhwc, training = channels_last(run), any(op.phase == "backward" for op in run.ops)
    for op in run.ops:
        if op.launches and (phase is None or phase_of(op) == phase):
            out[kind_and_class(op, run.precision, nhwc)].append(group_of(op, roofs, run.precision, nhwc, training))
    return out


def profile_rows(profile: RooflinePayload, trace: TracePayload, roofs: Roofs) -> Iterable[Row]:
    """The rows of every profiled batch of `profile` that `trace` traced."""
    for at in profile.profiled():
        run = trace.run(profile.precision, at.batch)
        if at.status != "ok" or at.step_s is None or run is None or run.status != "ok":
            continue
        measured: dict[str, float] = defaultdict(float)
        for op in at.ops:
            measured[op_kind(op.name)] += op.time_s.median
        traced = traced_kinds(run, roofs)
        for (kind, cls), groups in traced.items():
            base = base_kind(kind)
            if sum(base_kind(k[0]) == base for k in traced) > 1:
                continue  # one profile row for calls of two classes: which took what is not known
            yield Row(kind, cls, tuple(groups), measured.get(base, 0.0), at.step_s.median, profile.workload)


def build_rows(profiles: Iterable[RooflinePayload], traces: dict[str, TracePayload], roofs: Roofs,
               leave_out: str | None = None) -> list[Row]:
    """Every row of the GPU profiles of the traced reference workloads, `leave_out`'s left out."""
    rows = []
    for p in profiles:
        if p.device == "cuda" and p.workload in traces and p.workload != leave_out:
            rows.extend(profile_rows(p, traces[p.workload], roofs))
    return rows
