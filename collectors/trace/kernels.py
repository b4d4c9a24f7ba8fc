"""What a CUDA kernel allocates that the meta device's kernel for the same op does not.

On `meta` an op runs its meta function (or a Python decomposition registered as its meta kernel): it makes the
result and nothing else. Some CUDA kernels also allocate buffers of their own and free them before they return, or
leave their result on a storage larger than the result. Each rule below is PyTorch's own (the ATen source named), and
each was seen in the CUDA allocator's record of a boundary probe on an H100
(results/h100-80gb/diagnostics/memory-history-2026-11-28, benchmarks/gpu_memory_history.py):

- a reduced `mse_loss` or `smooth_l1_loss` (aten/src/ATen/native/Loss.cpp): the structured kernel's meta function
  builds a binary TensorIterator whose output, allocated at the inputs' broadcast shape, is then `resize_({})`d to a
  scalar. resize_ never shrinks a storage, so the 0-dim loss keeps a storage of the inputs' size for as long as the
  loss lives: to the end of the training step. Its implementation then writes the unreduced loss into a temporary
  (`Tensor loss`) and reduces it. PyTorch's meta kernel for both is the Python decomposition (torch/_decomp), whose
  scalar result has a 4-byte storage. mlp-stgan at 262,144 samples (fp32): the GPU held three 12,000 B-a-sample
  blocks at the loss, the model's output, the loss's storage (freed as `train_on` returned) and the temporary;
- training batch norm's statistics over a tensor that cannot use 32-bit index math (aten/src/ATen/native/cuda/
  Normalization.cu `batch_norm_choose_impl`: its largest element offset reaches INT32_MAX): the `General` path
  computes them with `var_mean_out`, whose reduction (ReduceOpsUtils.h `make_reduction`) reads the input as it is
  only where it has the statistics' dtype, or is fp16 on CUDA; a bf16 input is first copied to fp32 (`self.to`),
  a block twice the input's, freed when the statistics are done. fp16 and fp32 read theirs directly. cuDNN's batch
  norm, which has no such copy, takes no input of that size (Normalization.cpp: `input.numel() < INT32_MAX`), nor any
  bf16 one. The conv rollout in bf16 at 2,048 realizations (its instance norms are batch norms of a (1, N·64, 128,
  128) input, 2^31 elements): an 8.59 GB fp32 block inside each, where its fp16 and TF32 runs have none.
"""

from __future__ import annotations

from typing import Any

import torch

INT32_MAX = 2**31 - 1
# the structured losses whose meta function sizes the output as the broadcast inputs before resize_({})
RESIZED_LOSSES = frozenset({"aten::mse_loss", "aten::smooth_l1_loss"})
# training batch norms that reach CUDA's native kernel (batch_norm_cuda, _batch_norm_with_update_cuda)
BATCH_NORMS = frozenset({"aten::native_batch_norm", "aten::_native_batch_norm_legit",
                         "aten::_batch_norm_with_update"})
NO_REDUCTION = 0   # at::Reduction::None


def argument(func: torch._ops.OpOverload, args: tuple, kwargs: dict, name: str) -> Any:
    """An op's argument by its schema name (None where the call leaves it out)."""
    for i, arg in enumerate(func._schema.arguments):
        if arg.name == name:
            return args[i] if i < len(args) else kwargs.get(name, arg.default_value)
    return None


def result_storage(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: Any) -> None:
    """Grow `out`'s storage to what the CUDA kernel leaves it on (a reduced loss's: the inputs' broadcast size)."""
    if func._schema.name not in RESIZED_LOSSES or not isinstance(out, torch.Tensor) or out.device.type != "meta":
        return
    if argument(func, args, kwargs, "reduction") == NO_REDUCTION:
        return
    nbytes = torch.broadcast_shapes(args[0].shape, args[1].shape).numel() * out.element_size()
    storage = out.untyped_storage()
    if storage.nbytes() < nbytes:
        storage.resize_(nbytes)


def internal_temporaries(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The buffers the CUDA kernel allocates and frees before it returns, which the meta kernel does not (the module
    docstring): a reduced loss's unreduced loss, a bf16 batch norm's fp32 copy beyond 32-bit indexing."""
    name = func._schema.name
    if name in RESIZED_LOSSES and argument(func, args, kwargs, "reduction") != NO_REDUCTION:
        if name == "aten::smooth_l1_loss" and argument(func, args, kwargs, "beta") == 0:
            return []   # beta 0 runs l1_loss instead, composite: its temporaries are ops the trace sees
        shape = torch.broadcast_shapes(args[0].shape, args[1].shape)
        return [torch.empty(shape, dtype=torch.result_type(args[0], args[1]), device=args[0].device)]
    if name in BATCH_NORMS and _training(func, args, kwargs) and _upcast_statistics(args[0]):
        return [torch.empty(args[0].shape, dtype=torch.float32, device=args[0].device)]
    return []


def _training(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> bool:
    # _batch_norm_with_update has no `training`: it is the training batch norm
    return func._schema.name == "aten::_batch_norm_with_update" or bool(argument(func, args, kwargs, "training"))


def _upcast_statistics(x: Any) -> bool:
    """Whether CUDA's batch norm reads `x` through an fp32 copy: a bf16 input past 32-bit index math."""
    return isinstance(x, torch.Tensor) and x.dtype == torch.bfloat16 and not can_use_32bit_index_math(x)


def can_use_32bit_index_math(t: torch.Tensor) -> bool:
    """ATen's canUse32BitIndexMath (aten/src/ATen/native/IndexingUtils.cpp): every element's offset below
    INT32_MAX (an empty tensor: yes)."""
    if t.numel() == 0:
        return True
    offset = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True))
    return t.numel() < INT32_MAX and offset < INT32_MAX
