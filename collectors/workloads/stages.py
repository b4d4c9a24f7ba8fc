"""The stages of a workload's collection, in the order the answer needs them.

The plan's answer for a workload is a batch (the knee of the main precision's batch sweep), a precision and
torch.compile or not, each timed at that batch. So the collector times that first, then widens:

  answer  knee        the main precision's batch sweep, doubling from the first batch until a doubling gains less
                      than the knee's margin (5 %), a step takes longer than the profile's limit, or OOM
          compile     torch.compile at that knee
  widen   sweep       the rest of the sweep (to the profile's cap or step limit; every precision in `full`)
          precisions  each precision's plain trial at the (final) knee, and torch.compile again if the knee moved
          boundary    the out-of-memory boundary (bounded: collectors/workloads/boundary.py)
          main-batch  the trials at the main batch where it is not the knee (torch.compile there in `full`)
          details     the repeat, the layouts and cuDNN autotuning, sequence scaling (gpt-small)
          steady      the points the host's speed moves, timed again for the whole collection at once (steady.py)

Between the two groups the collection runs the data loader, when asked (collectors/__main__.py); after them the
per-op profile (the roofline collector). Each point is saved as it is measured; each stage is recorded in the
document (`stages`: done, or skipped over the time budget), so a plan from a cut collection can say what was not
timed, and a rerun goes on where it stopped.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from collectors.core import profiles
from collectors.core.device import free_memory
from collectors.workloads import workload_from_dict
from collectors.workloads.boundary import SAME_STORAGE, SEARCH_LIMIT_S, allocator_of, iter_boundary, probe_allocator
from collectors.workloads.boundary_process import Search, iter_boundary_in_fresh_process
from collectors.workloads.models import builtin
from collectors.workloads.run import Item, WorkloadRun, cpu_or
from collectors.workloads.sweep import measure_point
from collectors.workloads.sweep_plan import gpu_paths, has_convolution, trial_variant, untuned
from collectors.workloads.training import Variant, precision_unsupported
from gpuplan_schema.payloads import OomBoundary, WorkloadPoint
from gpuplan_schema.payloads.workloads import KNEE
from gpuplan_schema.progress import Progress

MAIN = profiles.MAIN_PRECISION
# Seconds a stage takes before anything of the workload was timed here (the budget's first guesses; afterwards the
# workload's own points set them). H100, standard profile, 2026-11-27: a sweep point 2-4 s, torch.compile 7-81 s
# (median 30), a boundary search 8-40 s (results/h100-80gb, the points' wall_s).
POINT_S = {"cuda": 3.0, "cpu": 1.0}
COMPILE_S = {"cuda": 40.0, "cpu": 60.0}
PROCESS_START_S = 10.0  # the boundary's child: import torch, CUDA context, the model


@dataclass(frozen=True)
class Stage:
    name: str
    label: str                                            # what it times, for the stop message and the plan
    run: Callable[[WorkloadRun, Progress], Iterator[Item]]
    estimate: Callable[[WorkloadRun], float]              # seconds it should take here (the budget plans by it)


def point_s(run: WorkloadRun) -> float:
    """What one timed point of this workload took here (the median so far), for the budget."""
    walls = [p.wall_s for p in run.points if p.wall_s and p.sweep != "probe" and "compile" not in p.variant]
    return statistics.median(walls) if walls else POINT_S.get(run.ctx.device.type, 3.0)


def compiles(run: WorkloadRun) -> bool:
    return run.profile.compile and gpu_paths(run.ctx.device)


def unsupported(run: WorkloadRun, precision: str) -> WorkloadPoint | None:
    """The skipped point of a precision this device cannot run (said once, at the main batch), else None."""
    reason = precision_unsupported(precision, run.ctx.device)
    if reason is None:
        return None
    return WorkloadPoint("variant", precision, run.plan.main_batch, "default", "skipped", reason=reason)


def iter_sweep(run: WorkloadRun, precision: str, progress: Progress, to_knee: bool) -> Iterator[WorkloadPoint]:
    """Timed doubling from the plan's first batch (points timed already are taken as they are) until OOM, the cap,
    a step over the profile's limit or, `to_knee`, a doubling that gains less than the knee's margin."""
    variant = Variant() if run.profile.autotune_everywhere else untuned(run.workload)
    batch = run.plan.start
    while batch <= run.plan.cap:
        point = measure_point(run.workload, precision, batch, run.ctx, "batch", variant)
        progress.note(f"{run.workload.name} {precision} batch {batch}: {point.status}")
        yield point  # the caller keeps it (run.add) before this goes on: `flattened` reads it
        if point.status != "ok" or point.step_s is None or point.step_s.median >= run.profile.timed_step_limit_s:
            return
        if to_knee and flattened(run.sweep_throughput(precision), batch):
            return
        batch *= 2


def flattened(throughput: dict[int, float], batch: int) -> bool:
    """Whether doubling the batch to `batch` gained less than the knee's margin: the sweep has passed its knee."""
    half = throughput.get(batch // 2)
    return half is not None and batch in throughput and throughput[batch] < (1 + KNEE) * half


def knee_stage(run: WorkloadRun, progress: Progress) -> Iterator[Item]:
    if (skipped := unsupported(run, MAIN)) is not None:
        yield skipped
        return
    if MAIN in run.profile.sweep_precisions:
        yield from iter_sweep(run, MAIN, progress, to_knee=True)
    else:  # quick: the main point alone
        yield measure_point(run.workload, MAIN, run.plan.main_batch, run.ctx, "variant",
                            trial_variant(run.workload, MAIN, run.profile))


def at_knee(run: WorkloadRun, precision: str, variant: Variant) -> WorkloadPoint | None:
    """A trial at the knee: a `variant` point where the knee is the main batch, a `knee` point elsewhere."""
    knee = run.knee
    if knee is None:
        return None
    sweep = "variant" if knee == run.plan.main_batch else "knee"
    return measure_point(run.workload, precision, knee, run.ctx, sweep, variant)


def compile_stage(run: WorkloadRun, progress: Progress) -> Iterator[Item]:
    if compiles(run) and unsupported(run, MAIN) is None and MAIN in run.profile.detail_precisions:
        if run.knee is None:  # no sweep point ran: there is no batch to compile at (said, not 'batch None')
            progress.note(f"{run.workload.name}: torch.compile: not timed (no point of the {MAIN} sweep ran)")
            return
        progress.note(f"{run.workload.name}: torch.compile at batch {run.knee} (compiling takes a while)")
        if (point := at_knee(run, MAIN, Variant(compile=True))) is not None:
            yield point


def sweep_stage(run: WorkloadRun, progress: Progress) -> Iterator[Item]:
    for precision in run.profile.sweep_precisions:
        if unsupported(run, precision) is None:
            yield from iter_sweep(run, precision, progress, to_knee=False)


def precisions_stage(run: WorkloadRun, progress: Progress) -> Iterator[Item]:
    """Each precision's plain trial at the knee (the main batch's `variant` point where the knee is the main
    batch), and torch.compile at the knee at the detail precisions (the main one again only if the knee moved
    since the compile stage: the answer is timed where it is recommended)."""
    for precision in run.profile.precisions:
        if (skipped := unsupported(run, precision)) is not None:
            yield skipped
            continue
        if not run.profile.knee_trials and run.knee != run.plan.main_batch:
            continue
        if (point := at_knee(run, precision, trial_variant(run.workload, precision, run.profile))) is not None:
            yield point
        if compiles(run) and precision in run.profile.detail_precisions:
            if (point := at_knee(run, precision, Variant(compile=True))) is not None:
                yield point


def boundary_stage(run: WorkloadRun, progress: Progress) -> Iterator[Item]:
    found: list[OomBoundary] = []
    for precision in run.profile.boundary_precisions:
        if unsupported(run, precision) is not None:
            continue
        alike = next((b.max_batch for b in found + run.boundaries if b.precision == SAME_STORAGE.get(precision)
                      and b.allocator == "default"), None)
        for item in iter_boundaries(run, precision, progress, alike):
            found += [item] if isinstance(item, OomBoundary) else []
            yield item


def iter_boundaries(run: WorkloadRun, precision: str, progress: Progress, hint: int | None) -> Iterator[Item]:
    """The boundary with the default allocator, then (profiles with `allocator_boundaries`, on a GPU) with
    expandable segments, starting from the first: it can only be as large or larger."""
    from collectors.workloads.collect import searches_allocator  # the collector's rule, shared with resume
    progress.note(f"{run.workload.name} {precision}: searching the OOM boundary")
    found = None
    for item in search_boundary(run, precision, untuned(run.workload), hint):
        found = item if isinstance(item, OomBoundary) else found
        yield item
    if not (found and searches_allocator(run.profile, run.ctx.device.type, found)):
        return
    progress.note(f"{run.workload.name} {precision}: searching the OOM boundary with expandable segments")
    variant = replace(untuned(run.workload), expandable_segments=True)
    yield from search_boundary(run, precision, variant, found.max_batch)


def search_boundary(run: WorkloadRun, precision: str, variant: Variant, hint: int | None) -> Iterator[Item]:
    """One boundary's probes and boundary. On a GPU the search runs in a fresh process
    (collectors/workloads/boundary_process.py), and a boundary an earlier run found so is taken with its probes; on a
    CPU (nothing cached between probes to speak of) it runs here."""
    ctx, measured = run.ctx, run.measured_at(precision)
    if not gpu_paths(ctx.device):
        yield from iter_boundary(run.workload, precision, measured, ctx, run.plan.search_cap, variant, hint)
        return
    allocator = allocator_of(variant)
    earlier = ctx.earlier_boundaries.get((precision, allocator))
    # a failed search is tried again, and one whose probes ran on one model (before workloads collector 8)
    if earlier is not None and earlier.fresh_probes and earlier.status != "error":
        yield from (p for p in ctx.earlier.values() if p.sweep == "probe" and p.precision == precision
                    and probe_allocator(p) == allocator)
        yield earlier
        return
    run.park()  # the child gets the GPU with only this process's CUDA context on it
    yield from iter_boundary_in_fresh_process(Search(run.name, ctx.device.type, precision, measured,
                                                     run.plan.search_cap, variant.name, hint, ctx.point_timeout_s))


def main_batch_stage(run: WorkloadRun, progress: Progress) -> Iterator[Item]:
    """The trials at the main batch where the knee is elsewhere (the precision table the report shows at the
    batch every machine is compared at); torch.compile there too in profiles that ask (`full`)."""
    main = run.plan.main_batch
    for precision in run.profile.precisions:
        if unsupported(run, precision) is not None:
            continue
        yield measure_point(run.workload, precision, main, run.ctx, "variant",
                            trial_variant(run.workload, precision, run.profile))
        if compiles(run) and run.profile.main_compile and precision in run.profile.detail_precisions:
            yield measure_point(run.workload, precision, main, run.ctx, "variant", Variant(compile=True))


def details_stage(run: WorkloadRun, progress: Progress) -> Iterator[Item]:
    """Main-batch trials beside the plain run: the repeat, the layout and autotuning variants, sequence scaling."""
    main, ctx = run.plan.main_batch, run.ctx
    for precision in run.profile.detail_precisions:
        if unsupported(run, precision) is not None:
            continue
        if run.profile.repeat:
            yield measure_point(run.workload, precision, main, ctx, sweep="repeat")
        if run.profile.variants and ctx.device.type == "cuda":
            if has_convolution(run.workload):
                yield measure_point(run.workload, precision, main, ctx, "variant", Variant(cudnn_benchmark=False))
            if run.name == "resnet50":  # against the untuned run outside `full`: autotuning new shapes costs 16 s
                layout = Variant(channels_last=False, cudnn_benchmark=run.profile.autotune_everywhere)
                yield measure_point(run.workload, precision, main, ctx, "variant", layout)
        if run.profile.sequence and run.name == "gpt-small":
            yield from iter_sequence(run, precision)


def iter_sequence(run: WorkloadRun, precision: str) -> Iterator[WorkloadPoint]:
    """gpt-small at batch 8, sequence 1024, 2048, … until OOM (capacity) or the cap."""
    seq, batch, cap = profiles.SEQUENCE_START, profiles.SEQUENCE_BATCH, profiles.SEQUENCE_CAP
    sizes = builtin.TINY_GPT if run.plan.tiny else {}
    if run.plan.tiny:
        seq, batch, cap = builtin.TINY_GPT_SEQ, 1, 4 * builtin.TINY_GPT_SEQ
    while seq <= cap:
        with run.ctx.device:
            spec = builtin.gpt_small(seq_len=seq, **sizes)
        point = measure_point(workload_from_dict(spec, "built-in"), precision, batch, run.ctx, "sequence",
                              seq_len=seq)
        free_memory(run.ctx.device)
        yield point
        if point.status != "ok":
            return
        seq *= 2


def _n(run: WorkloadRun, precisions: tuple[str, ...]) -> int:
    return len([p for p in precisions if precision_unsupported(p, run.ctx.device) is None]) or 1


def compile_estimate(run: WorkloadRun) -> float:
    return COMPILE_S.get(run.ctx.device.type, 40.0) if compiles(run) else 0.0


STAGES = (
    Stage("knee", "the main precision's batch sweep to the knee", knee_stage, lambda r: 4 * point_s(r)),
    Stage("compile", "torch.compile at the knee", compile_stage, compile_estimate),
    Stage("sweep", "the batch sweep past the knee", sweep_stage,
          lambda r: 3 * point_s(r) * len(r.profile.sweep_precisions)),
    Stage("precisions", "the other precisions at the knee", precisions_stage,
          lambda r: 1.5 * point_s(r) * _n(r, r.profile.precisions)),
    Stage("boundary", "the out-of-memory boundary", boundary_stage,
          lambda r: (SEARCH_LIMIT_S + cpu_or(r.ctx.device, PROCESS_START_S, 0.0)) * len(r.profile.boundary_precisions)),
    Stage("main-batch", "the trials at the main batch", main_batch_stage,
          lambda r: point_s(r) * _n(r, r.profile.precisions)),
    Stage("details", "the repeat, layout and cuDNN-autotuning variants", details_stage,
          lambda r: 3 * point_s(r) * len(r.profile.detail_precisions)),
)
ANSWER = ("knee", "compile")  # before the data loader; the rest widens
STEADY = Stage("steady", "steady timing of the host-set points", lambda r, p: iter(()), lambda r: 15.0)
BY_NAME = {s.name: s for s in (*STAGES, STEADY)}


def profile_stages(profile: profiles.Profile) -> list[str]:
    """The stage names a profile records, in order (steady last, where the profile times it)."""
    return [s.name for s in STAGES] + (["steady"] if profile.steady else [])


def stages_left(done: dict[str, str], profile: profiles.Profile) -> list[str]:
    """The stages of `profile` not done, by name, given each recorded stage's status."""
    return [name for name in profile_stages(profile) if done.get(name) != "done"]


