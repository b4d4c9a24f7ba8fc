"""Profile a few steps and give each recorded op call its measured time and kernels.

The steps run under torch.profiler and the OpRecorder (collectors/roofline/op_accounting.py), which wraps
every aten op call in a range `roofline#<index>`. On a GPU a call's time is the device time of
the kernels launched inside its range (CUPTI durations: the GPU's own clock, unaffected by the
recorder's Python overhead between ops); on a CPU it is the range's wall time. Kernels launched
outside any recorded call (rare: allocator memsets, autograd engine internals) are summed apart as
unattributed time, so nothing is silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile

from collectors.core.timing import synchronize
from collectors.roofline.op_accounting import ANNOTATION, OpCall, OpRecorder

PROFILE_STEPS = 3
US = 1e-6


@dataclass
class ProfiledSteps:
    calls: list[OpCall]
    steps: int
    timer: str                # "cuda": kernel time on the device; "cpu": op wall time
    unattributed_s: float     # device time per step in kernels outside any recorded call
    unmatched: int            # recorded calls the profiler has no range for


def profile_steps(run: Callable[[], None], device: torch.device, steps: int = PROFILE_STEPS) -> ProfiledSteps:
    """Run `run` `steps` times under the profiler and the recorder; attribute time to each call."""
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    recorder = OpRecorder()
    with profile(activities=activities) as prof:
        with recorder:
            for step in range(steps):
                recorder.step = step
                run()
        synchronize(device)  # every kernel done before the profiler stops collecting
    total_us = attribute(prof.events(), recorder.calls, cuda)
    if cuda and total_us == 0:
        raise RuntimeError("the profiler recorded no CUDA kernel (is CUPTI available to torch.profiler?)")
    attributed_us = sum(c.time_s for c in recorder.calls) / US
    unattributed = max(0.0, total_us - attributed_us) * US / steps if cuda else 0.0
    unmatched = sum(not c.matched for c in recorder.calls)
    return ProfiledSteps(recorder.calls, steps, "cuda" if cuda else "cpu", unattributed, unmatched)


def _own_kernels(evt: object) -> Iterator[tuple[str, float]]:
    """(name, µs) of the device activities linked to one CPU event. A profiler range's device-side
    span (a "gpu_user_annotation", named as the range, e.g. the optimizer's) is not a kernel and
    would count its kernels twice: leave it out. No kernel is named as the aten op that launches it."""
    for k in evt.kernels:
        if k.name != evt.name and not k.name.startswith(ANNOTATION):
            yield k.name, float(k.duration)


def kernels_below(evt: object) -> Iterator[tuple[str, float]]:
    yield from _own_kernels(evt)
    for child in evt.cpu_children:
        yield from kernels_below(child)


def attribute(events: list, calls: list[OpCall], cuda: bool) -> float:
    """Fill each call's time and kernels from its range; returns all kernel time seen (µs)."""
    total_us = 0.0
    for evt in events:
        if getattr(evt, "device_type", None) not in (None, torch.autograd.DeviceType.CPU):
            continue  # the kernels themselves: counted through the CPU events they are linked to
        if cuda:
            total_us += sum(us for _, us in _own_kernels(evt))
        if not evt.name.startswith(ANNOTATION):
            continue
        index = int(evt.name[len(ANNOTATION):])
        if index >= len(calls):
            continue
        call = calls[index]
        if cuda:
            kernels = list(kernels_below(evt))
            call.time_s = sum(us for _, us in kernels) * US
            call.kernels = tuple((name, us * US) for name, us in kernels)
        else:
            call.time_s = evt.cpu_time_total * US
        call.matched = True
    return total_us
