"""Measuring workload points (the out-of-memory boundary's probes are in collectors/workloads/boundary.py).

Every point builds its step afresh and frees it afterwards, so one point's memory never leaks
into the next; an out-of-memory error is recorded as the point's status and never ends the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import torch

from collectors.core.device import error_line, free_memory, is_oom
from collectors.core.host_time import measure_host_share
from collectors.core.nvml_sampler import NvmlSampler
from collectors.core.time_limit import PointTimeout, hard_limit, soft_limit
from collectors.core.timing import TimingPlan, time_callable
from collectors.workloads import Workload
from collectors.workloads.accounting import count_step_flops, estimate_traffic
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model
from gpuplan_schema.payloads import CeilingsPayload, MemoryUse, OomBoundary, WorkloadPoint
from gpuplan_schema.payloads.workloads import point_key
from gpuplan_schema.stats import Stat

# The trials at the main batch (precision table, variants, repeat) get the longer plan; the points
# of a sweep, which only draw a curve, a shorter one (the standard profile has a 5-minute budget).
GPU_STEP_PLAN = TimingPlan(warmup_s=0.3, sample_s=0.03, min_samples=7, max_samples=15, budget_s=1.5,
                           target_rel_iqr=0.01)
GPU_SWEEP_PLAN = TimingPlan(warmup_s=0.1, sample_s=0.03, min_samples=5, max_samples=9, budget_s=0.5,
                            target_rel_iqr=0.02)
CPU_STEP_PLAN = TimingPlan(warmup_s=0.05, sample_s=0.02, min_samples=3, max_samples=5, budget_s=0.5)
SWEEPS = ("batch", "sequence")
DEFAULT_VARIANT = Variant()


@dataclass
class Context:
    device: torch.device
    ceilings: CeilingsPayload | None = None
    # (FLOPs, Winograd-eligible FLOPs) of a step, by (workload, batch, sequence)
    flops_cache: dict[tuple[str, int, int | None], tuple[float, float]] = field(default_factory=dict)
    # Points an earlier, interrupted or smaller collection of this workload already measured, by
    # configuration: a resumed run takes them instead of measuring again (see workload_collector).
    earlier: dict[tuple, WorkloadPoint] = field(default_factory=dict)
    earlier_boundaries: dict[tuple[str, str], OomBoundary] = field(default_factory=dict)  # by (precision, allocator)
    reused: int = 0
    done: dict[tuple, WorkloadPoint] = field(default_factory=dict)  # measured (or reused) by this run, by configuration
    point_timeout_s: float | None = None  # a point still running after this is an error (collectors/core/time_limit.py)
    knee: int | None = None  # the current workload's batch-sweep knee, once swept: its trials are timed there too

    def recall(self, base: dict) -> WorkloadPoint | None:
        """The point an earlier run measured for this configuration; never a failed one (status error, a time
        limit included): that is measured again, so that a fixed workload or a passing fault does not stay."""
        key = point_key(**base)
        if key in self.done:
            return self.done[key]
        found = self.earlier.get(key)
        if found is not None and found.status == "error":
            return None
        self.reused += found is not None
        return found

    def plan(self, sweep: str) -> TimingPlan:
        if self.device.type != "cuda":
            return CPU_STEP_PLAN
        return GPU_SWEEP_PLAN if sweep in SWEEPS else GPU_STEP_PLAN


def measure_point(workload: Workload, precision: str, batch: int, ctx: Context, sweep: str = "batch",
                  variant: Variant = DEFAULT_VARIANT, seq_len: int | None = None) -> WorkloadPoint:
    """Time one configuration; OOM and errors become the point's status."""
    base = dict(sweep=sweep, precision=precision, batch=batch, variant=variant.name, seq_len=seq_len)
    if (earlier := ctx.recall(base)) is not None:
        return earlier
    started = time.perf_counter()
    with hard_limit(ctx.point_timeout_s, describe_point(workload.name, base)):
        free_memory(ctx.device)
        try:
            with soft_limit(ctx.point_timeout_s), precision_mode(precision, ctx.device, variant):
                point = _measure(workload, precision, batch, ctx, variant, base)
        except (Exception, PointTimeout) as e:  # a user's step may raise anything: record it, go on
            point = WorkloadPoint(status="oom" if is_oom(e) else "error", reason=error_line(e), **base)
        finally:
            free_memory(ctx.device)
    return replace(point, wall_s=time.perf_counter() - started)


def describe_point(name: str, base: dict) -> str:
    seq = f", sequence {base['seq_len']}" if base.get("seq_len") else ""
    return f"{name} {base['precision']} batch {base['batch']}{seq} ({base['sweep']}, {base['variant']})"


def _measure(workload: Workload, precision: str, batch: int, ctx: Context, variant: Variant,
             base: dict) -> WorkloadPoint:
    started = time.perf_counter()
    model = prepare_model(workload, ctx.device, variant)
    step = build_step(workload, model, precision, batch, ctx.device, variant)
    step.run()  # first step: allocations, optimizer state, cudnn autotuning, compilation
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)
    # cudnn.benchmark's autotuning is paid here: 19 s for resnet50 bf16 at batch 256 and 68 s for
    # fp32 at 256 on an H100, for no gain in fp32 (.diag run, 2026-11-22); users should see it.
    first_step_s = time.perf_counter() - started
    compile_s = first_step_s if variant.compile else None
    with NvmlSampler(ctx.device.index if ctx.device.type == "cuda" else None) as sampler:
        seconds = time_callable(step.run, ctx.device, ctx.plan(base["sweep"]))
    memory = _memory_use(ctx.device, sampler.max_used)
    share = measure_host_share(step.run, ctx.device)  # after the timed loop: never inside its samples
    key = (workload.name, batch, base["seq_len"])
    if key not in ctx.flops_cache and not variant.compile:  # FLOPs depend on shapes, not on precision
        ctx.flops_cache[key] = tuple(float(f) for f in count_step_flops(step))  # type: ignore[assignment]
    flops, winograd = ctx.flops_cache.get(key, (None, None))
    traffic = estimate_traffic(step, workload.model) if not variant.compile else None
    del step, model
    tokens = (workload.tokens_per_sample if base["seq_len"] is None else base["seq_len"])
    return WorkloadPoint(
        status="ok", step_s=seconds, throughput_per_s=batch / seconds.median,
        tokens_per_s=batch * tokens / seconds.median if tokens else None,
        memory=memory, flops_per_step=flops, winograd_flops_per_step=winograd, traffic=traffic,
        achieved_flops_fraction=_fraction(flops, seconds, _flops_ceiling(ctx, precision)),
        achieved_bytes_fraction=_fraction(traffic.total_bytes if traffic else None, seconds, _bw_ceiling(ctx)),
        device_samples=sampler.result(), compile_s=compile_s, first_step_s=first_step_s,
        host_issue_s=share.host_issue_s, gpu_busy_s=share.gpu_busy_s, step_syncs=share.step_syncs,
        host_share_problem=share.problem, **base)


def _memory_use(device: torch.device, nvml_used: int | None) -> MemoryUse | None:
    if device.type != "cuda":
        return None
    return MemoryUse(peak_allocated_bytes=torch.cuda.max_memory_allocated(device),
                     peak_reserved_bytes=torch.cuda.max_memory_reserved(device), device_used_bytes=nvml_used)


def _flops_ceiling(ctx: Context, precision: str) -> float | None:
    if ctx.ceilings is None:
        return None
    for m in ctx.ceilings.matmul:
        if m.dtype == precision and m.flops_per_s:
            return m.flops_per_s.median
    return None


def _bw_ceiling(ctx: Context) -> float | None:
    if ctx.ceilings is None:
        return None
    copy = next((b for b in ctx.ceilings.memory if b.name == "copy" and b.bytes_per_s), None)
    return copy.bytes_per_s.median if copy else None


def _fraction(amount: float | None, seconds: Stat, ceiling: float | None) -> float | None:
    if amount is None or not ceiling:
        return None
    return amount / seconds.median / ceiling
