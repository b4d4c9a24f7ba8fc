"""How long a depthwise convolution's kernels take on a GPU: SM cycles measured per kernel, not bytes.

A 2-D convolution whose groups are its input channels (weight (C_out, 1, kh, kw), C_out a multiple of C_in) runs
ATen's own kernels (aten/src/ATen/native/cuda/DepthwiseConv2d.cu) in NCHW in every dtype but the fp16 shapes
PyTorch gives cuDNN (`cudnn_fp16`), and cuDNN's depthwise kernels for a channels-last batch (always):

- `conv_depthwise2d_forward_kernel`: one thread an output element, looping over the k × k taps with the index
  arithmetic of a gather (specialised for 3 × 3 and 1 × 1 filters, a generic loop otherwise);
- `conv_depthwise2d_backward_kernel` (the input's gradient): one thread an input element, the same loop over the
  output elements whose taps cover it;
- `conv_depthwise2d_grad_weight_kernel` (the weight's gradient): ONE block a weight element (C_out × kh × kw
  blocks) of min(32 N, 256) threads, a warp an image, each warp summing over its images' output maps 32 lanes at a
  time before a block reduction.

None of ATen's three is bandwidth's: the H200 ran them in bf16 and fp32 in the same time (fp32 moves twice the
bytes), and the H100 and the H200 (one SM design, 1.42× the bandwidth apart) in the same busy time on
EfficientNet-B0 (docs/prediction-model.md § 1a: a ≈ −0.1). So a call's time is SM cycles at the GPU's clock:

    forward, input gradient   warps (elements / 32) × cycles a warp / (SMs × clock)
    weight gradient           per wave of blocks on an SM: iterations a warp runs × cycles an iteration × the
                              SM's warps over the warps it takes to hide an iteration's latency (at least 1);
                              the blocks run in waves of SMs × resident blocks (2,048 threads an SM)

cuDNN's (closed) kernels are timed as the first two, per kernel, dtype class and layout (`CUDNN`): cycles a warp
of the part's elements, as measured; they run 2-9x faster than ATen's in bf16 (a 7 × 7 weight gradient in fp32
channels-last 200x its bytes' time: cuDNN's heuristic picks a direct kernel for it).

The cycles are measured, not learned from a reference (no reference workload runs a depthwise convolution):
benchmarks/gpu_depthwise_grid.py timed the three kernels apart over 92 shapes on an H200 in five settings
(results/h200/diagnostics/depthwise-grid-2026-11-28/: ATen's three settings, then a second call with the two
channels-last ones), and benchmarks/depthwise_fit.py derives MEASURED from them (medians per filter side and
stride; tests/test_trace_depthwise.py checks they are that fit). Median |error| per point, ATen's: forward 2.7 %,
input gradient 3.7 %, weight gradient 6.0 %; cuDNN's 3-26 % (its weight gradient in fp32 the worst). The second
call's ATen points, on another lease, fit 3-8 % slower (its medians 4.3, 5.9 and 8.8 %). A filter or stride no
grid measured takes the nearest measured filter's cycles scaled by the taps (ATen's generic kernels: per tap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan_schema.payloads import TracedOp
from planner.trace.kinds import ELEMENT_BYTES
from planner.trace.plane import THREADS_PER_SM

WARP = 32
BLOCKS_PER_SM = 32         # and blocks
GRAD_WEIGHT_THREADS = 256  # getGradParamsNumThreads: a warp an image, at most 256 threads a block
PARTS = ("forward", "grad_input", "grad_weight")
ATEN = "aten"
# cuDNN's depthwise kernels, by the layout and dtype that pick them: channels-last batches in bf16/fp16 and in fp32
# (PyTorch gives cuDNN every channels-last depthwise convolution), NCHW fp16 where `cudnn_fp16` says
CUDNN = ("nhwc-half", "nhwc-fp32", "nchw-fp16")
Key = tuple[str, int, int]   # (part, square filter side, stride)


@dataclass(frozen=True)
class DepthwiseCycles:
    """SM cycles of the depthwise kernels (module docstring), measured on one GPU: per kernel, filter side and
    stride, the cycles a warp of 32 elements takes (the forward's output elements; the input gradient's and, for
    cuDNN, the weight gradient's input elements); ATen's weight gradient by its blocks."""

    aten: dict[Key, float]                 # ATen's forward and input gradient
    per_tap: dict[str, float]              # ATen's generic kernels, a warp and tap (filters not measured)
    grad_weight: float                     # ATen's weight gradient: cycles a warp's iteration
    cudnn: dict[str, dict[Key, float]]     # CUDNN setting → its kernels' cycles a warp
    hiding_warps: int = 24                 # warps an SM needs busy to hide an iteration's latency
    image_iterations: float = 2.0          # a warp's overhead per image, in iterations


# benchmarks/depthwise_fit.py on results/h200/diagnostics/depthwise-grid-2026-11-28/ (NVIDIA H200, 132 SMs at
# 1,980 MHz, torch 2.11.0+cu130, cuDNN 9.19): ATen's from the first call's grid, cuDNN's from the second's
MEASURED = DepthwiseCycles(
    aten={("forward", 3, 1): 83.0, ("forward", 3, 2): 93.0, ("forward", 5, 1): 147.0, ("forward", 5, 2): 157.0,
          ("forward", 7, 1): 301.0, ("grad_input", 3, 1): 151.0, ("grad_input", 3, 2): 137.0,
          ("grad_input", 5, 1): 166.0, ("grad_input", 5, 2): 190.0, ("grad_input", 7, 1): 385.0},
    per_tap={"forward": 6.1, "grad_input": 7.6},
    grad_weight=279.0,
    cudnn={
        "nhwc-half": {("forward", 3, 1): 18.0, ("forward", 3, 2): 36.0, ("forward", 5, 1): 33.0,
            ("forward", 5, 2): 66.0, ("forward", 7, 1): 71.0, ("grad_input", 3, 1): 34.0, ("grad_input", 3, 2): 31.0,
            ("grad_input", 5, 1): 73.0, ("grad_input", 5, 2): 69.0, ("grad_input", 7, 1): 159.0,
            ("grad_weight", 3, 1): 27.0, ("grad_weight", 3, 2): 12.0, ("grad_weight", 5, 1): 33.0,
            ("grad_weight", 5, 2): 22.0, ("grad_weight", 7, 1): 54.0},
        "nhwc-fp32": {("forward", 3, 1): 27.0, ("forward", 3, 2): 49.0, ("forward", 5, 1): 63.0,
            ("forward", 5, 2): 92.0, ("forward", 7, 1): 170.0, ("grad_input", 3, 1): 34.0,
            ("grad_input", 3, 2): 48.0, ("grad_input", 5, 1): 71.0, ("grad_input", 5, 2): 109.0,
            ("grad_input", 7, 1): 178.0, ("grad_weight", 3, 1): 28.0, ("grad_weight", 3, 2): 16.0,
            ("grad_weight", 5, 1): 105.0, ("grad_weight", 5, 2): 64.0, ("grad_weight", 7, 1): 3199.0},
        "nchw-fp16": {("forward", 3, 1): 28.0, ("forward", 3, 2): 54.0, ("forward", 5, 1): 77.0,
            ("forward", 5, 2): 81.0, ("grad_input", 3, 1): 31.0, ("grad_input", 3, 2): 121.0,
            ("grad_input", 5, 1): 87.0, ("grad_input", 5, 2): 334.0, ("grad_weight", 3, 1): 63.0,
            ("grad_weight", 3, 2): 30.0, ("grad_weight", 5, 1): 90.0, ("grad_weight", 5, 2): 31.0},
    },
)


def per_warp(table: dict[Key, float], part: str, kh: int, kw: int, stride: int) -> float | None:
    """The table's cycles a warp for this filter and stride: its own entry, else the same stride's (then stride 1's)
    nearest filter side scaled by the taps; None where the table has none for the part."""
    for s in dict.fromkeys((stride, 1)):
        sides = [k for (p, k, st) in table if p == part and st == s]
        if sides:
            side = min(sides, key=lambda k: (abs(k * k - kh * kw), k))
            return table[(part, side, s)] * kh * kw / (side * side)
    return None


@dataclass(frozen=True)
class DepthwiseConv:
    """One call of a depthwise convolution: its sizes, which kernels it runs (`parts`) and whose (`library`)."""

    batch: int
    channels: int          # output channels (the weight's first dimension)
    in_map: int            # H × W of the input
    out_map: int           # OH × OW of the output
    kh: int
    kw: int
    stride: int
    parts: tuple[str, ...]   # of PARTS
    library: str = ATEN      # ATEN or one of CUDNN

    def _elements(self, part: str) -> int:
        return self.batch * self.channels * (self.out_map if part == "forward" else self.in_map)

    def _aten_warp(self, part: str, cycles: DepthwiseCycles) -> float:
        if self.kh == self.kw and self.kh in (1, 3):   # the kernels' specialisations (1 × 1 as 3 × 3: unmeasured)
            return per_warp(cycles.aten, part, 3, 3, self.stride) or 0.0
        measured = (part, self.kh, self.stride) in cycles.aten and self.kh == self.kw
        return cycles.aten[(part, self.kh, self.stride)] if measured else cycles.per_tap[part] * self.kh * self.kw

    def _grad_weight_cycles(self, sms: int, cycles: DepthwiseCycles) -> float:
        warps = min(self.batch * WARP, GRAD_WEIGHT_THREADS) // WARP
        iterations = math.ceil(self.batch / warps) * (math.ceil(self.out_map / WARP) + cycles.image_iterations)
        resident = min(THREADS_PER_SM // (warps * WARP), BLOCKS_PER_SM)
        full, rest = divmod(self.channels * self.kh * self.kw, sms * resident)

        def wave(blocks_per_sm: int) -> float:
            return iterations * cycles.grad_weight * max(1.0, blocks_per_sm * warps / cycles.hiding_warps)
        return full * wave(resident) + (wave(math.ceil(rest / sms)) if rest else 0.0)

    def seconds(self, sms: int, clock_hz: float, cycles: DepthwiseCycles = MEASURED) -> float:
        """The call's time on a GPU of `sms` SMs at `clock_hz`; 0 where either is unknown, or cuDNN's kernels for
        its setting were not measured (the bytes' roof then)."""
        if sms <= 0 or clock_hz <= 0:
            return 0.0
        total = 0.0
        for part in self.parts:
            if self.library == ATEN and part == "grad_weight":
                total += self._grad_weight_cycles(sms, cycles) / clock_hz
                continue
            if self.library == ATEN:
                warp = self._aten_warp(part, cycles)
            else:
                warp = per_warp(cycles.cudnn.get(self.library, {}), part, self.kh, self.kw, self.stride) or 0.0
            total += self._elements(part) / WARP * warp / (sms * clock_hz)
        return total


def cudnn_fp16(batch: int, channels: int, width: int, kh: int, kw: int, stride: int, height: int) -> bool:
    """Whether PyTorch gives an fp16 depthwise convolution to cuDNN (`use_cudnn_depthwise` and
    `check_cudnn_depthwise_workload_with_filter`, aten/src/ATen/native/Convolution.cpp, cuDNN 8.2 and later)."""
    if channels < 32:
        return False
    if height == 1 and stride == 1:
        return True
    if kh != kw or kh not in (1, 3, 5) or width < 7:
        return False
    if stride == 1:
        return True
    if stride != 2:
        return False
    if batch == 1:
        return kh in (3, 5) or width <= 28
    if kh == 1:
        return batch <= 16 and channels >= 128 and width <= 7
    return channels >= 512 or (channels >= 256 and width >= 28)


def depthwise_of(op: TracedOp) -> DepthwiseConv | None:
    """The depthwise convolution an `aten::convolution` (shapes: input, weight) or `aten::convolution_backward`
    (grad_output, input, weight) call is, and whose kernels run it; None for any other op (a dense or grouped
    convolution, a 3-D one)."""
    name = op.name.split("::")[-1]
    backward = name == "convolution_backward"
    if name not in ("convolution", "convolution_backward") or len(op.shapes) < (3 if backward else 2) \
            or op.dtype not in ELEMENT_BYTES:
        return None
    x, w = op.shapes[1 if backward else 0], op.shapes[2 if backward else 1]
    if len(x) not in (3, 4) or len(w) != len(x) or w[1] != 1 or x[1] < 2 or w[0] % x[1]:
        return None
    n, c = x[0], w[0]
    h, wd = (x[2], x[3]) if len(x) == 4 else (1, x[2])
    kh, kw = (w[2], w[3]) if len(w) == 4 else (1, w[2])
    calls, item = max(op.calls, 1), ELEMENT_BYTES[op.dtype]
    if backward:
        out_map = math.prod(op.shapes[0][2:])
        input_grad = op.written_bytes / calls >= math.prod(x) * item   # the first layer's input needs none
        parts = ("grad_input", "grad_weight") if input_grad else ("grad_weight",)
    else:
        out_map = max(1, round(op.written_bytes / calls / item / (n * c)))
        parts = ("forward",)
    stride = max(1, round(wd / out_map if h == 1 else math.sqrt(h * wd / out_map)))
    return DepthwiseConv(n, c, h * wd, out_map, kh, kw, stride, parts, library_of(op, n, x[1], h, wd, kh, kw, stride))


def library_of(op: TracedOp, batch: int, channels: int, h: int, w: int, kh: int, kw: int, stride: int) -> str:
    """Whose kernels PyTorch runs a depthwise convolution on (`_select_conv_backend`): cuDNN's for a channels-last
    batch and for cuDNN's fp16 shapes, ATen's otherwise."""
    if op.variant == "channels_last":
        return "nhwc-fp32" if op.dtype in ("fp32", "fp64") else "nhwc-half"
    # a Conv1d too: PyTorch views it as a 2-D one of height 1 (`view4d`) before it picks the backend, and cuDNN's
    # fp16 depthwise takes every 1-D one of stride 1 (check_cudnn_depthwise_workload_with_filter)
    if op.dtype == "fp16" and len(op.shapes[1 if op.name.endswith("backward") else 0]) in (3, 4) \
            and cudnn_fp16(batch, channels, w, kh, kw, stride, h):
        return "nchw-fp16"
    return ATEN
