"""`workloads` collector: batch and sequence scaling to the out-of-memory boundary, precision and
variant trials, FLOP and byte accounting; one document per workload."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import torch

from collectors.core import profiles
from collectors.core.allocator import expandable_by_environment
from collectors.core.device import free_memory
from collectors.workloads import BUILTIN, Workload, load_workload, workload_from_dict
from collectors.workloads.boundary import SAME_STORAGE, allocator_of, iter_boundary, probe_allocator
from collectors.workloads.boundary_process import Search, iter_boundary_in_fresh_process
from collectors.workloads.models import builtin
from collectors.workloads.steady import Job, iter_steady_documents
from collectors.workloads.sweep import Context, measure_point
from collectors.workloads.sweep_plan import (
    SweepPlan,
    build_sweep_plan,
    device_precisions,
    has_convolution,
    instantiate,
    load_ceilings,
    trial_variant,
    untuned,
)
from collectors.workloads.training import Variant, precision_unsupported
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import OomBoundary, WorkloadPayload, WorkloadPoint
from gpuplan_schema.payloads.workloads import knee_batch
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import DocumentError, load_document

# 3: timed points have host_issue_s, gpu_busy_s, step_syncs (collectors/core/host_time.py). A version 2
# document stays valid (those fields None); a rerun continues it, reusing only its probes (load_earlier).
# 4: the points whose step the host's speed moves are timed again, interleaved (collectors/workloads/steady.py). A
# version 3 document's points are all reused; a rerun adds the steady timing.
# 6: the main batch's trials (each precision's plain trial, torch.compile at the detail precisions) timed again at
# the batch sweep's knee where it is not the main batch (sweep "knee"): a trial's gain at the main batch said
# +30 % for BERT-base compiled at 160 and +5 % at its knee, 320 (benchmarks/recommended_check.py, 2026-11-27), so
# the plan recommends only a configuration timed at the batch it recommends. A version 5 document's points are
# all reused; a rerun adds the knee's.
NAME, VERSION = "workloads", "6"
PROBES_REUSED_FROM = ("2",)
POINTS_REUSED_FROM = ("3", "4", "5")
FRESH_PROCESS_DEVICES = ("cuda",)  # where boundaries are searched in a process of their own


def iter_batch_sweep(workload: Workload, precision: str, plan: SweepPlan, ctx: Context,
                     progress: Progress) -> Iterator[WorkloadPoint]:
    """Timed doubling from the workload's first batch until OOM, the cap, or a step over the time limit."""
    variant = Variant() if plan.profile.autotune_everywhere else untuned(workload)
    batch = plan.start
    while batch <= plan.cap:
        point = measure_point(workload, precision, batch, ctx, "batch", variant)
        progress.note(f"{workload.name} {precision} batch {batch}: {point.status}")
        yield point
        if point.status != "ok" or point.step_s is None or point.step_s.median >= plan.profile.timed_step_limit_s:
            return
        batch *= 2


def iter_precision(name: str, workload: Workload, precision: str, plan: SweepPlan, ctx: Context,
                   progress: Progress, hint: int | None = None) -> Iterator[WorkloadPoint | OomBoundary]:
    """One precision: the timed sweep, the main-batch point, the boundary's probes (starting from `hint`,
    the boundary of a precision that stores tensors alike, where there is one), the details."""
    measured: list[WorkloadPoint] = []
    if precision in plan.profile.sweep_precisions:
        for point in iter_batch_sweep(workload, precision, plan, ctx, progress):
            measured.append(point)
            yield point  # saved at once: a run killed mid-sweep keeps the sweep's finished points
    if ctx.knee is None and precision in plan.profile.sweep_precisions:  # the first swept precision's: the plan's
        ctx.knee = knee_batch({p.batch: p.throughput_per_s for p in measured
                               if p.status == "ok" and p.throughput_per_s})
    measured.append(measure_point(workload, precision, plan.main_batch, ctx, "variant",
                                  trial_variant(workload, precision, plan.profile)))
    yield measured[-1]
    yield from iter_knee_trials(workload, precision, plan, ctx)
    if precision in plan.profile.boundary_precisions:
        yield from iter_boundaries(name, workload, precision, measured, plan, ctx, progress, hint)
    if precision in plan.profile.detail_precisions:
        yield from iter_detail(name, workload, precision, plan, ctx)


def iter_knee_trials(workload: Workload, precision: str, plan: SweepPlan, ctx: Context) -> Iterator[WorkloadPoint]:
    """The main batch's trials of `precision` again at the batch sweep's knee, where that is another batch (profiles
    with `knee_trials`): its plain trial, and torch.compile at a detail precision on a GPU, as at the main batch."""
    knee = ctx.knee
    if not plan.profile.knee_trials or knee is None or knee == plan.main_batch:
        return
    yield measure_point(workload, precision, knee, ctx, "knee", trial_variant(workload, precision, plan.profile))
    if plan.profile.compile and ctx.device.type == "cuda" and precision in plan.profile.detail_precisions:
        yield measure_point(workload, precision, knee, ctx, "knee", Variant(compile=True))


def iter_boundaries(name: str, workload: Workload, precision: str, measured: list[WorkloadPoint], plan: SweepPlan,
                    ctx: Context, progress: Progress, hint: int | None) -> Iterator[WorkloadPoint | OomBoundary]:
    """The boundary with the default allocator, then (profiles with `allocator_boundaries`, on a GPU) with
    expandable segments, starting from the first: it can only be as large or larger."""
    progress.note(f"{workload.name} {precision}: searching the OOM boundary")
    found = None
    for item in search_boundary(name, workload, precision, measured, plan, ctx, untuned(workload), hint):
        found = item if isinstance(item, OomBoundary) else found
        yield item
    if not (found and searches_allocator(plan.profile, ctx.device.type, found)):
        return
    progress.note(f"{workload.name} {precision}: searching the OOM boundary with expandable segments")
    variant = replace(untuned(workload), expandable_segments=True)
    yield from search_boundary(name, workload, precision, measured, plan, ctx, variant, found.max_batch)


def search_boundary(name: str, workload: Workload, precision: str, measured: list[WorkloadPoint], plan: SweepPlan,
                    ctx: Context, variant: Variant, hint: int | None) -> Iterator[WorkloadPoint | OomBoundary]:
    """One boundary's probes and boundary. On a GPU the search runs in a fresh process
    (collectors/workloads/boundary_process.py), and a boundary an earlier run found so is taken with its probes; on a
    CPU (nothing cached between probes to speak of) it runs here."""
    if ctx.device.type not in FRESH_PROCESS_DEVICES:
        yield from iter_boundary(workload, precision, measured, ctx, plan.search_cap, variant, hint)
        return
    allocator = allocator_of(variant)
    earlier = ctx.earlier_boundaries.get((precision, allocator))
    if earlier is not None and earlier.fresh_process and earlier.status != "error":  # a failed search is tried again
        yield from (p for p in ctx.earlier.values() if p.sweep == "probe" and p.precision == precision
                    and probe_allocator(p) == allocator)
        yield earlier
        return
    workload.model.to("cpu")  # the child gets the GPU with only this process's CUDA context on it
    free_memory(ctx.device)
    yield from iter_boundary_in_fresh_process(Search(name, ctx.device.type, precision, measured, plan.search_cap,
                                                     variant.name, hint, ctx.point_timeout_s))


def searches_allocator(profile: profiles.Profile, device: str, default: OomBoundary) -> bool:
    """Whether a boundary found with the default allocator is searched again with expandable segments: in
    profiles that ask for it, on a GPU, where an OOM was met (not at the search cap, not an error) and the
    environment had not already set expandable segments (the first search then used them)."""
    return (profile.allocator_boundaries and device == "cuda" and default.status == "ok" and not default.capped
            and not expandable_by_environment())


def holds_allocator_boundaries(payload: WorkloadPayload, profile_name: str) -> bool:
    """A document answers a run of `profile_name` only with every boundary it would search again with
    expandable segments: a `capacity` document from before they were searched is continued."""
    profile = profiles.PROFILES.get(profile_name)
    if profile is None:
        return True
    searched = {b.precision for b in payload.boundaries if b.allocator == "expandable_segments"}
    return all(b.precision in searched for b in payload.default_boundaries
               if searches_allocator(profile, payload.device, b))


def iter_detail(name: str, workload: Workload, precision: str, plan: SweepPlan,
                ctx: Context) -> Iterator[WorkloadPoint]:
    """Main-batch trials beside the plain run: the repeat, variants and sequence scaling."""
    main = plan.main_batch
    if plan.profile.repeat:
        yield measure_point(workload, precision, main, ctx, sweep="repeat")
    if plan.profile.variants and ctx.device.type == "cuda":
        if has_convolution(workload):
            yield measure_point(workload, precision, main, ctx, "variant", Variant(cudnn_benchmark=False))
        if name == "resnet50":  # against the untuned run outside `full`: autotuning new shapes costs 16 s
            layout = Variant(channels_last=False, cudnn_benchmark=plan.profile.autotune_everywhere)
            yield measure_point(workload, precision, main, ctx, "variant", layout)
    if plan.profile.compile and ctx.device.type == "cuda":
        yield measure_point(workload, precision, main, ctx, "variant", Variant(compile=True))
    if plan.profile.sequence and name == "gpt-small":
        yield from iter_sequence(precision, plan, ctx)


def iter_sequence(precision: str, plan: SweepPlan, ctx: Context) -> Iterator[WorkloadPoint]:
    """gpt-small at batch 8, sequence 1024, 2048, … until OOM (capacity) or the cap."""
    seq, batch, cap = profiles.SEQUENCE_START, profiles.SEQUENCE_BATCH, profiles.SEQUENCE_CAP
    sizes = builtin.TINY_GPT if plan.tiny else {}
    if plan.tiny:
        seq, batch, cap = builtin.TINY_GPT_SEQ, 1, 4 * builtin.TINY_GPT_SEQ
    while seq <= cap:
        with ctx.device:
            spec = builtin.gpt_small(seq_len=seq, **sizes)
        point = measure_point(workload_from_dict(spec, "built-in"), precision, batch, ctx, "sequence", seq_len=seq)
        yield point
        if point.status != "ok":
            return
        seq *= 2


def iter_workload_payloads(name: str, profile: profiles.Profile, ctx: Context, progress: Progress,
                           earlier: WorkloadPayload | None = None) -> Iterator[WorkloadPayload]:
    """The workload's document after every point (so that a killed run loses at most the point it was
    measuring); the last one complete unless the profile's steady timing is still to come (it is timed for
    the whole collection at once: iter_workload_documents). Points `earlier` holds for the same configuration
    are reused, and those this profile does not measure (a larger profile's) are kept."""
    started = time.perf_counter()
    workload = instantiate(name, ctx.device)
    plan = build_sweep_plan(name, workload, profile, ctx.device)
    ctx.earlier = {p.key: p for p in (earlier.points if earlier else [])}
    ctx.earlier_boundaries = {(b.precision, b.allocator): b for b in (earlier.boundaries if earlier else [])}
    ctx.reused = 0
    ctx.knee = None
    before = earlier.elapsed_s if earlier else 0.0
    parameters = sum(p.numel() for p in workload.model.parameters())
    points: list[WorkloadPoint] = []
    boundaries: list[OomBoundary] = []

    def payload(complete: bool) -> WorkloadPayload:
        kept_points, kept_boundaries = not_measured_again(earlier, points, boundaries)
        return WorkloadPayload(
            workload=workload.name, source=workload.source, unit=workload.unit, training=workload.training,
            device=ctx.device.type, profile=profile.name, parameters=parameters,
            points=points + kept_points, boundaries=boundaries + kept_boundaries,
            elapsed_s=before + time.perf_counter() - started,
            tokens_per_sample=workload.tokens_per_sample, scale="tiny" if plan.tiny else "reference",
            complete=complete)

    for precision in plan.profile.precisions:
        for item in iter_precision_items(name, workload, precision, plan, ctx, progress, boundaries):
            (boundaries if isinstance(item, OomBoundary) else points).append(item)
            yield payload(complete=False)
        progress.advance(f"{name} {precision}")
    yield payload(complete=not plan.profile.steady)


def not_measured_again(earlier: WorkloadPayload | None, points: list[WorkloadPoint],
                       boundaries: list[OomBoundary]) -> tuple[list[WorkloadPoint], list[OomBoundary]]:
    """What `earlier` holds that this run has not (yet) measured: kept, so that a smaller profile run over a
    larger one's document, or a run stopped halfway, never loses a reading."""
    if earlier is None:
        return [], []
    done = {p.key for p in points}
    searched = {(b.precision, b.allocator) for b in boundaries}
    # an earlier search's probes go with its boundary when the boundary is searched again
    return ([p for p in earlier.points if p.key not in done and not (
                p.sweep == "probe" and (p.precision, probe_allocator(p)) in searched)],
            [b for b in earlier.boundaries if (b.precision, b.allocator) not in searched])


def iter_precision_items(name: str, workload: Workload, precision: str, plan: SweepPlan, ctx: Context,
                         progress: Progress, found: list[OomBoundary]) -> Iterator[WorkloadPoint | OomBoundary]:
    reason = precision_unsupported(precision, ctx.device)
    if reason:
        yield WorkloadPoint("variant", precision, plan.main_batch, "default", "skipped", reason=reason)
        return
    alike = next((b.max_batch for b in found if b.precision == SAME_STORAGE.get(precision)
                  and b.allocator == "default"), None)
    yield from iter_precision(name, workload, precision, plan, ctx, progress, alike)


def collect_workload(name: str, profile: profiles.Profile, ctx: Context, progress: Progress) -> WorkloadPayload:
    """The finished document, measuring every point afresh."""
    *_, last = iter_workload_payloads(name, profile, ctx, progress)
    if not profile.steady:
        return last
    *_, (_, done) = iter_steady_documents([Job("", name, last)], lambda n: instantiate(n, ctx.device), ctx, progress)
    return done


def load_earlier(path: Path, device: torch.device) -> tuple[WorkloadPayload | None, str | None]:
    """The document an earlier collection left at `path`, when its points can be reused here (of a
    version 2 document, only the probes; of a version 3 one, all, the steady timing to add); else why not.
    The second item is a line to print, or None."""
    if not path.exists():
        return None, None
    try:
        doc = load_document(path)
    except DocumentError as e:
        return None, f"{e}; measuring afresh (the file is replaced)"
    payload, version = doc.payload, doc.collector.version
    if version != VERSION and version not in PROBES_REUSED_FROM + POINTS_REUSED_FROM:
        return None, f"{path}: made by workloads collector {version}, this is {VERSION}; measuring afresh"
    if not isinstance(payload, WorkloadPayload) or payload.device != device.type:
        return None, f"{path}: measured on another device type; measuring afresh"
    if version in POINTS_REUSED_FROM:
        knee = "the trials at the sweep's knee added where the profile times them and the knee is another batch"
        again = {"3": f"its boundaries searched again in fresh processes, the points the host's speed moves timed "
                      f"again, {knee}",
                 "4": f"its boundaries searched again in fresh processes, {knee}", "5": knee}[version]
        return replace(payload, complete=False), (f"{path}: made by workloads collector {version}: its points "
                                                  f"are reused, {again}")
    if version != VERSION:
        probes = [p for p in payload.points if p.sweep == "probe"]
        # the wall time of the timed points measured then is not this document's: only the probes carry over
        # its boundaries stay until searched again: a smaller profile keeps a capacity run's other precisions
        kept = replace(payload, points=probes, complete=False, elapsed_s=0.0)
        return kept, (f"{path}: made by workloads collector {version}, without host and GPU time: its "
                      f"{len(probes)} boundary probes are reused, its timed points measured again")
    return payload, None


def iter_workload_documents(names: list[str], profile_name: str, folder: Path, device: torch.device,
                            progress: Progress, fresh: bool = False,
                            point_timeout_s: float | None = None) -> Iterator[tuple[str, WorkloadPayload]]:
    """(file stem, payload) for each workload after each point, so that each is saved at once; then, in
    profiles with steady timing, every document once more, complete, after the points the host's speed moves
    were timed for all the workloads in one window (collectors/workloads/steady.py). Without `fresh`, points a document
    already in `folder` holds are reused (resume, or a larger profile). A point running longer than
    `point_timeout_s` is recorded as an error (collectors/core/time_limit.py)."""
    ctx = Context(device, load_ceilings(folder), point_timeout_s=point_timeout_s)
    profile = profiles.PROFILES[profile_name]
    progress.total = len(names) * len(device_precisions(profile, device))
    jobs: list[Job] = []
    for name in names:
        stem = f"workload-{sanitize_machine_id(workload_name(name))}"
        earlier, why_not = (None, None) if fresh else load_earlier(folder / f"{stem}.json", device)
        if why_not:
            progress.note(why_not)
        for payload in iter_workload_payloads(name, profile, ctx, progress, earlier):
            yield stem, payload
        jobs.append(Job(stem, name, payload))
        if ctx.reused:
            progress.note(f"{name}: {ctx.reused} points reused from {stem}.json")
    if profile.steady:
        yield from iter_steady_documents(jobs, lambda name: instantiate(name, device), ctx, progress)


def workload_name(spec: str) -> str:
    """The name a workload's document is filed under: a built-in's own, a user file's `name` key."""
    return spec if spec in BUILTIN else load_workload(spec).name


DEFAULT_WORKLOADS = list(BUILTIN)
