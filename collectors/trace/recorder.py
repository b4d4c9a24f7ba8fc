"""Every aten op of a traced step, counted as the roofline collector counts a GPU's
(collectors/roofline/op_accounting.py: the same FLOP formulas, the same bytes-moved rule, the same compute dtype),
with its shapes, its phase and the kernels it would launch, and the memory it leaves live (collectors/trace/memory.py).

Launches: an op that moves or computes nothing (a view, an allocation, a metadata op) launches no kernel on a GPU and
issues none; a multi-tensor op (`_foreach_*`, `_fused_adamw_`, `_amp_foreach_*`) launches one kernel per
MULTI_TENSOR_CHUNK tensors of its first list, as CUDA's multi_tensor_apply does for the depths the optimizers use;
a cuDNN RNN call (`_cudnn_rnn`, `_cudnn_rnn_backward`) two kernels per time step, layer and direction, or one
persistent kernel per layer, and a few per layer beside (collectors/trace/rnn.py); any other op one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from collectors.roofline.op_accounting import compute_dtype, count_bytes, count_flops
from collectors.trace.batchnorm import batch_norm_variant
from collectors.trace.inplace import GpuInPlace
from collectors.trace.kernels import argument, internal_temporaries, result_storage
from collectors.trace.memory import PHASE_CATEGORY, LiveMemory
from collectors.trace.rnn import PERSISTENT, algorithm, rnn_call, rnn_launches
from collectors.trace.workspace import CUBLAS_WORKSPACE, blas_thread, conv_workspaces

MULTI_TENSOR_CHUNK = 36   # multi_tensor_apply's tensors per launch at depth 4 (params, grads, two moments)
MAX_SHAPES = 4            # the shapes of an op's first tensor arguments kept (a foreach op has hundreds)


@dataclass
class TracedCall:
    name: str                   # "aten::mm", as the profiler names it
    phase: str                  # forward, backward, optimizer
    dtype: str | None
    shapes: tuple[tuple[int, ...], ...]
    flops: float | None
    read_bytes: int
    written_bytes: int
    launches: int
    variant: str | None = None

    @property
    def key(self) -> tuple:
        """What makes two calls the same op for the document: aggregated by this (layer after layer collapse)."""
        return self.name, self.phase, self.dtype, self.shapes, self.variant


def _tensors(value: Any) -> list[torch.Tensor]:
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def variant_of(func: torch._ops.OpOverload, args: tuple, kwargs: dict, tensors: list[torch.Tensor]) -> str | None:
    """What sets a kernel apart beside its shapes: an attention's mask ("masked": an attention bias, forward or
    backward) or causality ("causal"), an image batch stored NHWC ("channels_last": cuDNN runs an NCHW convolution
    through transposes, and batch norm has kernels of its own for each layout), a training batch norm that runs
    ATen's per-channel NCHW kernels instead of cuDNN's ("native": batchnorm.py), a cuDNN RNN whose layers each run
    as one persistent kernel ("persistent": rnn.py), a scan along an outer dimension ("outer:<dim>": outer_scan);
    None for the rest."""
    if native := batch_norm_variant(func, args, kwargs):
        return native
    if "scaled_dot_product" in func._schema.name:
        if isinstance(argument(func, args, kwargs, "attn_bias"), torch.Tensor):
            return "masked"
        return "causal" if argument(func, args, kwargs, "is_causal") else None
    if (rnn := rnn_call(func, args, kwargs)) is not None:
        return PERSISTENT if algorithm(rnn) == PERSISTENT else None
    if (scan := outer_scan(func, args, kwargs, tensors)) is not None:
        return scan
    # a convolution runs NHWC where its input or its weight is channels_last (cuDNN's suggested memory format), and
    # meta's batch norm returns contiguous outputs whatever its input was: a convolution looks at all its images
    images = tensors if "convolution" in func._schema.name else tensors[:1]
    return "channels_last" if any(_channels_last(t) for t in images) else None


SCANS = ("cumsum", "cumprod", "logcumsumexp", "_cummax_helper", "_cummin_helper")   # ATen's scan kernels


def outer_scan(func: torch._ops.OpOverload, args: tuple, kwargs: dict, tensors: list[torch.Tensor]) -> str | None:
    """"outer:<dim>" for a scan along a dimension with elements after it (a cumsum over the tokens of [tokens,
    experts]): CUDA runs it as ATen's outer-dimension scan, each thread one column stepping through the scanned
    dimension, so it takes as many dependent steps as that dimension is long (planner/trace/scan.py); None for the
    rest (an innermost scan is a parallel one, timed by its bytes)."""
    if func._schema.name.split("::")[-1] not in SCANS or not tensors:
        return None
    dim, shape = argument(func, args, kwargs, "dim"), tensors[0].shape
    if not isinstance(dim, int) or not shape:
        return None
    dim %= len(shape)
    return f"outer:{dim}" if math.prod(shape[dim + 1:]) > 1 else None


def _channels_last(t: torch.Tensor) -> bool:
    if t.dim() not in (4, 5) or t.layout != torch.strided:
        return False
    if not t.is_contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d):
        return False
    # both formats at once where the spatial sizes are 1 (a 1×1 kernel: most of ResNet-50's convolutions): its
    # strides still say which it was made as (channels_last gives the spatial dims the channels' count)
    return not t.is_contiguous() or tuple(t.stride()) != _contiguous_strides(tuple(t.shape))


CONVOLUTIONS = {"aten::convolution": 0, "aten::convolution_backward": 1}   # schema name → its input's argument


def gpu_layout(func: torch._ops.OpOverload, args: tuple, out: object) -> object:
    """`out` as the GPU lays it out where meta does not: meta's convolution returns a contiguous result whatever its
    images, where cuDNN keeps the channels-last layout its input or weight suggests (its output and input gradient
    are channels-last: `cudnn_conv_suggest_memory_format`). Without this the ops after a channels-last convolution
    (a residual add, the next convolution) see NCHW where the GPU sees NHWC: ConvNeXt's stages after the first,
    whose depthwise convolutions an H200 ran on cuDNN's NHWC kernels, traced as NCHW ones."""
    at = CONVOLUTIONS.get(func._schema.name)
    if at is None or not any(isinstance(t, torch.Tensor) and _channels_last(t) for t in args[at:at + 2]):
        return out
    if at == 0 and isinstance(out, torch.Tensor):
        return _as_channels_last(out)
    if at == 1 and isinstance(out, tuple) and isinstance(out[0], torch.Tensor):
        return (_as_channels_last(out[0]), *out[1:])
    return out


def _as_channels_last(t: torch.Tensor) -> torch.Tensor:
    """A meta tensor of t's shape and dtype laid out channels-last (meta holds no data to copy)."""
    if t.device.type != "meta" or t.dim() not in (4, 5):
        return t
    fmt = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
    return t if t.is_contiguous(memory_format=fmt) else torch.empty(t.shape, dtype=t.dtype, device=t.device,
                                                                    memory_format=fmt)


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def launches_of(func: torch._ops.OpOverload, args: tuple, kwargs: dict, flops: float | None, moved: int) -> int:
    if not moved and not flops:
        return 0
    if (rnn := rnn_call(func, args, kwargs)) is not None:
        return rnn_launches(rnn)
    base = func._schema.name.split("::")[-1]
    if base.startswith(("_foreach_", "_fused_", "_amp_foreach_")) and args and isinstance(args[0], (list, tuple)):
        return max(1, math.ceil(len(args[0]) / MULTI_TENSOR_CHUNK))
    return 1


class TraceRecorder(TorchDispatchMode):
    """Records the calls of the ops run under it into `calls` (set `phase` as the step goes) and counts memory."""

    def __init__(self, memory: LiveMemory, precision: str = "fp32") -> None:
        super().__init__()
        self.precision = precision   # TF32 convolutions run cuDNN's transposing kernels, fp32 ones not (workspace.py)
        self.calls: list[TracedCall] = []
        self.phase = "forward"
        self.memory = memory
        self.recording = True
        self.in_place = GpuInPlace(memory)   # what the GPU writes in place and meta does not (inplace.py)
        self.blas_threads: set[str] = set()   # the threads whose cuBLAS workspace is allocated (workspace.py)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        kwargs = kwargs or {}
        self.in_place.before()
        out = gpu_layout(func, args, func(*args, **kwargs))
        name = func._schema.name
        if name.startswith("profiler::"):
            return out
        category = PHASE_CATEGORY.get(self.phase, "other")
        self.in_place.after(name, self.phase, args, kwargs, out, category)
        result_storage(func, args, kwargs, out)   # the storage the CUDA kernel leaves the result on (kernels.py)
        for t in _tensors(out):
            self.memory.add(t, category)
        self.in_place.made(name, self.phase, out)
        for t in internal_temporaries(func, args, kwargs):  # allocated and freed inside the op on a GPU
            self.memory.add(t, category)
        if (thread := blas_thread(name, self.phase)) and thread not in self.blas_threads:
            self.blas_threads.add(thread)   # its handle's workspace, allocated at its first product and kept
            self.memory.hold(CUBLAS_WORKSPACE)
        if name in CONVOLUTIONS:   # cuDNN's workspaces, allocated and freed inside the call (workspace.py)
            layout = any(_channels_last(t) for t in _tensors((args, kwargs)))
            for plans in conv_workspaces(func, args, kwargs, out, self.precision, layout):
                self.memory.workspace(plans)
        self.memory.mark()
        if self.recording:
            read, written = count_bytes(func, args, kwargs, out)
            flops = count_flops(func, args, kwargs, out)
            tensors = _tensors((args, kwargs))
            variant = variant_of(func, args, kwargs, tensors)
            if flops and variant == "causal":
                flops /= 2  # a causal kernel skips the blocks above the diagonal, as FlashAttention counts it
            shapes = tuple(tuple(t.shape) for t in tensors[:MAX_SHAPES])
            self.calls.append(TracedCall(name, self.phase, compute_dtype(args, kwargs, out), shapes, flops, read,
                                         written, launches_of(func, args, kwargs, flops, read + written), variant))
        return out
