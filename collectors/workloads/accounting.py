"""What a step does, counted: FLOPs (FlopCounterMode) and an estimate of bytes moved.

The byte model is the traffic model of the seed analysis 002: every parameter, gradient,
optimizer-state and activation byte is counted twice per step (written once, read once):
params (read in forward, written by the update), gradients (written in backward, read by the
optimizer), AdamW's two moments (read and written), activations (saved in forward, read in
backward). Inference counts parameters read per forward pass and each op's output written and
read once. It is an estimate (caches and fusion change it), stated as such in the report.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

import collectors.core.conv_flops  # noqa: F401 - counts a grouped convolution's backward with its groups (torch does not)
import collectors.core.rnn_flops  # noqa: F401 - registers the FLOP formulas of cuDNN's and oneDNN's fused RNN kernels
from collectors.core.winograd_flops import WinogradFlopCounter
from collectors.workloads.training import Step
from gpuplan_schema.payloads import TrafficEstimate


def count_flops(step: Step) -> int:
    """FLOPs of one step, counted per aten op (matmuls, convolutions, attention)."""
    return count_step_flops(step)[0]


def count_step_flops(step: Step) -> tuple[int, int]:
    """(FLOPs of one step, those of them cuDNN can run as Winograd convolutions on CUDA cores), in one run of it
    (collectors/core/winograd_flops.py)."""
    counter, winograd = FlopCounterMode(display=False), WinogradFlopCounter()
    with counter, winograd:
        step.run()
    return int(counter.get_total_flops()), int(winograd.flops)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _storages(model: torch.nn.Module) -> set[int]:
    return {p.untyped_storage().data_ptr() for p in model.parameters()}


class _OutputBytes(TorchDispatchMode):
    """Sums the bytes of every op's outputs, except views of the parameters (a weight's `t()`)."""

    def __init__(self, params: set[int]) -> None:
        super().__init__()
        self.total, self.params = 0, params

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        out = func(*args, **(kwargs or {}))
        self.total += sum(_nbytes(t) for t in tree_leaves(out)
                          if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.params)
        return out


@dataclass
class _SavedBytes:
    """Bytes of the tensors autograd saves for backward; parameters are counted apart, not here."""

    params: set[int]
    total: int = 0

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        if t.untyped_storage().data_ptr() not in self.params:
            self.total += _nbytes(t)
        return t


def estimate_traffic(step: Step, model: torch.nn.Module, forward_passes: int = 1) -> TrafficEstimate:
    params = sum(_nbytes(p) for p in model.parameters())
    storages = _storages(model)
    if step.optimizer is None:
        outputs = _OutputBytes(storages)
        with outputs:
            step.run()
        return TrafficEstimate(params_bytes=params * forward_passes, grads_bytes=0, optimizer_bytes=0,
                               activations_bytes=2 * outputs.total)
    saved = _SavedBytes(storages)
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda t: t):
        step.run()
    state = sum(_nbytes(v) for s in step.optimizer.state.values() for v in s.values()
                if isinstance(v, torch.Tensor) and v.dim() > 0)
    grads = sum(_nbytes(p) for p in model.parameters() if p.requires_grad)
    return TrafficEstimate(params_bytes=2 * params, grads_bytes=2 * grads, optimizer_bytes=2 * state,
                           activations_bytes=2 * saved.total)
