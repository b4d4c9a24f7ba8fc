"""One timed step of a workload at a precision: forward, backward and AdamW (or inference).

Precisions: fp32 (TF32 off), tf32, fp16 (autocast + GradScaler), bf16 (autocast).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from collectors.core.allocator import EXPANDABLE, expandable_segments
from collectors.workloads import Workload
from gpuplan_schema.payloads.workloads import variant_settings

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
AUTOCAST = {"fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Variant:
    """Settings beside precision that change how a step runs. `default` is the plain run."""

    compile: bool = False
    channels_last: bool | None = None   # None: the workload's own choice
    cudnn_benchmark: bool = True
    expandable_segments: bool = False   # the allocator's (collectors/core/allocator.py); boundary probes only

    @property
    def name(self) -> str:
        parts = []
        if self.compile:
            parts.append("compile")
        if self.channels_last is not None:
            parts.append("channels_last" if self.channels_last else "contiguous")
        if not self.cudnn_benchmark:
            parts.append("no_cudnn_benchmark")
        if self.expandable_segments:
            parts.append(EXPANDABLE)
        return "+".join(parts) or "default"

    @classmethod
    def from_name(cls, name: str) -> Variant:
        """The settings a variant's name stands for: the inverse of `name` (a boundary probe's allocator part
        included). An unknown part is refused, never ignored."""
        settings = variant_settings(name)
        layout = {"channels_last": True, "contiguous": False}.get(settings.layout)
        return cls(compile=settings.compile, channels_last=layout, cudnn_benchmark=settings.cudnn_benchmark,
                   expandable_segments=settings.allocator == EXPANDABLE)


def precision_unsupported(precision: str, device: torch.device) -> str | None:
    if device.type == "cpu":
        return "TF32 is a GPU tensor-core mode" if precision == "tf32" else None
    major, minor = torch.cuda.get_device_capability(device)
    if precision in ("tf32", "bf16") and major < 8:
        return f"{precision} needs compute capability 8.0 or newer (this GPU is {major}.{minor})"
    return None


@contextlib.contextmanager
def precision_mode(precision: str, device: torch.device, variant: Variant) -> Iterator[None]:
    """TF32 switches, cudnn.benchmark and the allocator's segments for the block, restored afterwards."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    # PyTorch keeps one cuDNN plan per convolution and reuses it whatever cudnn.benchmark says: an
    # autotuned run after an untuned one of the same shapes would not autotune (and the reverse).
    # `allow_tf32` is part of that cache's key and changes nothing for bf16/fp16 convolutions, so the
    # autotuned half-precision runs set it to keep their own plans. fp32 and tf32 cannot be told apart
    # this way: their on/off comparison shares plans (the standard profile compares at bf16).
    torch.backends.cudnn.allow_tf32 = precision == "tf32" or (variant.cudnn_benchmark and precision in AUTOCAST)
    torch.backends.cudnn.benchmark = variant.cudnn_benchmark
    try:
        with expandable_segments(device, variant.expandable_segments):
            yield
    finally:
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
         torch.backends.cudnn.benchmark) = saved


def autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    if precision in AUTOCAST:
        return torch.autocast(device.type, dtype=AUTOCAST[precision])
    return contextlib.nullcontext()


def make_optimizer(params: Any, device: torch.device) -> torch.optim.Optimizer:
    """AdamW, fused where this torch and device have it (else the foreach implementation)."""
    try:
        return torch.optim.AdamW(params, lr=1e-4, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, lr=1e-4, foreach=device.type == "cuda")


@dataclass
class Step:
    """A ready-to-run step: its closure plus what the byte model needs to know."""

    run: Callable[[], None]
    optimizer: torch.optim.Optimizer | None
    inputs: Any
    targets: Any


def prepare_model(workload: Workload, device: torch.device, variant: Variant) -> torch.nn.Module:
    model = workload.model.to(device)
    if variant.channels_last is not None:
        fmt = torch.channels_last if variant.channels_last else torch.contiguous_format
        model = model.to(memory_format=fmt)
    model.train(workload.training)
    return torch.compile(model) if variant.compile else model


def build_step(workload: Workload, model: torch.nn.Module, precision: str, batch: int,
               device: torch.device, variant: Variant, optimizer: torch.optim.Optimizer | None = None) -> Step:
    """The step's closure; a training step makes its own optimizer unless given one over the same model's
    parameters (collectors/workloads/steady.py shares one among the steps it keeps side by side)."""
    forward = (lambda x: workload.run(model, x)) if workload.run else model
    inputs, targets = _batch(workload, batch, device, variant)
    if not workload.training:
        def infer() -> None:
            with torch.no_grad(), autocast(precision, device):
                forward(inputs)
        return Step(infer, None, inputs, targets)
    optimizer = optimizer if optimizer is not None else make_optimizer(model.parameters(), device)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    loss_fn = workload.loss
    assert loss_fn is not None

    def train_on(x: Any, y: Any) -> None:
        optimizer.zero_grad(set_to_none=True)
        with autocast(precision, device):
            loss = loss_fn(forward(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return Step(lambda: train_on(inputs, targets), optimizer, inputs, targets)


def _batch(workload: Workload, batch: int, device: torch.device, variant: Variant) -> tuple[Any, Any]:
    inputs, targets = workload.make_batch(batch, device)
    if variant.channels_last is False and isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
        inputs = inputs.contiguous()
    return inputs, targets
