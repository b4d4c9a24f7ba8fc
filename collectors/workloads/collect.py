"""`workloads` collector: batch and sequence scaling to the out-of-memory boundary, precision and
variant trials, FLOP and byte accounting; one document per workload, measured in stages ordered by what the plan's
answer needs (collectors/workloads/stages.py)."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import torch

from collectors.core import profiles
from collectors.core.allocator import expandable_by_environment
from collectors.workloads import BUILTIN, load_workload, source_hash
from collectors.workloads.run import WorkloadRun
from collectors.workloads.stages import ANSWER, BY_NAME, STAGES, STEADY, Stage, profile_stages, stages_left
from collectors.workloads.steady import Job, iter_steady_documents
from collectors.workloads.sweep import Context
from collectors.workloads.sweep_plan import instantiate, load_ceilings
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import OomBoundary, RooflinePayload, StageRecord, WorkloadPayload
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
# 7: measured in stages, in the order the answer needs them, each recorded (`stages`); the boundary search bounded in
# time; the workload file's hash kept (`source_sha256`). A version 6 document's points are all reused.
# 8: each boundary probe on a workload built anew (collectors/workloads/boundary.py iter_boundary `rebuild`), a job
# started at its batch; the boundary says so (`fresh_probes`). A version 7 document's points are all reused, its
# boundaries searched again (on an H200, Transformer-XL's probes on one model ran fp32 at 174, a job fails at 148).
NAME, VERSION = "workloads", "8"
PROBES_REUSED_FROM = ("2",)
POINTS_REUSED_FROM = ("3", "4", "5", "6", "7")
PHASES = {"answer": ANSWER, "widen": tuple(s.name for s in STAGES if s.name not in ANSWER)}


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


def still_answers(payload: WorkloadPayload, profile_name: str) -> bool:
    """Whether a complete document still answers a run of `profile_name`: every boundary it would search with
    expandable segments (holds_allocator_boundaries), no point or boundary that failed (each is measured again:
    errors do not stay), and a workload file unchanged since (its hash)."""
    failed = any(p.status == "error" for p in payload.points) or any(b.status == "error" for b in payload.boundaries)
    return holds_allocator_boundaries(payload, profile_name) and not failed and same_source(payload)


def same_source(payload: WorkloadPayload | RooflinePayload) -> bool:
    """False where the document keeps its workload file's hash and the file there now has another."""
    path = Path(payload.source)
    if not payload.source_sha256 or not path.is_file():
        return True
    return source_hash(path) == payload.source_sha256


def phase_done(payload: WorkloadPayload, phase: str) -> bool:
    """Whether a document (of this collector's version) holds what the answer's phase measures: its stages done, its
    file unchanged. (The last phase is done only with the document complete: it also marks it so.)"""
    records = {r.name: r.status for r in payload.stages or []}
    return phase == "answer" and all(records.get(n) == "done" for n in PHASES[phase]) and same_source(payload)


def load_earlier(path: Path, device: torch.device,
                 source_sha256: str | None = None) -> tuple[WorkloadPayload | None, str | None]:
    """The document an earlier collection left at `path`, when its points can be reused here (of a
    version 2 document, only the probes; of a version 3 one, all, the steady timing to add); else why not:
    never one of a workload file that changed since (`source_sha256`, the file's hash now, against the one the
    document keeps). The second item is a line to print, or None."""
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
    if payload.source_sha256 and source_sha256 and payload.source_sha256 != source_sha256:
        return None, f"{path}: {payload.source} changed since it was measured; measuring it afresh"
    if version in POINTS_REUSED_FROM:
        knee = "the trials at the sweep's knee added where the profile times them and the knee is another batch"
        again = {"3": f"its boundaries searched again in fresh processes, the points the host's speed moves timed "
                      f"again, {knee}",
                 "4": f"its boundaries searched again in fresh processes, {knee}",
                 "5": f"{knee}, its boundaries searched again",
                 "6": "its stages recorded as they are gone over again, its boundaries searched again",
                 "7": "its boundaries searched again, each probe a job started at its batch"}[version]
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
                            progress: Progress, fresh: bool = False, point_timeout_s: float | None = None,
                            phase: str | None = None,
                            deadline: float | None = None) -> Iterator[tuple[str, WorkloadPayload]]:
    """(file stem, payload) for each workload after each point, so that each is saved at once. Stage by stage
    (stages.py), each stage for every workload before the next, so that every workload's answer comes first;
    `phase` runs only the answer's stages ("answer") or the others ("widen"). Then, in profiles with steady timing,
    every document once more, complete, after the points the host's speed moves were timed for all the workloads in
    one window (steady.py). Without `fresh`, points a document already in `folder` holds are reused (resume, or a
    larger profile). A point running longer than `point_timeout_s` is recorded as an error (core/time_limit.py);
    a stage that would not end before `deadline` (time.monotonic()) is skipped, and recorded so."""
    profile = profiles.PROFILES[profile_name]
    runs = [start_run(name, profile, folder, device, progress, fresh, point_timeout_s) for name in names]
    chosen = [s for s in STAGES if phase is None or s.name in PHASES[phase]]
    progress.total = len(runs) * len(chosen)
    for stage in chosen:
        for run in runs:
            yield from iter_stage(run, stage, progress, deadline)
            progress.advance(f"{run.workload.name}: {stage.name}")
    for run in runs:
        if run.ctx.reused:
            progress.note(f"{run.workload.name}: {run.ctx.reused} points reused from {run.stem}.json")
    if phase != "answer":
        yield from iter_last_documents(runs, progress, deadline)


def start_run(name: str, profile: profiles.Profile, folder: Path, device: torch.device, progress: Progress,
              fresh: bool, point_timeout_s: float | None) -> WorkloadRun:
    """A workload's run, with what the document an earlier run left there holds (unless `fresh`)."""
    workload = load_workload(name) if name not in BUILTIN else None
    stem = f"workload-{sanitize_machine_id(workload.name if workload else name)}"
    sha = workload.source_sha256 if workload else None
    earlier, why_not = (None, None) if fresh else load_earlier(folder / f"{stem}.json", device, sha)
    if why_not:
        progress.note(why_not)
    ctx = Context(device, load_ceilings(folder), point_timeout_s=point_timeout_s)
    run = WorkloadRun.start(name, stem, profile, ctx, earlier)
    run.park()  # every workload's model is built up front: each waits off the GPU until its stage comes
    return run


def iter_stage(run: WorkloadRun, stage: Stage, progress: Progress,
               deadline: float | None) -> Iterator[tuple[str, WorkloadPayload]]:
    """One stage of one workload, its document after each point and once more with the stage recorded: done, or
    skipped where it would not end before `deadline` (one that an earlier run did is gone over, reusing its
    points)."""
    started = time.perf_counter()
    done_before = run.records.get(stage.name) is not None and run.records[stage.name].status == "done"
    if deadline is not None and not done_before and stage.name != "knee":
        left, needs = deadline - time.monotonic(), stage.estimate(run)
        if needs > left:
            run.record(stage.name, 0.0, "skipped", f"over the time budget: it takes about {needs:.0f} s here, "
                                                   f"{max(left, 0):.0f} s were left")
            progress.note(f"{run.workload.name}: {stage.label}: skipped ({run.records[stage.name].reason})")
            yield run.stem, run.payload(complete=False)
            return
    for item in stage.run(run, progress):
        if run.add(item):
            yield run.stem, run.payload(complete=False)
    run.park()
    run.record(stage.name, time.perf_counter() - started)
    yield run.stem, run.payload(complete=complete(run) and not run.profile.steady)


def complete(run: WorkloadRun, but: tuple[str, ...] = ("steady",)) -> bool:
    return all(run.records.get(n) is not None and run.records[n].status == "done"
               for n in profile_stages(run.profile) if n not in but)


def iter_last_documents(runs: list[WorkloadRun], progress: Progress,
                        deadline: float | None) -> Iterator[tuple[str, WorkloadPayload]]:
    """Each document once more after the steady window, complete where every stage is done (or as it stands where
    the profile times none, or the window does not fit the budget)."""
    if not runs or not runs[0].profile.steady:
        return
    if deadline is not None and STEADY.estimate(runs[0]) > deadline - time.monotonic():
        for run in runs:
            run.record("steady", 0.0, "skipped", "over the time budget")
            yield run.stem, run.payload(complete=False)
        return
    started = time.perf_counter()
    jobs = [Job(run.stem, run.name, run.payload(complete=False)) for run in runs]
    timed = dict(iter_steady_documents(jobs, lambda name: instantiate(name, runs[0].ctx.device), runs[0].ctx,
                                       progress))
    share = (time.perf_counter() - started) / len(runs)
    for run in runs:
        run.record("steady", share)
        yield run.stem, replace(run.payload(complete=complete(run, ())), points=timed[run.stem].points)


def iter_workload_payloads(name: str, profile: profiles.Profile, ctx: Context, progress: Progress,
                           earlier: WorkloadPayload | None = None) -> Iterator[WorkloadPayload]:
    """One workload's document after every point, every stage but the steady window (tests, benchmarks)."""
    run = WorkloadRun.start(name, f"workload-{name}", profile, ctx, earlier)
    for stage in STAGES:
        for _, payload in iter_stage(run, stage, progress, None):
            yield payload


def collect_workload(name: str, profile: profiles.Profile, ctx: Context, progress: Progress) -> WorkloadPayload:
    """The finished document, measuring every point afresh."""
    *_, last = iter_workload_payloads(name, profile, ctx, progress)
    if not profile.steady:
        return last
    *_, (_, done) = iter_steady_documents([Job("", name, last)], lambda n: instantiate(n, ctx.device), ctx, progress)
    return replace(done, stages=[*(last.stages or []), StageRecord("steady", "done", 0.0)])


def describe_left(folder: Path, documents: dict[str, str | None], done: dict[str, str], profile_name: str) -> list[str]:
    """One line per workload document not complete: its stages left, in the order they run (all of them where
    the document is not there yet)."""
    profile = profiles.PROFILES[profile_name]
    lines = []
    for stem in documents:
        if stem in done:
            continue
        try:
            payload = load_document(folder / f"{stem}.json").payload
            records = {r.name: r.status for r in getattr(payload, "stages", None) or []}
        except DocumentError:
            records = {}
        left = stages_left(records, profile)
        lines.append(f"{stem}: " + ("; ".join(BY_NAME[n].label for n in left) if left else
                                    "the points that failed (or a changed workload file), measured again"))
    return lines


def workload_name(spec: str) -> str:
    """The name a workload's document is filed under: a built-in's own, a user file's `name` key (its file run once per
    content: every collector's document names, the resume's and the per-op profile's, ask for it)."""
    if spec in BUILTIN:
        return spec
    path = Path(spec.rpartition(":")[0])
    if not path.is_file():
        return load_workload(spec).name   # raises the error that names the file
    return _user_workload_name(spec, source_hash(path))


@functools.lru_cache(maxsize=64)
def _user_workload_name(spec: str, sha256: str) -> str:
    return load_workload(spec).name


DEFAULT_WORKLOADS = list(BUILTIN)
