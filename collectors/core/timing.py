"""Timing of a callable on a device: warm-up, CUDA events on a GPU, repeat until the spread is known.

Each sample times `iters` back-to-back calls so that one sample lasts well past the timer's
resolution and the launch overhead; samples are taken until their relative IQR is below
`target_rel_iqr` (with at least `min_samples`) or the time budget is spent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gpuplan_schema.stats import Stat, summarize


@dataclass(frozen=True)
class TimingPlan:
    warmup_s: float = 0.05
    sample_s: float = 0.005      # aim for each sample to last this long
    min_samples: int = 7
    max_samples: int = 40
    budget_s: float = 2.0        # stop sampling after this much wall time
    target_rel_iqr: float = 0.02


CPU_PLAN = TimingPlan(warmup_s=0.05, sample_s=0.02, min_samples=5, max_samples=20, budget_s=1.5)


class Timer:
    """Elapsed seconds of a region on `device`: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def start(self) -> object:
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def stop(self, started: object) -> float:
        if self.cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            end.synchronize()
            return started.elapsed_time(end) / 1e3  # type: ignore[attr-defined]
        return time.perf_counter() - started  # type: ignore[operator]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_callable(fn: Callable[[], object], device: torch.device, plan: TimingPlan) -> Stat:
    """Seconds per call of `fn`, summarised over samples of several calls each."""
    timer = Timer(device)
    iters = _calibrate(fn, device, plan, timer)
    samples: list[float] = []
    deadline = time.perf_counter() + plan.budget_s
    while len(samples) < plan.max_samples:
        started = timer.start()
        for _ in range(iters):
            fn()
        samples.append(timer.stop(started) / iters)
        if len(samples) >= plan.min_samples:
            if summarize(samples).rel_iqr <= plan.target_rel_iqr or time.perf_counter() > deadline:
                break
    return summarize(samples)


def _calibrate(fn: Callable[[], object], device: torch.device, plan: TimingPlan, timer: Timer) -> int:
    """Warm up for `warmup_s` (at least twice) and return calls per sample to last `sample_s`."""
    synchronize(device)
    end = time.perf_counter() + plan.warmup_s
    calls, per_call = 0, 0.0
    while calls < 2 or time.perf_counter() < end:
        started = timer.start()
        fn()
        per_call = timer.stop(started)
        calls += 1
    return max(1, min(10_000, round(plan.sample_s / max(per_call, 1e-9))))
