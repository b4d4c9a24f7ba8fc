"""`workloads` collector: batch and sequence scaling to the out-of-memory boundary, precision and
variant trials, FLOP and byte accounting; one document per workload."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from collectors import profiles
from collectors.machine import sanitize_machine_id
from collectors.payloads import CeilingsPayload, OomBoundary, WorkloadPayload, WorkloadPoint
from collectors.progress import Progress
from collectors.schema import DocumentError, load_document
from collectors.sweep import Context, bisect_boundary, measure_point
from collectors.training import PRECISIONS, Variant, precision_unsupported
from collectors.workloads import BUILTIN, Workload, builtin, load_workload, workload_from_dict

NAME, VERSION = "workloads", "1"


@dataclass(frozen=True)
class Plan:
    """What to run for one workload on this device."""

    profile: profiles.Profile
    start: int
    main_batch: int
    cap: int
    precisions: tuple[str, ...]
    tiny: bool


def load_ceilings(folder: Path) -> CeilingsPayload | None:
    """This machine's ceilings, for achieved fractions; absent or unreadable means none."""
    try:
        return load_document(folder / "ceilings.json").payload
    except DocumentError:
        return None


def build_plan(name: str, workload: Workload, profile: profiles.Profile, device: torch.device) -> Plan:
    if device.type == "cpu":
        main = profiles.CPU_MAIN_BATCH.get(name, workload.batch_start)
        cap = profiles.CPU_SWEEP_CAP.get(name, 2 * workload.batch_start)
        sweep = tuple(p for p in profile.sweep_precisions if p in profiles.CPU_PRECISIONS)
        return Plan(replace(profile, sweep_precisions=sweep), min(workload.batch_start, main), main, cap,
                    sweep or profile.detail_precisions, tiny=True)
    main = profiles.MAIN_BATCH.get(name, workload.batch_start * 8)
    cap = min(profiles.SWEEP_CAP.get(name, main * profile.cap_factor), main * profile.cap_factor)
    return Plan(profile, workload.batch_start, main, max(cap, main),
                profile.sweep_precisions or profile.detail_precisions, tiny=False)


def instantiate(name: str, tiny: bool) -> Workload:
    if tiny and name in builtin.TINY:
        return workload_from_dict(builtin.TINY[name](), "built-in (tiny)")
    return load_workload(name)


def iter_batch_sweep(workload: Workload, precision: str, plan: Plan, ctx: Context,
                     progress: Progress) -> Iterator[WorkloadPoint | OomBoundary]:
    """Double from the workload's first batch until OOM or the cap, then bisect the boundary."""
    batch, largest_ok, point = plan.start, None, None
    while batch <= plan.cap:
        point = measure_point(workload, precision, batch, ctx)
        progress.note(f"{workload.name} {precision} batch {batch}: {point.status}")
        yield point
        if point.status != "ok":
            break
        largest_ok, batch = batch, batch * 2
    if not plan.profile.boundary or point is None:
        return
    if largest_ok is None:
        yield OomBoundary(precision, "error" if point.status == "error" else "oom", reason=point.reason)
    elif batch > plan.cap:
        yield OomBoundary(precision, "ok", max_batch=largest_ok, capped=True,
                          reason=f"no OOM up to the profile's cap of {plan.cap}")
    elif point.status == "oom":
        yield bisect_boundary(workload, precision, largest_ok, batch, ctx.device)
    else:
        yield OomBoundary(precision, "error", max_batch=largest_ok, reason=point.reason)


def iter_detail(name: str, workload: Workload, precision: str, plan: Plan,
                ctx: Context) -> Iterator[WorkloadPoint]:
    """Main-batch trials: the plain run (twice with `repeat`), variants and sequence scaling."""
    main = plan.main_batch
    yield measure_point(workload, precision, main, ctx, sweep="variant")
    if plan.profile.repeat:
        yield measure_point(workload, precision, main, ctx, sweep="repeat")
    if plan.profile.variants and ctx.device.type == "cuda":
        yield measure_point(workload, precision, main, ctx, "variant", Variant(cudnn_benchmark=False))
        if name == "resnet50":
            yield measure_point(workload, precision, main, ctx, "variant", Variant(channels_last=False))
    if plan.profile.compile and ctx.device.type == "cuda":
        yield measure_point(workload, precision, main, ctx, "variant", Variant(compile=True))
    if plan.profile.sequence and name == "gpt-small":
        yield from iter_sequence(precision, plan, ctx)


def iter_sequence(precision: str, plan: Plan, ctx: Context) -> Iterator[WorkloadPoint]:
    """gpt-small at batch 8, sequence 1024, 2048, … until OOM (capacity) or the cap."""
    seq, batch, cap = profiles.SEQUENCE_START, profiles.SEQUENCE_BATCH, profiles.SEQUENCE_CAP
    sizes = builtin.TINY_GPT if plan.tiny else {}
    if plan.tiny:
        seq, batch, cap = builtin.TINY_GPT_SEQ, 1, 4 * builtin.TINY_GPT_SEQ
    while seq <= cap:
        spec = builtin.gpt_small(seq_len=seq, **sizes)
        point = measure_point(workload_from_dict(spec, "built-in"), precision, batch, ctx, "sequence", seq_len=seq)
        yield point
        if point.status != "ok":
            return
        seq *= 2


def collect_workload(name: str, profile: profiles.Profile, ctx: Context, progress: Progress) -> WorkloadPayload:
    started = time.perf_counter()
    workload = instantiate(name, ctx.device.type == "cpu")
    plan = build_plan(name, workload, profile, ctx.device)
    points: list[WorkloadPoint] = []
    boundaries: list[OomBoundary] = []
    for precision in PRECISIONS:
        reason = precision_unsupported(precision, ctx.device)
        wanted = precision in plan.profile.sweep_precisions or precision in plan.profile.detail_precisions
        if reason and wanted:
            points.append(WorkloadPoint("batch", precision, plan.main_batch, "default", "skipped", reason=reason))
            continue
        if precision in plan.profile.sweep_precisions:
            for item in iter_batch_sweep(workload, precision, plan, ctx, progress):
                (boundaries if isinstance(item, OomBoundary) else points).append(item)
        if precision in plan.profile.detail_precisions:
            points.extend(iter_detail(name, workload, precision, plan, ctx))
        progress.advance(f"{name} {precision}")
    return WorkloadPayload(
        workload=workload.name, source=workload.source, unit=workload.unit, training=workload.training,
        device=ctx.device.type, profile=profile.name, parameters=sum(p.numel() for p in workload.model.parameters()),
        points=points, boundaries=boundaries, elapsed_s=time.perf_counter() - started,
        tokens_per_sample=workload.tokens_per_sample, scale="tiny" if plan.tiny else "reference")


def iter_workload_documents(names: list[str], profile_name: str, folder: Path, device: torch.device,
                            progress: Progress) -> Iterator[tuple[str, WorkloadPayload]]:
    """(file stem, payload) for each workload, yielded as each finishes so it is saved at once."""
    ctx = Context(device, load_ceilings(folder))
    progress.total = len(names) * len(PRECISIONS)
    for name in names:
        payload = collect_workload(name, profiles.PROFILES[profile_name], ctx, progress)
        yield f"workload-{sanitize_machine_id(payload.workload)}", payload


DEFAULT_WORKLOADS = list(BUILTIN)
