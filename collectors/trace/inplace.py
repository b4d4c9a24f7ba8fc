"""The writes a GPU does in place where the meta device makes a new tensor: counted on one allocation.

ATen takes out-of-place paths for "subclass-like" tensors (ATen/TensorSubclassLikeUtils.h: a meta tensor, or any
tensor while a dispatch mode is on, as the trace's recorder is), for composite compliance, where a CUDA tensor is
written in place. The ops are the same and so is their time, but the memory is not: on meta the result is a second
block beside its input, on the GPU the input's block. Two kinds matter:

- backward formulas that make a zero tensor and accumulate into it (gather_backward: scatter_add; index_backward:
  index_put; index_select_backward: index_add; take_backward: put; masked_scatter_backward: masked_scatter).
  Transformer-XL's gather over its 267,735-wide log-softmax made a 20 GB second block at batch 96 (fp32);
- the autograd engine's sum of two gradients for one tensor (a residual's input, a tied weight: InputBuffer's
  accumulate), `old + new` on meta, `old.add_(new)` on the GPU when it holds the last reference to `old`. Whether it
  does is seen one op later: if `old` still lives then, the sum gets a block of its own.

On an H100, Transformer-XL fp32 at batch 96 (its measured boundary): the allocator held 78.9 GB and reserved 80.4 GB;
the trace held 78.8 GB, and its replayed allocator, the out-of-place blocks carving its cached 18.4 GiB logits
segments, reserved 97.6 GB.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from collectors.trace.memory import LiveMemory

ACCUMULATE_INTO_ZEROS = frozenset({"aten::scatter_add", "aten::index_put", "aten::index_add", "aten::put",
                                   "aten::masked_scatter"})
ZEROS = frozenset({"aten::zeros", "aten::new_zeros", "aten::zeros_like"})


@dataclass
class GpuInPlace:
    memory: LiveMemory
    zeros: set[int] = field(default_factory=set)   # the allocations of the zero tensors the backward made
    pending: tuple[int, int, weakref.ref, str] | None = None   # a gradient sum shared with `old`: (old's storage,
    #                                                            its allocation, the sum, its category)

    def before(self) -> None:
        """At the next op: a gradient sum whose `old` still lives was out of place on the GPU too."""
        if self.pending is None:
            return
        storage, allocation, result, category = self.pending
        self.pending = None
        out = result()
        if out is not None and self.memory.owner.get(storage) == allocation:
            self.memory.unshare(out, category)

    def after(self, name: str, phase: str, args: tuple, kwargs: dict, out: Any, category: str) -> None:
        """Count `out` on its input's block where the GPU writes it in place (before the recorder counts it)."""
        if phase != "backward" or not isinstance(out, torch.Tensor) or not args:
            return
        if name in ACCUMULATE_INTO_ZEROS and self.memory.allocation(args[0]) in self.zeros:
            self.memory.share(out, args[0])
        elif name == "aten::add" and _gradient_sum(args, kwargs, out):
            allocation = self.memory.allocation(args[0])
            if allocation is not None:
                self.memory.share(out, args[0])
                self.pending = (args[0].untyped_storage()._cdata, allocation, weakref.ref(out), category)

    def made(self, name: str, phase: str, out: Any) -> None:
        if phase == "backward" and name in ZEROS:
            self.zeros.add(self.memory.allocation(out))


def _gradient_sum(args: tuple, kwargs: dict, out: torch.Tensor) -> bool:
    """`old + new` as the engine sums two gradients: two dense tensors of the result's shape and dtype, alpha 1."""
    if len(args) < 2 or kwargs.get("alpha", 1) != 1 or (len(args) > 2 and args[2] != 1):
        return False
    old, new = args[0], args[1]
    return all(isinstance(t, torch.Tensor) and t.layout == torch.strided and t.shape == out.shape
               and t.dtype == out.dtype for t in (old, new)) and old.is_contiguous()
