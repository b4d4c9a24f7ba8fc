"""Steady timing of the steps a host sets: their points timed again side by side, in interleaved rounds.

Where the host's speed wanders from second to second (virtual machines), a point timed within half a
second catches whichever spell the host was in, and a prediction from one machine to another cannot be
checked closer than that. So the points where the host's time matters are timed again once every workload
of the collection is measured, all of them side by side in one window: in each of `rounds` rounds every
step runs for `slice_s` and issues `issues_per_round` steps on their own. Slow and fast spells of the host
fall on every point alike, over a window of a minute or two instead of one second. One window for the whole
collection, not one per workload, so that two machines' windows compare like with like. The point's
`step_s` becomes the distribution of its rounds' medians and its `host_issue_s` that of its issues; the
sweep's own timing stays as `quick_step_s`. The steps of one workload share its model and one optimizer, so
that the window holds the optimizer state once and each step's activations only while it runs.

Which points: those whose GPU idles for more than a twentieth of the step (step > IDLE_MARGIN × the GPU's
busy time): something other than the GPU's work sets part of the step, typically the host, and the step
moves with its speed. Also left out: a layout variant, which converts the model's parameters in place
while the steps here share the model, and the sequence sweep, whose steps are built from another model.
The measurements behind this: docs/history.md, "Steady timing of host-set steps".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import torch

from collectors.core.device import error_line, free_memory
from collectors.core.host_time import host_issue
from collectors.core.timing import TimingPlan, time_callable
from collectors.workloads import Workload
from collectors.workloads.sweep import Context
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model
from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.progress import Progress
from gpuplan_schema.stats import Stat, summarize

IDLE_MARGIN = 1.05       # step > this × GPU busy: the GPU idles for part of it, the host's speed moves it
ROUNDS = 8
SLICE_S = 0.2            # each step's share of a round
ISSUES_PER_ROUND = 2
SAMPLE_S = 0.03          # as the sweep's samples (collectors/workloads/sweep.py): back-to-back steps within one sample


@dataclass(frozen=True)
class SteadyTiming:
    step_s: Stat        # over the rounds' medians
    host_issue_s: Stat  # over every round's issues


def needs_steady(point: WorkloadPoint, again: bool = False) -> bool:
    """Whether the host's speed moves this point's step (module docstring), and it is not timed so yet (`again`:
    timed so already or not, collectors/workloads/retime.py)."""
    if point.status != "ok" or point.sweep not in ("batch", "variant", "knee", "repeat") or point.seq_len is not None:
        return False
    if (point.steady_rounds and not again) or not point.gpu_busy_s or point.step_s is None:
        return False
    if "channels_last" in point.variant or "contiguous" in point.variant:
        return False
    return point.step_s.median > IDLE_MARGIN * point.gpu_busy_s


def interleave(steps: list[Callable[[], object]], modes: list[Callable[[], object]], device: torch.device,
               rounds: int = ROUNDS, slice_s: float = SLICE_S,
               issues_per_round: int = ISSUES_PER_ROUND) -> list[SteadyTiming]:
    """Each step timed for `slice_s` in each of `rounds` rounds, one after another within a round; `modes[i]()`
    is a context manager entered around step i's turn (its precision switches)."""
    plan = TimingPlan(warmup_s=0.0, sample_s=SAMPLE_S, min_samples=3, max_samples=100_000, budget_s=slice_s,
                      target_rel_iqr=-1.0)  # never stop early: every turn lasts its slice
    medians: list[list[float]] = [[] for _ in steps]
    issues: list[list[float]] = [[] for _ in steps]
    for _ in range(rounds):
        for i, step in enumerate(steps):
            with modes[i]():
                medians[i].append(time_callable(step, device, plan).median)
                issues[i].append(host_issue(step, device, issues_per_round).median)
    return [SteadyTiming(summarize(m), summarize(h)) for m, h in zip(medians, issues, strict=True)]


def with_steady(point: WorkloadPoint, timing: SteadyTiming, rounds: int) -> WorkloadPoint:
    """The point with its steady timing as its step time, its rates and achieved fractions rescaled to it; the sweep's
    own timing stays its `quick_step_s` (a point timed steadily before keeps the sweep's, not the earlier window's)."""
    scale = point.step_s.median / timing.step_s.median if point.step_s else 1.0
    tokens = point.tokens_per_s * scale if point.tokens_per_s is not None else None

    def rescaled(fraction: float | None) -> float | None:
        return fraction * scale if fraction is not None else None
    return replace(point, quick_step_s=point.quick_step_s or point.step_s, step_s=timing.step_s, steady_rounds=rounds,
                   throughput_per_s=point.batch / timing.step_s.median, tokens_per_s=tokens,
                   host_issue_s=timing.host_issue_s,
                   achieved_flops_fraction=rescaled(point.achieved_flops_fraction),
                   achieved_bytes_fraction=rescaled(point.achieved_bytes_fraction))


@dataclass(frozen=True)
class Job:
    """One workload document of the collection: its file stem, the name to instantiate it by, its payload."""

    stem: str
    name: str
    payload: WorkloadPayload


def iter_steady_documents(jobs: list[Job], instantiate: Callable[[str], Workload], ctx: Context,
                          progress: Progress, rounds: int = ROUNDS, slice_s: float = SLICE_S,
                          again: bool = False) -> Iterator[tuple[str, WorkloadPayload]]:
    """Every job's payload, complete, with the points that need it timed steadily in one window (module
    docstring; `again`: those timed steadily before too). A step that fails to build keeps its sweep timing, said
    once; if the window itself fails, every point keeps it, said once: the documents complete either way, so that
    a rerun does not fail again."""
    chosen = {job.stem: [i for i, p in enumerate(job.payload.points) if needs_steady(p, again)] for job in jobs}
    timed: dict[str, dict[int, WorkloadPoint]] = {}
    count = sum(map(len, chosen.values()))
    if count:
        progress.note(f"steady timing: {count} points whose step the host's speed moves, {rounds} rounds")
        try:
            timed = _time_window(jobs, chosen, instantiate, ctx, progress, rounds, slice_s)
        except Exception as e:  # noqa: BLE001 — a user's step may raise anything; the sweep's timing stands
            progress.warn(f"steady timing failed ({error_line(e)}); the sweep's timing stands for {count} points")
        finally:
            free_memory(ctx.device)
    for job in jobs:
        got = timed.get(job.stem, {})
        points = [got.get(i, p) for i, p in enumerate(job.payload.points)]
        yield job.stem, replace(job.payload, points=points, complete=True)


def _time_window(jobs: list[Job], chosen: dict[str, list[int]], instantiate: Callable[[str], Workload],
                 ctx: Context, progress: Progress, rounds: int, slice_s: float) -> dict[str, dict[int, WorkloadPoint]]:
    steps: list[Callable[[], object]] = []
    modes: list[Callable[[], object]] = []
    where: list[tuple[str, int, WorkloadPoint]] = []
    for job in jobs:
        if not chosen[job.stem]:
            continue
        workload = instantiate(job.name)
        optimizer = None
        for i in chosen[job.stem]:
            point = job.payload.points[i]
            try:
                turn = build_turn(workload, point.precision, point.batch, Variant.from_name(point.variant),
                                  ctx.device, optimizer)
            except Exception as e:  # noqa: BLE001
                progress.warn(f"{job.payload.workload} {point.precision} batch {point.batch} {point.variant}: "
                              f"not timed steadily ({error_line(e)}); its sweep timing stands")
                continue
            optimizer = turn.optimizer
            steps.append(turn.run)
            modes.append(turn.mode)
            where.append((job.stem, i, point))
    timings = interleave(steps, modes, ctx.device, rounds, slice_s)
    out: dict[str, dict[int, WorkloadPoint]] = {}
    for (stem, i, point), timing in zip(where, timings, strict=True):
        out.setdefault(stem, {})[i] = with_steady(point, timing, rounds)
    return out


@dataclass(frozen=True)
class Turn:
    """One step ready for `interleave`: its closure, the context its precision needs, its optimizer."""

    run: Callable[[], object]
    mode: Callable[[], object]
    optimizer: torch.optim.Optimizer | None


def build_turn(workload: Workload, precision: str, batch: int, variant: Variant, device: torch.device,
               optimizer: torch.optim.Optimizer | None = None) -> Turn:
    """A step over the workload's shared model (and `optimizer`, when one was made already), run once: its
    allocation, autotuning or compilation (the sweep timed that already)."""

    def mode() -> object:
        return precision_mode(precision, device, variant)
    with mode():
        model = prepare_model(workload, device, variant)
        step = build_step(workload, model, precision, batch, device, variant, optimizer)
        step.run()
    return Turn(step.run, mode, step.optimizer)
