"""Host and device shares of one step: how long the host takes to issue it, how long the GPU is busy.

A step whose time hardly changes with the batch is set by the host issuing kernels, not by the GPU;
the planner needs both shares to carry a step from one machine to another.

- `host_issue`: CPU wall time from the step's start to the return of its Python call, the device
  idle and synchronised before and waited for after (so one step never queues behind another). When
  the step synchronises inside (an `.item()`, a GradScaler without a fused optimizer), the host waits
  for the GPU and this time approaches the step time: `count_syncs` says whether that happened.
- `gpu_busy`: total device time of the step's kernels, memory copies and sets, read from
  torch.profiler (CUPTI durations, the GPU's own clock), per step. None on a CPU: there is no device
  to be busy, and the CPU's op time is the step time itself, so no number is invented.
- `count_syncs`: synchronising CUDA calls seen in one step (torch.cuda's sync debug mode); None on a CPU.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile

from collectors.core.timing import synchronize
from gpuplan_schema.stats import Stat, summarize

HOST_SAMPLES = 5   # steps timed on the host after the timed loop (the brief's N >= 5)
BUSY_STEPS = 1     # steps under the profiler per point: one keeps the cost to a step and the profiler's start
NS = 1e-9


@dataclass(frozen=True)
class HostShare:
    host_issue_s: Stat
    gpu_busy_s: float | None
    step_syncs: int | None
    problem: str | None = None  # why gpu_busy_s or step_syncs is missing on a GPU


def measure_host_share(run: Callable[[], object], device: torch.device) -> HostShare:
    """All three figures for a warmed-up step (the caller has run it at least once). The profiler or the
    sync debug mode failing costs only its own figure, said in `problem`, never the point's timing."""
    issue = host_issue(run, device)
    problems = []
    busy = syncs = None
    try:
        busy = gpu_busy(run, device)
    except Exception as e:  # CUPTI unavailable or busy (another profiler): the timing stands without it
        problems.append(f"gpu_busy_s: {type(e).__name__}: {str(e)[:150]}")
    try:
        syncs = count_syncs(run, device)
    except Exception as e:
        problems.append(f"step_syncs: {type(e).__name__}: {str(e)[:150]}")
    return HostShare(issue, busy, syncs, "; ".join(problems) or None)


def host_issue(run: Callable[[], object], device: torch.device, samples: int = HOST_SAMPLES) -> Stat:
    """Seconds from the step's call to its return, without waiting for the device, over `samples` steps."""
    seconds = []
    for _ in range(samples):
        synchronize(device)  # an empty queue: the step's launches never wait behind an earlier step's
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
        synchronize(device)
    return summarize(seconds)


def gpu_busy(run: Callable[[], object], device: torch.device, steps: int = BUSY_STEPS) -> float | None:
    """Device seconds per step in kernels, copies and sets (their durations summed; overlapping streams
    would count twice, which the workloads here do not use). None on a CPU."""
    if device.type != "cuda":
        return None
    synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            run()
        synchronize(device)  # every kernel done before the profiler stops collecting
    total = device_seconds(prof)
    if total <= 0:
        raise RuntimeError("the profiler recorded no CUDA kernel (is CUPTI available to torch.profiler?)")
    return total / steps


def device_seconds(prof: profile) -> float:
    """Seconds of device activity in a finished profile."""
    return sum(e.duration_ns() for e in device_events(prof)) * NS


def device_events(prof: profile) -> list:
    """The device's activities in a finished profile. The raw kineto events are read (building the
    profiler's event tree costs ~0.5 s for a transformer step)."""
    return device_activities(prof.profiler.kineto_results.events())


def device_activities(events: Iterable) -> list:
    """Kernels, copies and sets: events on the CUDA device that are not a range's device-side span (a
    `gpu_user_annotation`, such as the optimizer's, covers its kernels and would count them twice)."""
    cuda = torch.autograd.DeviceType.CUDA
    return [e for e in events if e.device_type() == cuda and not is_annotation(e)]


def is_annotation(event: object) -> bool:
    """A range's span rather than device work. The kineto event's accessors differ between torch releases
    (2.11, on the GPU hosts, has no `activity_type`): each is asked only where it exists."""
    user = getattr(event, "is_user_annotation", None)
    if user is not None and user():
        return True
    kind = getattr(event, "activity_type", None)
    return kind is not None and "annotation" in str(kind())


def device_kernel_count(run: Callable[[], object], device: torch.device) -> int | None:
    """Device activities one call of `run` launches; None on a CPU."""
    if device.type != "cuda":
        return None
    synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
        synchronize(device)
    return len(device_events(prof))


def count_syncs(run: Callable[[], object], device: torch.device) -> int | None:
    """Synchronising CUDA calls in one step, as torch's sync debug mode reports them; None on a CPU."""
    if device.type != "cuda":
        return None
    synchronize(device)
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run()
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    synchronize(device)
    return sum("synchroniz" in str(w.message) for w in caught)
