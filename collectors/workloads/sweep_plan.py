"""What the workloads collector runs for one workload on this device (the sweep plan), and how it builds
the workload there; shared with the boundary's child process, the roofline and the DDP collectors."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from collectors.core import profiles
from collectors.workloads import BUILTIN, Workload, load_workload, workload_from_dict
from collectors.workloads.models import builtin
from collectors.workloads.training import Variant
from gpuplan_schema.payloads import CeilingsPayload
from gpuplan_schema.schema import DocumentError, load_document

# On a CPU, take the paths a GPU takes too: torch.compile's trials and the boundary searched in a process of its own
# (slow on a CPU: for testing those paths, as tests/test_stop.py does, not for measuring).
GPU_PATHS_ENV = "GPUPLAN_CPU_GPU_PATHS"


def gpu_paths(device: torch.device) -> bool:
    """Whether the GPU's paths run on this device: on a GPU, or on a CPU with GPUPLAN_CPU_GPU_PATHS=1."""
    return device.type == "cuda" or os.environ.get(GPU_PATHS_ENV) == "1"


@dataclass(frozen=True)
class SweepPlan:
    """What to run for one workload on this device."""

    profile: profiles.Profile
    start: int
    main_batch: int
    cap: int         # the timed sweep's last batch
    search_cap: int  # the boundary search's
    tiny: bool


def load_ceilings(folder: Path) -> CeilingsPayload | None:
    """This machine's ceilings, for achieved fractions; absent or unreadable means none."""
    try:
        return load_document(folder / "ceilings.json").payload
    except DocumentError:
        return None


def device_precisions(profile: profiles.Profile, device: torch.device) -> tuple[str, ...]:
    """The profile's precisions that this device runs (a CPU: fp32 and bf16)."""
    if device.type != "cpu":
        return profile.precisions
    return tuple(p for p in profile.precisions if p in profiles.CPU_PRECISIONS) or profile.precisions


def _on_cpu(wanted: tuple[str, ...], cpu: tuple[str, ...]) -> tuple[str, ...]:
    """A profile's precision list on a CPU: those it runs, else its first (bf16 for a GPU's tf32)."""
    return tuple(p for p in wanted if p in cpu) or (cpu[:1] if wanted else ())


def build_sweep_plan(name: str, workload: Workload, profile: profiles.Profile, device: torch.device) -> SweepPlan:
    if device.type == "cpu":
        main = profiles.CPU_MAIN_BATCH.get(name, workload.batch_start)
        cap = profiles.CPU_SWEEP_CAP.get(name, 2 * workload.batch_start)
        keep = device_precisions(profile, device)
        # the tiny sizes' caps bound a CPU sweep; a step-time limit would make it depend on the load
        cpu_profile = replace(profile, precisions=keep, timed_step_limit_s=math.inf,
                              sweep_precisions=_on_cpu(profile.sweep_precisions, keep),
                              boundary_precisions=_on_cpu(profile.boundary_precisions, keep))
        return SweepPlan(cpu_profile, min(workload.batch_start, main), main, cap, cap, tiny=True)
    main = profiles.MAIN_BATCH.get(name, workload.batch_start * 8)
    search_cap = profiles.SEARCH_CAP.get(name, main * profiles.DEFAULT_SEARCH_CAP_FACTOR)
    return SweepPlan(profile, workload.batch_start, main, max(main * profile.cap_factor, main), search_cap, tiny=False)


def instantiate(name: str, device: torch.device) -> Workload:
    if device.type == "cpu" and name in builtin.TINY:
        return workload_from_dict(builtin.TINY[name](), "built-in (tiny)")
    if name in BUILTIN:
        with device:  # initialise the weights where they will run: gpt-small's take seconds on a CPU
            return load_workload(name)
    return load_workload(name)


def has_convolution(workload: Workload) -> bool:
    return any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in workload.model.modules())


def untuned(workload: Workload) -> Variant:
    """The settings of sweeps and probes: without cuDNN autotuning where there is a convolution to tune
    (elsewhere the switch changes nothing, and the point keeps the name `default`)."""
    return Variant(cudnn_benchmark=False) if has_convolution(workload) else Variant()


def trial_variant(workload: Workload, precision: str, profile: profiles.Profile) -> Variant:
    """The main-batch point of a precision: the workload's own settings at the detail precisions."""
    if profile.autotune_everywhere or precision in profile.detail_precisions:
        return Variant()
    return untuned(workload)
