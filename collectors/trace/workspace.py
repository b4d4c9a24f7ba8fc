"""The workspace cuDNN allocates for a convolution it runs through transposes, which the meta device does not.

cuDNN's tensor-core kernels for a half-precision or TF32 convolution are NHWC ones: given NCHW tensors, it copies
them to NHWC (`nchwToNhwcKernel`), convolves and copies the result back (`nhwcToNchwKernel`), the NHWC copies in the
workspace PyTorch allocates through the caching allocator for the call and frees after it (aten/src/ATen/native/
cudnn/Conv_v8.cpp `run_conv_plan`). The per-op profiles show those kernels in every NCHW workload's half-precision
and TF32 convolutions (the conv rollout, sensor-cnn, SSD300, ViT) and in none of channels-last ResNet-50's, nor in
the conv rollout's fp32 ones (TF32 off: cuDNN's CUDA-core kernels read NCHW). The sizes the H100's allocator
recorded (results/h100-80gb/diagnostics/memory-history-2026-11-28 and -28b) are the two tensors' NHWC copies and
the weight's, over at most 2^31 elements a tensor at a time (a chunk of the batch):

- the conv rollout's 64->64 3x3 convolution, 128x128 images: 2 x 2^31 elements (2,048 of its images) + the
  weight, 8 GiB in fp16 and bf16, 16 GiB in TF32, at every batch from 2,048 to 17,117;
- sensor-cnn's 1-D 32->64 and 64->64 convolutions at 262,144 and 745,652 windows: 8 GiB and 6 GiB forward
  (input and output of 8,192 and 4,096 elements a window, 262,144 windows a chunk); backward 6 GiB and 8 GiB for
  the input's gradient (the output's gradient and the input's), the same again for the weight's.

cuBLAS takes a workspace too, once a thread: PyTorch allocates it through the caching allocator at a handle's first
product on its stream and keeps it (aten/src/ATen/cuda/CublasHandlePool.cpp `getNewWorkspace`, 4096 KiB x 8 on
sm90, 8 MiB + 128 KiB elsewhere); the forward and the optimizer run on the main thread, backward on the autograd
engine's, each with its own handle. They are most of the bytes the H100 allocated beyond the trace (mlp-stgan: 2 x 32
MiB + 1 MiB). Where they go matters too, but not as a step's first products place them: every step the collector
measures ran after another in its process (the sweep's points; the boundary search's probes after its first), which
made them, so they are replayed as allocated before the step, in segments of their own. A job's first step can do
worse: sensor-cnn on the H100 at its measured boundary, 745,652 windows, failed in a fresh process (memory-history-
2026-11-28b), where the main thread's 32 MiB went into the free tail of a cached 24.4 GB segment and the autograd
thread's beside it, the ReLU's 6.1 GB gradient took a new segment and the next 12.2 GB block found no room; replayed
so, the trace reproduces that to the byte (82.88 GB reserved, the same request), but then gpt-small's batch 32
reserves 41.8 GB where the H100's sweep measured 35.2 (its autograd workspace lands in a free logits segment).

A 1x1 stride-1 convolution over a 2-D map takes none: cuDNN runs it as GEMMs on the NCHW tensors as they are, no
copies (`_pointwise`, the same test planner/trace/training.py `pointwise` times it as a product by). A convolution
whose channels are not multiples of 8 is left out (cuDNN pads them for its tensor cores, and chose
differently by batch: the rollout's 3->64 convolution took 4.5 GiB at 2,048 and none at 17,117, sensor-cnn's
3->32 none forward and 5 GiB for its weight's gradient), as are grouped, transposed and 3-D ones (not seen).
How large a workspace a step can have is the allocator's business: capacity.py replays it as cuDNN takes it.
"""

from __future__ import annotations

from typing import Any

import torch

from collectors.trace.kernels import argument

CHUNK_ELEMENTS = 2**31   # a transposing plan's tensors hold at most this many elements at a time,
CHUNK_BYTES = 2**32      # and its fallback plans at most this many bytes (the same in half precision)
ALIGN = 8                # channels a tensor-core kernel takes unpadded
HALF = (torch.float16, torch.bfloat16)
CUBLAS_WORKSPACE = 4096 * 8 * 1024   # bytes, the H100's and H200's (sm90) default
CUBLAS_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::addmv",
                        "aten::mv", "aten::dot", "aten::vdot", "aten::_addmm_activation", "aten::_scaled_mm",
                        "aten::_int_mm"})


def blas_thread(name: str, phase: str) -> str | None:
    """The thread whose cuBLAS handle a product runs on (None: not a cuBLAS call): backward's autograd engine, or the
    main thread (the forward, the loss, the optimizer)."""
    if name not in CUBLAS_OPS:
        return None
    return "backward" if phase == "backward" else "main"


Plans = tuple[int, ...]   # the workspace of each plan cuDNN offers a call, in the order PyTorch tries them


def conv_workspaces(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: Any, precision: str,
                    channels_last: bool) -> list[Plans]:
    """The plans of each workspace the call's cuDNN kernels allocate in turn (none where it runs no transposes)."""
    name = func._schema.name
    if name not in ("aten::convolution", "aten::convolution_backward") or channels_last:
        return []
    if argument(func, args, kwargs, "transposed") or argument(func, args, kwargs, "groups") != 1:
        return []
    x, weight = argument(func, args, kwargs, "input"), argument(func, args, kwargs, "weight")
    if not _transposes(x, weight, precision) or _pointwise(func, args, kwargs, weight):
        return []
    if name == "aten::convolution":
        return [_plans(x, out, weight)]
    grad = argument(func, args, kwargs, "grad_output")
    mask = argument(func, args, kwargs, "output_mask")
    # the input's gradient (cudnn_convolution_backward_input: the output's gradient and the input's), then the
    # weight's (cudnn_convolution_backward_weight: the input and the output's gradient), each its own call
    return [_plans(grad, x, weight) for wanted in mask[:2] if wanted]


def _transposes(x: Any, weight: Any, precision: str) -> bool:
    """Whether cuDNN runs the convolution through NHWC copies: a 1-D or 2-D one on tensor cores whose channels are
    multiples of 8; a 3-D one (NCDHW) on tensor cores whatever its channels: every one of the ten shapes of
    results/h200/diagnostics/newex5-2026-11-28/conv3d-grid.json, 3 and 45 channels among them, ran nchwToNhwcKernel
    in and nhwcToNchwKernel out in bf16, forward and backward."""
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor) or x.dim() not in (3, 4, 5):
        return False
    tensor_cores = x.dtype in HALF or (x.dtype == torch.float32 and precision == "tf32")
    return tensor_cores and (x.dim() == 5 or weight.shape[0] % ALIGN == 0 and weight.shape[1] % ALIGN == 0)


def _pointwise(func: torch._ops.OpOverload, args: tuple, kwargs: dict, weight: torch.Tensor) -> bool:
    """A 1x1 convolution of stride 1 and no padding over a 2-D map (or a kernel-1 Conv1d, which cuDNN is given as
    a 2-D one of height 1): a matrix product per image that cuDNN runs on the
    NCHW tensors as they are, GEMM kernels with no NHWC copies (planner/trace/training.py `pointwise`, which times it
    so: 49 of the 54 directions of such convolutions in results/h200/diagnostics/conv-fp32-grid-2026-11-28 ran
    GEMM kernels and no transpose), so no workspace for copies."""
    stride, padding = argument(func, args, kwargs, "stride"), argument(func, args, kwargs, "padding")
    return weight.dim() in (3, 4) and all(k == 1 for k in weight.shape[2:]) and all(s == 1 for s in stride) \
        and all(p == 0 for p in padding)


def _plans(a: Any, b: Any, weight: torch.Tensor) -> Plans:
    """The workspaces of the plans tried in turn: two tensors' NHWC copies and the weight's over a chunk of the batch
    that keeps each tensor within CHUNK_ELEMENTS, then within CHUNK_BYTES, then a plan that transposes nothing."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or not a.shape[0]:
        return ()
    per_image = a.numel() // a.shape[0] + b.numel() // b.shape[0]
    largest = max(a.numel() // a.shape[0], b.numel() // b.shape[0], 1)
    chunks = (CHUNK_ELEMENTS // largest, CHUNK_BYTES // (largest * a.element_size()))
    return tuple((min(a.shape[0], max(1, c)) * per_image + weight.numel()) * a.element_size() for c in chunks)
