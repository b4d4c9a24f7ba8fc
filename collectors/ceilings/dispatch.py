"""Dispatch speed of this host: how long PyTorch takes to issue small ops, measured on the host's clock.

The ceilings' launch latency is the device's view (CUDA events around a queue of launches: the GPU's
time per tiny kernel). A step of small kernels is often set by the host instead, and hosts of the
same GPU differ; this micro-benchmark times the issuing itself, without synchronising:

- OPS_PER_SAMPLE tiny `torch.add(a, b, out=c)` on 256-element device tensors, one sample per batch of
  calls, the device drained before each sample so that the launch queue never fills;
- a small nn.Linear (256 -> 256, batch 32) forward, loss and backward, per step, and the device
  kernels one such step launches (profiler), for the host's cost per kernel of a real autograd step.

Under a second on an H100 host or this CPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch

from collectors.core.host_time import device_kernel_count
from collectors.core.timing import synchronize
from gpuplan_schema.payloads import DispatchCeiling
from gpuplan_schema.stats import Stat, summarize

OPS_PER_SAMPLE = 200
SAMPLES = 15
WARMUP = 3
TENSOR_ELEMENTS, LINEAR_WIDTH, LINEAR_BATCH = 256, 256, 32


def measure_dispatch(device: torch.device, cpu_model: str | None) -> DispatchCeiling:
    a, b, c = (torch.ones(TENSOR_ELEMENTS, device=device) for _ in range(3))

    def adds() -> None:
        for _ in range(OPS_PER_SAMPLE):
            torch.add(a, b, out=c)

    op_issue = host_seconds(adds, device).scaled(1 / OPS_PER_SAMPLE)
    linear_step = linear_step_fn(device)
    step_issue = host_seconds(linear_step, device)
    return DispatchCeiling(op_issue_s=op_issue, linear_step_issue_s=step_issue, ops_per_sample=OPS_PER_SAMPLE,
                           linear_step_kernels=device_kernel_count(linear_step, device), cpu_model=cpu_model,
                           cpu_mhz=cpu_mhz(), cpu_max_mhz=cpu_max_mhz())


def linear_step_fn(device: torch.device) -> Callable[[], None]:
    layer = torch.nn.Linear(LINEAR_WIDTH, LINEAR_WIDTH, device=device)
    x = torch.randn(LINEAR_BATCH, LINEAR_WIDTH, device=device)

    def step() -> None:
        layer.zero_grad(set_to_none=True)
        layer(x).square().mean().backward()
    return step


def host_seconds(fn: Callable[[], None], device: torch.device, samples: int = SAMPLES) -> Stat:
    """Host wall seconds per call of `fn`, the device drained before each and waited for after."""
    for _ in range(WARMUP):
        fn()
    seconds = []
    for _ in range(samples):
        synchronize(device)
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    synchronize(device)
    return summarize(seconds)


def cpu_mhz() -> float | None:
    """The first core's clock as /proc/cpuinfo says it (a guest may report its host's nominal clock)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "cpu MHz":
                return float(value)
    except (OSError, ValueError):
        return None
    return None


def cpu_max_mhz() -> float | None:
    try:
        khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text().strip()
        return int(khz) / 1e3
    except (OSError, ValueError):
        return None
