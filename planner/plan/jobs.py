"""A job's estimate on any GPU and the instance ranking: the plan's own answer where it recommends the job's precision,
else the knee of the job's measured points predicted there; JobRanker ranks any job of one machine as `gpuplan plan
--job` does."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.results import MachineResults
from planner.check.bands import with_band
from planner.model.host import feed_limit, load_feed
from planner.model.performance import (
    predict_point,
    run_precision,
    target_rates,
)
from planner.model.split import PLAIN_VARIANTS, sibling_compile_points
from planner.plan.measured import Measured
from planner.plan.source import PlanError, Source, prepare_source
from planner.plan.targets import Target, build_source_target, build_target, predicted_knee, same_architecture
from planner.rank.fp8 import as_fp8, measured_precision, require_fp8
from planner.rank.jobs import Job
from planner.rank.ranking import Estimate, Predictor, RankedInstance, no_feed_limit, rank_instances
from planner.scaling.assumed_scaling import ScalingProvider
from planner.specs import GpuSpec

# (GPU, workload, job, its safe batch there) → the plan's answer as a ranking estimate, or None (plan_answers)
AnswerFn = Callable[[GpuSpec, WorkloadPayload, Job, int | None], Estimate | None]


def build_predictor(source: Source, job: Job, answers: AnswerFn | None = None):  # noqa: ANN201 - a Predictor
    """One GPU's estimate for `job`. Where the plan (`answers`, from plan_answers) recommends the job's precision
    for its workload, the estimate is the plan's answer on that GPU (the same settings, batch, figure and band as
    the plan's line for it; on a GPU without the precision, its stand-in: a bf16 job runs fp16 on a V100); else the
    knee of the job's precision's measured points predicted there."""
    payload = next((w for w in source.machine.workloads if w.workload == job.workload), None)
    if payload is None:
        names = [w.workload for w in source.machine.workloads]
        close = difflib.get_close_matches(job.workload, names, n=3, cutoff=0.5)
        raise PlanError(f"--job {job.spec!r}", f"no {job.workload} results on {source.machine.machine}; "
                                               f"{'closest' if close else 'measured'}: {', '.join(close or names)}")
    require_fp8(job, source.rates, source.machine.machine)
    precision = measured_precision(job)  # fp8: bf16's points, matmuls at the fp8 rate (planner/rank/fp8.py)

    # an fp8 job starts from the bf16 job's answer: the plan's, times what the fp8 matmul rate gains at the knee
    as_measured = replace(job, precision=precision) if precision != job.precision else job

    fit = source.memory_fit(payload, precision)

    def predict(gpu: GpuSpec) -> Estimate | None:
        safe = fit.safe_batch(gpu.memory_bytes) if fit else None
        answer = answers(gpu, payload, as_measured, safe) if answers else None
        if answer is not None and precision == job.precision:
            return answer
        rates = as_fp8(target_rates(source.rates, source.spec, gpu), job)
        # the plain variants and torch.compile where measured (the plan recommends it where it gains); for an
        # fp8 job the points ran in bf16 and only the target's matmul rate is fp8's
        points = [*payload.points, *sibling_compile_points(payload.points, precision)]
        candidates = [p for p in points if p.precision == precision and p.status == "ok" and p.step_s
                      and p.seq_len is None and p.variant in (*PLAIN_VARIANTS, "compile") and p.sweep != "probe"
                      and (safe is None or p.batch <= safe)]
        same_arch = same_architecture(gpu, source.spec)
        predicted = [with_band(x, source.bands, gpu.name) for x in
                     (predict_point(p, payload, source.rates, rates, same_arch, source.split_rooflines, gpu)
                      for p in candidates) if x and x.precision == precision]  # the job's precision, no stand-in
        if not predicted:
            return _does_not_fit(payload, job, safe)
        knee = predicted_knee(predicted)
        if answer is not None:  # fp8: the bf16 answer × the knee's fp8 gain over its own bf16 step
            point = next(p for p in candidates if (p.batch, p.variant) == (knee.batch, knee.variant))
            bf16 = predict_point(point, payload, source.rates, target_rates(source.rates, source.spec, gpu), same_arch,
                                 source.split_rooflines, gpu)
            gain = max(1.0, knee.throughput_per_s / bf16.throughput_per_s) if bf16 else 1.0
            return replace(answer, samples_per_s=answer.samples_per_s * gain,
                           note=f"{answer.note}; × {gain:.2f} with its matmuls at the fp8 rate (its bf16 step at "
                                f"batch {knee.batch}, {knee.variant}, predicted both ways)")
        validated = gpu.name in source.validated
        note = (f"from {source.machine.machine}'s batch {knee.batch} ({knee.variant}), "
                f"{knee.bound_there.name}-bound there, "
                f"−{knee.band_low:.0%}/+{knee.band_high:.0%} ({knee.band_basis})"
                f"{'' if validated else ', unvalidated'}; "
                f"max batch {fit.max_batch(gpu.memory_bytes) if fit else 'unknown'}")
        return Estimate(knee.throughput_per_s, knee.batch, safe if safe and safe >= knee.batch else None, note,
                        knee.band_low, knee.band_high, validated, payload.parameters,
                        torch_compile=knee.variant == "compile")
    return predict


def plan_answers(source: Source, built: Sequence[Target]) -> AnswerFn:
    """The plan's answer on any GPU as a ranking estimate, read where it recommends the job's precision for the
    job's workload, or runs that precision's stand-in on a GPU without it (a bf16 job in fp16 on a V100 or T4: the
    plan's line there, so the ranking says the same; the estimate names the precision it runs). `built`: the
    plan's targets, the measured GPU's first; a one-GPU target among them is the one read (the plan's line and the
    ranking are one computation), another GPU's is built once and kept for every job ranked after."""
    targets = {t.gpu.name: t for t in reversed(built) if t.gpu_count == 1}  # the first of a GPU wins

    def answer(gpu: GpuSpec, payload: WorkloadPayload, job: Job, safe: int | None) -> Estimate | None:
        if gpu.name not in targets:
            targets[gpu.name] = build_target(source, gpu.name, gpu, 1, built[0])
        target = targets[gpu.name]
        settings, expected = target.settings.get(job.workload), target.gpu_expected.get(job.workload)
        runs = run_precision(job.precision, gpu.flops_per_s)  # the job's, or what stands in for it there
        if settings is None or expected is None or settings.precision != runs or \
                not expected.throughput_per_s or (safe is not None and settings.batch > safe):
            return None
        t = expected.throughput_per_s
        validated = gpu.name in source.validated
        note = (f"the plan's answer on {gpu.name}: batch {settings.batch}, {settings.precision}"
                f"{', torch.compile' if settings.torch_compile else ''}; {expected.basis}"
                f"{'' if validated else ', unvalidated'}")
        return Estimate(t, settings.batch, safe, note, max(0.0, 1 - expected.low_per_s / t),
                        max(0.0, expected.high_per_s / t - 1), validated, payload.parameters,
                        runs if runs != job.precision else None, settings.torch_compile)
    return answer


def _does_not_fit(payload: WorkloadPayload, job: Job, safe: int | None) -> Estimate | None:
    return Estimate(1.0, 1, 0, f"no measured batch fits (memory model: {safe})") if safe is not None and safe < 1 \
        else None


@dataclass(frozen=True)
class JobRanker:
    """Instances ranked for any job of one measured machine, as `gpuplan plan --job` ranks them: predictions
    with their bands, the measured multi-GPU scaling, and the limit of what each instance's vCPUs feed. The
    report's decision page and the site's job chooser rank through it too."""

    source: Source
    scaling: ScalingProvider
    targets: tuple[Target, ...] = ()   # the plan's, the measured GPU's first: jobs at its precisions rank at them

    @cached_property
    def answers(self) -> AnswerFn | None:
        """The plan's answers, each GPU's target built once for every job this ranker ranks."""
        return plan_answers(self.source, self.targets) if self.targets else None

    def rank(self, job: Job, predict: Predictor | None = None) -> list[RankedInstance]:
        return rank_instances(job, predict or build_predictor(self.source, job, self.answers), scaling=self.scaling,
                              feed=build_feed(self.source, job))

    def predictor(self, job: Job) -> Predictor:
        """`job`'s estimate per GPU, each worked out once: an estimate depends on the job's workload and precision,
        not on its amount, so every amount of the same work ranks from one (the site's job chooser ranks three)."""
        predict, made = build_predictor(self.source, job, self.answers), {}

        def once(gpu: GpuSpec) -> Estimate | None:
            if gpu.name not in made:
                made[gpu.name] = predict(gpu)
            return made[gpu.name]
        return once


def build_ranker(machine: MachineResults, measured: Sequence[MachineResults] | Measured = ()) -> JobRanker:
    """Raises PlanError for a machine the planner cannot use."""
    context = Measured.of(machine, measured)
    source, _ = prepare_source(machine, context)
    return JobRanker(source, context.scaling, (build_source_target(source, source.spec.name, 1),))


def build_feed(source: Source, job: Job):  # noqa: ANN201 - a FeedProvider
    feed = load_feed(source.machine, job.workload)
    return (lambda i: feed_limit(feed, i.vcpus, i.gpu_count)) if feed else no_feed_limit
