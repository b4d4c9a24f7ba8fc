"""How much of a GPU ATen's layer-norm forward keeps busy: one block per row, whatever the row's width.

`layer_norm_cuda` (aten/src/ATen/native/cuda/layer_norm_kernel.cu) flattens its input to M rows of the N normalised
elements and, where N is a multiple of 4 (and the buffers 4-element aligned: bf16, fp16, fp32), launches
`vectorized_layer_norm_kernel` with ONE block per row (`dim3 blocks(M)`) of `num_threads()` = 4 warps = 128 threads
(thread_constants.h), each thread reading aligned vectors of 4 elements (`vec_size`): the row's statistics and its
output in one kernel. A 768-wide row is 192 vectors, 1.5 per thread: its threads loop twice, 75 % of their lanes
busy; ViT-tiny's 192-wide rows are 48 vectors: one pass with 80 of the 128 threads idle. An idle thread still holds
its SM's thread slots (2,048 on Hopper: 16 blocks of 128), so the bytes in flight an SM keeps, and with them the
bandwidth the kernel draws, fall with the busy lanes: on the H100 the 192-wide rows ran 3.4-3.6x their bytes' time
at the copy roof, the 768-wide 1.4-1.5x, the 1,024-wide 1.2-1.3x (results/h100-80gb roofline profiles); against the
lane-filled roof one slowdown times the references' rows of 192 to 2,048 within 0.88-1.13x (Transformer-XL's 512-wide
rows at 0.73-0.78x). Where N is not a multiple of 4 ATen falls back to
`RowwiseMomentsCUDAKernel` and `LayerNormForwardCUDAKernel` (256 threads a row, one element each at a time).

`fill` is that share: the busy lanes of a block, times the share of the GPU's block slots its M blocks fill in
their waves (a row per block: a few rows, a decoder's one token, fill few of the slots). The backward is not so
modelled: its kernels (the per-row input gradient, the weights' gradient reduced down the columns) ran ViT-tiny's
192-wide rows at the large batch no slower per byte than the wide rows (2.1x against 2.4x on the H100).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.trace.plane import THREADS_PER_SM

VEC = 4              # vec_size: the elements a thread reads at once on the vectorised path
ROW_THREADS = 128    # num_threads() (C10_WARP_SIZE * 4): the vectorised kernel's threads a row (CUDA)
FALLBACK_THREADS = 256   # kCUDANumThreads: LayerNormForwardCUDAKernel's, where N is not a multiple of VEC


@dataclass(frozen=True)
class RowGrid:
    """One layer-norm forward launch: `rows` blocks, each over a row of `width` elements."""

    rows: int
    width: int

    def fill(self, sms: int) -> float:
        """The share of the GPU's thread slots the launch keeps busy (0-1): its blocks' busy lanes, in waves."""
        vectorized = self.width % VEC == 0
        per_thread, threads = (VEC, ROW_THREADS) if vectorized else (1, FALLBACK_THREADS)
        units = math.ceil(self.width / per_thread)
        lanes = units / (math.ceil(units / threads) * threads)
        slots = max(1, sms * (THREADS_PER_SM // threads))
        return max(1e-3, lanes * self.rows / (math.ceil(self.rows / slots) * slots))


def rows_of(shapes: list[list[int]]) -> RowGrid | None:
    """The launch of a layer norm from its shapes (input, weight, bias): the normalised size is the weight's (the
    trailing dimensions it covers), else the input's last dimension (no weight: normalised over the last one)."""
    if not shapes or not shapes[0]:
        return None
    x = shapes[0]
    weight = shapes[1] if len(shapes) > 1 else []
    normalized = weight if weight and len(weight) <= len(x) and list(x[-len(weight):]) == list(weight) else x[-1:]
    width = math.prod(normalized)
    return RowGrid(math.prod(x) // width, width) if width > 0 else None
