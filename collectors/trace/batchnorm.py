"""Which kernels a GPU runs a traced batch norm with: cuDNN's, or ATen's own NCHW kernels that give each channel one
thread block (the meta device always takes ATen's `native_batch_norm`, so the trace has to decide as CUDA would).

PyTorch 2.x picks the backend in `_select_batch_norm_backend` (aten/src/ATen/native/Normalization.cpp): cuDNN where
the input and the weight are not bf16, an fp16 input has an fp32 weight, the weight and bias are defined, the
running statistics are both given (or both absent in training), the input has at least 3 dimensions, the batch is
at most 880,801 in training (65,535 in eval), the input has fewer than 2^31 elements and cuDNN is enabled. Anything
else runs `native_batch_norm`: under bf16 autocast every batch norm (a convolution's bf16 output, fp32 weights), an
fp16 model's (fp16 weights), an InstanceNorm (no weight: `instance_norm` calls batch norm over (1, N·C, H, W)).

ATen's CUDA implementation (aten/src/ATen/native/cuda/Normalization.cu, `batch_norm_choose_impl`) takes its NCHW
kernels for a contiguous input whose channel stride is not 1 and that 32-bit indices can address; a channels-last or
2-D input runs the channels-last kernels (a grid over channels and rows that fills the GPU), anything else
TensorIterator's. The NCHW kernels that matter (Normalization.cuh): in training, `batch_norm_collect_statistics_kernel`
(launched by `batch_norm_stats_cuda_template` with `dim3 blocks(input.size(1))`) and the fused backward
`batch_norm_backward_kernel` (`batch_norm_backward_cuda_template`, `dim3 blocks(input.size(1))`) run ONE block of
512 threads per channel, each looping over all N × H × W of its channel; the output's
`batch_norm_transform_input_kernel` has a grid of (C, up to N) blocks and fills the GPU. planner/trace/plane.py times
those per-channel kernels by how many of the SMs' block slots their C blocks fill; the channels-last ones (an NHWC
network's, a 2-D input's) are a kind of their own (planner/trace/kinds.py CHANNELS_LAST).
"""

from __future__ import annotations

from typing import Any

import torch

from collectors.roofline.op_accounting import named_arguments

NATIVE = "native"   # TracedOp.variant of a batch norm that runs ATen's kernels (per-channel NCHW or channels-last)
INT32_MAX = 2**31 - 1
TRAIN_BATCH_MAX, EVAL_BATCH_MAX = 880801, 65535
FORWARD = frozenset({"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional"})
BACKWARD = "native_batch_norm_backward"


def cudnn_takes(x: torch.Tensor, weight: Any, bias: Any, running_mean: Any, running_var: Any, training: bool) -> bool:
    """`_select_batch_norm_backend`'s test for cuDNN (its epsilon floor left out: cuDNN 8 and later have none)."""
    tensor = torch.Tensor
    if not (isinstance(weight, tensor) and isinstance(bias, tensor)):
        return False
    if x.dtype == torch.bfloat16 or weight.dtype == torch.bfloat16:
        return False
    if x.dtype == torch.float16 and weight.dtype != torch.float32:
        return False
    stats = (isinstance(running_mean, tensor), isinstance(running_var, tensor))
    if not (all(stats) or (not any(stats) and training)):
        return False
    batch_max = TRAIN_BATCH_MAX if training else EVAL_BATCH_MAX
    return x.dim() >= 3 and x.shape[0] <= batch_max and x.numel() < INT32_MAX and torch.backends.cudnn.enabled


def batch_norm_variant(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> str | None:
    """NATIVE for a training batch norm, forward or backward, that a GPU runs with ATen's kernels, not cuDNN's (which
    of them, the per-channel NCHW ones or the channels-last ones, is the planner's to say from the layout and the
    shapes: the meta device does not keep a channels-last layout through every op); None for the rest (cuDNN's, an
    eval-mode forward whose only kernel fills the GPU)."""
    name = func._schema.name.split("::")[-1]
    if name not in FORWARD and name != BACKWARD:
        return None
    arg = named_arguments(func, args, kwargs).get
    x, weight, running_mean, running_var = arg("input"), arg("weight"), arg("running_mean"), arg("running_var")
    if name in FORWARD:
        training, bias = bool(arg("training")), arg("bias")
        if not training:
            return None
    else:
        # the fused per-channel kernel runs where the input's gradient and a reduction are wanted; the backward has
        # no bias argument, and the forward's choice needed one: an affine batch norm has both
        training, mask, bias = bool(arg("train")), arg("output_mask") or (True, True, True), weight
        if not (mask[0] and (training or mask[1] or mask[2])):
            return None
    if not isinstance(x, torch.Tensor) or cudnn_takes(x, weight, bias, running_mean, running_var, training):
        return None
    return NATIVE
