"""The workloads collector's step (collectors/workloads/training.py), run on the meta device.

Forward and loss under the GPU's autocast (collectors/trace/autocast.py), backward, and the optimizer as a GPU runs
it: AdamW fused (`_fused_adamw_` over every parameter, its step counters advanced by `_foreach_add_`, as
torch.optim.AdamW(fused=True) does on CUDA; meta tensors are not a device that optimizer accepts, so its kernels
are called here as it calls them). fp16 adds GradScaler's ops: the loss scaled, the gradients checked for
infinities (`_amp_foreach_non_finite_check_and_unscale_`), the scale updated. An inference workload runs its forward
under no_grad.

Two steps run: the first makes what a training job keeps between steps (the optimizer's state), the second is
recorded, with its memory counted from what the first left live, as the collector times a step after warm-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from collectors.trace.autocast import GpuOnMeta
from collectors.trace.memory import LiveMemory
from collectors.trace.recorder import TracedCall, TraceRecorder
from collectors.workloads import Workload

META = torch.device("meta")
LR, BETAS, WEIGHT_DECAY, EPS = 1e-4, (0.9, 0.999), 0.01, 1e-8   # torch.optim.AdamW(lr=1e-4)'s, as the collector's


@dataclass
class AdamWState:
    """What torch.optim.AdamW keeps per parameter: two moments and a step counter (a device tensor when fused)."""

    params: list[torch.Tensor]
    exp_avgs: list[torch.Tensor] = field(default_factory=list)
    exp_avg_sqs: list[torch.Tensor] = field(default_factory=list)
    steps: list[torch.Tensor] = field(default_factory=list)

    def step(self, grad_scale: torch.Tensor | None = None, found_inf: torch.Tensor | None = None) -> None:
        with_grad = [p for p in self.params if p.grad is not None]
        if not with_grad:
            return
        if not self.exp_avgs:  # lazily, in the first step, as torch does: parameter by parameter (_init_group)
            for p in with_grad:
                self.steps.append(torch.zeros((), dtype=torch.float32, device=p.device))
                self.exp_avgs.append(torch.zeros_like(p, memory_format=torch.preserve_format))
                self.exp_avg_sqs.append(torch.zeros_like(p, memory_format=torch.preserve_format))
        torch._foreach_add_(self.steps, 1)
        torch._fused_adamw_(with_grad, [p.grad for p in with_grad], self.exp_avgs, self.exp_avg_sqs, [], self.steps,
                            lr=LR, beta1=BETAS[0], beta2=BETAS[1], weight_decay=WEIGHT_DECAY, eps=EPS, amsgrad=False,
                            maximize=False, grad_scale=grad_scale, found_inf=found_inf)


@dataclass
class TracedStep:
    calls: list[TracedCall]
    memory: LiveMemory
    module_calls: int = 0   # nn.Module forward calls in the recorded step: each costs the host Python time


class ModuleCounter:
    """Counts every nn.Module call while it is on (a global forward pre-hook, removed on exit)."""

    def __init__(self) -> None:
        self.calls = 0
        self.on = False

    def __enter__(self) -> ModuleCounter:
        self.handle = torch.nn.modules.module.register_module_forward_pre_hook(self._count)
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.remove()

    def _count(self, module: torch.nn.Module, args: object) -> None:
        self.calls += self.on


def _loss(workload: Workload, inputs: Any, targets: Any, precision: str) -> torch.Tensor:
    with GpuOnMeta(precision):
        loss_fn = workload.loss
        assert loss_fn is not None
        return loss_fn(workload.forward(inputs), targets)


def train_step(workload: Workload, inputs: Any, targets: Any, precision: str, optimizer: AdamWState,
               recorder: TraceRecorder) -> None:
    for p in optimizer.params:
        p.grad = None  # zero_grad(set_to_none=True)
    recorder.phase = "forward"
    loss = _loss(workload, inputs, targets, precision)
    recorder.phase = "backward"
    if precision == "fp16":
        scale = torch.full((), 65536.0, dtype=torch.float32, device=loss.device)
        (loss * scale).backward()
        recorder.phase = "optimizer"
        found_inf = torch.zeros((), dtype=torch.float32, device=loss.device)
        grads = [p.grad for p in optimizer.params if p.grad is not None]
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, torch.ones_like(scale))
        optimizer.step(scale, found_inf)
        torch._amp_update_scale_(scale, torch.zeros((), dtype=torch.int32, device=loss.device), found_inf,
                                 2.0, 0.5, 2000)
    else:
        loss.backward()
        recorder.phase = "optimizer"
        optimizer.step()


def infer_step(workload: Workload, inputs: Any, precision: str, recorder: TraceRecorder) -> None:
    recorder.phase = "forward"
    with torch.no_grad(), GpuOnMeta(precision):
        workload.forward(inputs)


def trace_step(workload: Workload, precision: str, batch: int) -> TracedStep:
    """The second of two steps of `workload` at `precision` and `batch` on the meta device, recorded."""
    model = workload.model
    model.train(workload.training)
    memory = LiveMemory()
    params = [p for p in model.parameters() if p.requires_grad] if workload.training else []
    memory.adopt(list(model.parameters()), "parameters")
    memory.adopt(list(model.buffers()), "parameters")
    inputs, targets = workload.make_batch(batch, META)
    memory.adopt((inputs, targets), "inputs")
    optimizer = AdamWState(params)
    recorder = TraceRecorder(memory, precision)
    run: Callable[[], None] = (lambda: train_step(workload, inputs, targets, precision, optimizer, recorder)) \
        if workload.training else (lambda: infer_step(workload, inputs, precision, recorder))
    with recorder, ModuleCounter() as modules:
        recorder.recording = False
        run()
        memory.adopt(optimizer.exp_avgs + optimizer.exp_avg_sqs + optimizer.steps, "optimizer")
        memory.reset_peak()
        recorder.recording = modules.on = True
        run()
    for p in params:
        p.grad = None
    return TracedStep(recorder.calls, memory, modules.calls)
