"""How much of a GPU ATen's per-channel batch-norm kernels keep busy (collectors/trace/batchnorm.py says which calls
run them).

In training, ATen's NCHW batch norm computes each channel's statistics in `batch_norm_collect_statistics_kernel` and
its gradient in the fused `batch_norm_backward_kernel`; both are launched with ONE block per channel
(`dim3 blocks(input.size(1))`, aten/src/ATen/native/cuda/Normalization.cuh) of 512 threads (`getNumThreads` of the
spatial size, threads (tf, 512 / tf)), and each block loops over its channel's N × H × W elements one per thread at
a time. So their time is set by the longest block's loop and by how many blocks the SMs run at once, not by the
card's bandwidth: unet-seg's 64-channel 256 × 256 maps are 64 blocks of 2 M elements on 132 SMs, and took the same
time on the H100 and the H200 (1.4 × its bandwidth).

`fill` is that share of the GPU: each SM holds RESIDENT blocks at once (Hopper's 2,048 threads an SM are 4 blocks of
512, where the kernel's registers allow it: 32 a thread; the profiles agree with 4, benchmarks/gpu_batchnorm_grid.py
measures it), C blocks run in ceil(C / slots) waves, and a thread whose spatial map is narrower than its row of
threads idles its spare lanes.
The part of an op that runs these kernels is its memory time at the copy roof divided by the fill: the statistics'
read of the input in the forward (the output's own kernel fills the GPU), all of the fused backward.

cuDNN's NCHW training kernels (`bn_fw_tr_1C11_kernel_NCHW`, `bn_bw_1C11_kernel_new`: an fp32 or fp16-autocast batch
norm) launch one block per channel too, one fused kernel a pass, all of their bytes per-channel (`CudnnPlane`;
planner/trace/training.py CUDNN_NCHW_BYTES says why by their elements).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BLOCK = 512          # MAX_BLOCK_SIZE: the threads of one per-channel block (CUDA; ROCm's is 256)
THREAD_ROWS = (32, 64, 128, 256, 512)   # getNumThreads: the x-extent for a spatial size
INT32_MAX = 2**31 - 1
THREADS_PER_SM = 2048   # Hopper's (and Ampere's) most resident threads an SM: the two reference GPUs'
RESIDENT = THREADS_PER_SM // BLOCK


@dataclass(frozen=True)
class PlaneGrid:
    """One per-channel kernel launch: C blocks over an (N, C, H × W) input."""

    channels: int
    batch: int
    spatial: int

    def fill(self, sms: int, resident: int = RESIDENT) -> float:
        """The share of the GPU's block slots and their lanes the launch keeps busy (0-1)."""
        tf = next((t for t in THREAD_ROWS if self.spatial <= t), BLOCK)
        ty = BLOCK // tf
        loops = math.ceil(self.batch / ty) * math.ceil(self.spatial / tf)
        lanes = self.batch * self.spatial / (loops * BLOCK)
        slots = max(1, sms * resident)
        return max(1e-3, lanes * self.channels / (math.ceil(self.channels / slots) * slots))


# The channels an SM of cuDNN's NCHW training kernels runs at full speed at once, by pass. Whatever the block's
# threads (cuDNN picks 512, 128 or 32 by the map: 512 from 4,096 pixels, 128 from 1,024, or a single-read kernel for
# the smallest batches x maps), the TF32 profiles' kernels took the same time per element of a channel and per
# ceil(C / (SMs x this)): on an H200 the forward 1.6-2.3 G elements/s an SM at 1 (ResNet-18, MobileNetV3, unet-seg,
# ResNeXt-101; SSD300 1.3-1.8), where 4 gave 0.5-1.8, the backward 0.54-0.72 at 2 (all five, every kernel but the
# single-read ones), where 1 gave 0.63-1.43 (results/*/roofline-*-tf32.json `kernels`; the held-out models' under
# results/h200/diagnostics). The H100's grid agrees (results/h100-80gb/diagnostics/batchnorm-grid-2026-11-28,
# 2^27 elements in fp32): the forward took the same 0.66-0.79 ms from 128 to 1,024 channels (1 a pass: the same
# elements x waves), the backward 1.19 ms at 256 channels against 1.77 at 128 and 0.97 from 512.
CUDNN_RESIDENT = {"forward": 1, "backward": 2}


@dataclass(frozen=True)
class CudnnPlane:
    """One launch of cuDNN's NCHW training kernels: one block per channel, `resident` channels an SM at full speed."""

    channels: int
    resident: int

    def fill(self, sms: int) -> float:
        """The share of the SMs' full-speed channel slots the launch keeps busy (0-1)."""
        slots = max(1, sms * self.resident)
        return max(1e-3, self.channels / (math.ceil(self.channels / slots) * slots))


def cudnn_plane_of(shapes: list[list[int]], backward: bool) -> CudnnPlane | None:
    """The launch of a cuDNN NCHW training batch norm from its input's shape (None: not an (N, C, ...) input, or a map
    of one pixel, timed by its bytes)."""
    x = _input(shapes, backward)
    if len(x) < 3 or math.prod(x[2:]) == 1:
        return None
    return CudnnPlane(x[1], CUDNN_RESIDENT["backward" if backward else "forward"])


def _input(shapes: list[list[int]], backward: bool) -> list[int]:
    """A native batch norm's input shape ((N, C, ...): a backward's is its second)."""
    return shapes[1 if backward else 0] if len(shapes) > (1 if backward else 0) else []


def rows_input(shapes: list[list[int]], backward: bool) -> bool:
    """Whether a native batch norm's input is 2-D (N, C): ATen runs it with its channels-last kernels
    (`batch_norm_choose_impl`), as an NHWC network's."""
    return 0 < len(_input(shapes, backward)) < 3


def plane_of(shapes: list[list[int]], backward: bool) -> PlaneGrid | None:
    """The launch of a native NCHW batch norm from its input's shape; None where ATen takes other kernels
    (`batch_norm_choose_impl`): a map of one pixel (the channel stride is 1: the channels-last kernels; timed within
    the per-channel kind by its bytes, as a profile lists both under one name: SSD300's last 1 x 1 maps) or 2^31
    elements or more (no 32-bit indices: TensorIterator's reductions)."""
    x = _input(shapes, backward)
    if len(x) < 3 or math.prod(x[2:]) == 1 or math.prod(x) > INT32_MAX:
        return None
    return PlaneGrid(x[1], x[0], math.prod(x[2:]))
