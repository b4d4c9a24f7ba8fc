"""The plan: one machine's results projected onto target GPUs and instances, with recommendations and,
for a job, the instance ranking. `build_plan` returns typed values; `plan_to_json` is the contract that
the README documents (`gpuplan plan RESULTS_DIR [--target NAME …] [--job SPEC] [--json]`).

A user workload file is never executed here: the plan reads documents only.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from gpuplan_schema.payloads import Allocator, RooflinePayload, WorkloadPayload
from gpuplan_schema.payloads.workloads import KNEE
from gpuplan_schema.results import MachineResults
from gpuplan_schema.schema import DocumentError
from planner.check.bands import BandTable, measured_band, with_band
from planner.check.crossarch import CrossCheck, build_crosscheck
from planner.model.dataloader_verdict import FeedVerdict
from planner.model.host import feed_limit, load_feed
from planner.model.memory import MemoryFit, fit_memory
from planner.model.performance import (
    Prediction,
    Rates,
    iter_predictions,
    measured_rates,
    predict_point,
    run_precision,
    target_rates,
)
from planner.model.split import PLAIN_VARIANTS, machine_rooflines, sibling_compile_points
from planner.plan.advice import MAIN_PRECISION, advise_workload  # noqa: F401 - re-exported
from planner.plan.alignment import recommend_alignment
from planner.plan.changes import CHANGES_SHOWN, Change, changes_of, top_changes
from planner.plan.choice import Choice, trials
from planner.plan.default_jobs import JobRanking, rank_default_jobs
from planner.plan.expect import (
    Expected,
    build_expected,
    cap_by_input,
    exact_prediction,
    knee_prediction,
    on_another_host,
)
from planner.plan.judge import judge, judge_on_target, plain_point
from planner.plan.measured import Measured
from planner.plan.presets import Preset, render_presets_yaml
from planner.plan.recommend import Recommendation
from planner.plan.settings import Settings
from planner.plan.untimed import Untimed, untimed_of
from planner.rank.fp8 import as_fp8, measured_precision, require_fp8
from planner.rank.jobs import Job, parse_job
from planner.rank.nodes import NodeRow, rank_nodes
from planner.rank.ranking import ASSUMPTIONS, OK, Estimate, Predictor, RankedInstance, no_feed_limit, rank_instances
from planner.scaling.assumed_scaling import ScalingProvider
from planner.specs import GpuSpec, load_gpu_catalog, match_gpu
from planner.specs.require import require_target
from planner.trace.bands import trace_bands
from planner.trace.machine import is_prediction
from planner.trace.model_file import load_learned
from planner.trace.summary import TraceSummary, trace_summaries
from planner.units import format_count, short_rate

PLAN_SCHEMA_VERSION = 1
DEFAULT_TARGETS = ("A100 80GB SXM", "H100 SXM", "H200 SXM", "L40S", "B200")
DEFAULT_JOB = "resnet50 bf16 epochs=100 dataset=imagenet"


class PlanError(DocumentError):
    """A plan that cannot be made: an unknown target, a machine without the results a plan needs."""

    def __init__(self, where: str, problem: str):
        super().__init__(where, "", problem)


@dataclass(frozen=True)
class Capacity:
    workload: str
    precision: str
    max_batch: int
    safe_batch: int
    measured: bool        # the usable memory comes from the source's measured boundary
    allocator: Allocator = "default"

    def to_dict(self) -> dict:
        return {"workload": self.workload, "precision": self.precision, "max_batch": self.max_batch,
                "safe_batch": self.safe_batch, "usable_memory_measured": self.measured, "allocator": self.allocator}


@dataclass(frozen=True)
class Target:
    name: str
    gpu: GpuSpec
    gpu_count: int
    is_source: bool
    predictions: list[Prediction]
    capacity: list[Capacity]
    recommendations: list[Recommendation]
    presets: dict[str, str] = field(default_factory=dict)  # workload → YAML
    settings: dict[str, Settings] = field(default_factory=dict)          # workload → the recommendations, typed
    expected: dict[str, Expected] = field(default_factory=dict)          # workload → throughput with them
    preset_values: dict[str, list[Preset]] = field(default_factory=dict)  # workload → the presets, typed
    choices: dict[str, Choice] = field(default_factory=dict)             # workload → the trials chosen from
    validated: bool = True   # False: no published cross-architecture check covers this GPU
    # workload → the expected figure before the measured loader's cap: what the GPU does with the settings. The
    # ranking reads it (each instance's own vCPUs set its feed there), so a job at the recommended precision is
    # ranked at the plan's settings and figure, not at a knee of its own
    gpu_expected: dict[str, Expected] = field(default_factory=dict)
    # workload → the measured loader against the recommended configuration's GPU rate (the measured GPU only); the
    # report's input-pipeline section reads it, so its verdict and the plan's loader line are one
    feeds: dict[str, FeedVerdict] = field(default_factory=dict)
    # workload → the stages of the collection its answer was not timed with, and what each could change
    untimed: dict[str, list[Untimed]] = field(default_factory=dict)

    def keep_expected(self, workload: str, expected: Expected, feed: tuple[float | None, str]) -> None:
        """The GPU's figure with the settings, and the figure the measured loader (`feed`, input_feed) caps it at."""
        self.gpu_expected[workload] = expected
        self.expected[workload] = cap_by_input(expected, *feed)


@dataclass(frozen=True)
class Plan:
    machine: str
    source_gpu: GpuSpec
    targets: list[Target]
    job: Job | None
    ranking: list[RankedInstance]
    crosscheck: CrossCheck | None = None
    assumptions: list[str] = field(default_factory=list)
    node_ranking: list[NodeRow] = field(default_factory=list)   # with a job: multi-node instances by node count
    jobs: dict[str, JobRanking] = field(default_factory=dict)   # workload → its default job (or the one asked) ranked
    job_asked: bool = False     # `job` is the user's (--job), not the default job
    ranker: JobRanker | None = field(default=None, repr=False, compare=False)   # ranks any other job of the source
    machines_used: tuple[str, ...] = ()   # the machines the plan read: the one given first, then those named with it
    traced: bool = False        # the source is a trace (planner/trace): every figure predicted, none measured
    trace: list[TraceSummary] = field(default_factory=list)   # traced: per workload, the dominant ops, unknown share

    @cached_property
    def unchecked_notes(self) -> dict[str, str]:
        """GPU name → how the checked GPUs of its architecture fared (CrossCheck.kin_words), for every catalog GPU
        the † marks that has such kin: the plan text, its JSON, the report and the job chooser print it by the †."""
        if self.crosscheck is None:
            return {}
        return {g.name: words for g in load_gpu_catalog() if (words := self.crosscheck.kin_words(g))}

    def unchecked_notes_for(self, gpus: Iterable[str]) -> list[str]:
        """The notes of these GPUs that have one, each once, in the order given (an output's † rows or targets)."""
        return [self.unchecked_notes[g] for g in dict.fromkeys(gpus) if g in self.unchecked_notes]

    def row_notes(self, r: RankedInstance) -> tuple[str, str]:
        """The notes a ranking row carries, (†, checked): a † row its kin's note (unchecked_notes); a ★ row on a GPU
        published rows check how those rows lay from the prediction (checked_notes: the cheapest pick on an L40S
        says its one row was predicted 14 % too fast); any other row, and the measured GPU (no rows), none. Every
        output that shows a ranking reads them here."""
        unchecked = self.unchecked_notes.get(r.gpu, "") if r.unchecked else ""
        checked = self.checked_notes.get(r.gpu, "") if r.pareto and not r.unchecked and r.status == OK else ""
        return unchecked, checked

    def ranking_notes(self, rows: Iterable[RankedInstance]) -> tuple[list[str], list[str]]:
        """The † notes and the checked notes of these rows (row_notes), each note once, in the order given."""
        pairs = [self.row_notes(r) for r in rows]
        unchecked, checked = ([n for n in dict.fromkeys(p[side] for p in pairs) if n] for side in (0, 1))
        return unchecked, checked

    @cached_property
    def changes(self) -> list[Change]:
        """The three recommended settings worth most over the measured workloads, each with its measured gain
        (planner/plan/changes.py): the report's decision page shows them, the JSON lists them."""
        source = self.targets[0]
        return top_changes(changes_of(source.recommendations), CHANGES_SHOWN, len(source.settings) or None)

    @cached_property
    def checked_notes(self) -> dict[str, str]:
        """GPU name → how its own published rows lay from the prediction (CrossCheck.own_words), for every GPU the
        published check covers: printed beside each predicted target."""
        if self.crosscheck is None:
            return {}
        return {g.name: words for g in load_gpu_catalog() if (words := self.crosscheck.own_words(g))}


@dataclass(frozen=True)
class Source:
    machine: MachineResults
    spec: GpuSpec
    rates: Rates
    rooflines: list[RooflinePayload] = field(default_factory=list)
    bands: BandTable = field(default_factory=BandTable)
    validated: frozenset[str] = frozenset()
    traced: bool = False   # predicted from a trace (planner/trace): no figure of the source GPU was measured


def load_source(machine: MachineResults) -> Source:
    name = machine.gpu_name
    spec = match_gpu(name) if name else None
    if spec is None or machine.ceilings is None or not machine.workloads:
        missing = "catalog entry for its GPU" if spec is None else "ceilings.json" if machine.ceilings is None \
            else "workload documents"
        raise PlanError(str(machine.folder), f"a plan needs a GPU machine's ceilings and workloads: no {missing}")
    return Source(machine, spec, measured_rates(machine.ceilings), machine_rooflines(machine))


def report_plan(machine: MachineResults, job: Job | None = None,
                measured: Sequence[MachineResults] | Measured = ()) -> Plan | None:
    """The plan a report shows (default targets, every workload's default job ranked, `job` in its workload's
    place), or None for a machine the planner cannot use (no GPU in the catalog, no ceilings, no workloads): its
    report says so in each planner part."""
    if not plannable(machine):
        return None
    return build_plan(machine, None, job, measured, rank_defaults=True)


def plannable(machine: MachineResults) -> bool:
    name = machine.gpu_name
    return bool(name and match_gpu(name) and machine.ceilings is not None and machine.workloads)


def resolve_target(name: str) -> tuple[str, GpuSpec, int]:
    """A GPU or an instance of the catalog; an unknown name stops with the closest catalog names."""
    found = require_target(name)
    if isinstance(found, GpuSpec):
        return found.name, found, 1
    return found.name, found.gpu_spec, found.gpu_count


def build_capacity(source: Source, gpu: GpuSpec) -> tuple[list[Capacity], dict[tuple[str, str], MemoryFit]]:
    """The largest batch on `gpu` per workload × precision: with the default allocator (the fits returned, what
    the recommended batch keeps under) and, where the source measured it, with expandable segments."""
    out, fits = [], {}
    for payload in source.machine.workloads:
        for precision in dict.fromkeys(p.precision for p in payload.points):
            fit = fit_memory(payload, precision, source.spec.memory_bytes)
            if fit is None:
                continue
            fits[(payload.workload, precision)] = fit
            expandable = fit_memory(payload, precision, source.spec.memory_bytes, "expandable_segments")
            for f in (fit, expandable) if expandable and expandable.usable_measured else (fit,):
                out.append(Capacity(payload.workload, precision, f.max_batch(gpu.memory_bytes),
                                    f.safe_batch(gpu.memory_bytes), f.usable_measured, f.allocator))
    return out, fits


def build_source_target(source: Source, name: str, count: int) -> Target:
    machine = source.machine
    capacity, fits = build_capacity(source, source.spec)
    own_band = (lambda p: with_band(p, source.bands)) if source.traced else measured_band
    predictions = [own_band(p) for w in machine.workloads
                   for p in iter_predictions(w, source.rates, source.rates, True, source.rooflines, None)]
    loader = next((d.payload for d in machine.documents.values() if d.kind == "dataloader"), None)
    cores = machine.environment.cpu.logical_cores if machine.environment else None
    target = Target(name, source.spec, count, True, predictions, capacity, [])
    shapes = recommend_alignment(source.rooflines)
    for payload in machine.workloads:
        advice = advise_workload(source.spec, payload, fits, loader, cores, source.rooflines,
                                 source.rates)
        target.recommendations.extend(advice.recommendations)
        target.recommendations.extend(r for r in shapes if r.workload == payload.workload)
        target.settings[payload.workload] = advice.settings
        target.untimed[payload.workload] = untimed_of(payload, source.rooflines)
        target.choices[payload.workload] = advice.choice
        target.presets[payload.workload] = render_presets_yaml(payload.workload, advice.presets)
        target.preset_values[payload.workload] = advice.presets
        if advice.feed is not None:
            target.feeds[payload.workload] = advice.feed
        if advice.knee and advice.judgement:
            base = plain_point(payload, advice.knee.batch, MAIN_PRECISION)
            expected = build_expected(payload, advice.settings, advice.choice, base, advice.judgement)
            own = exact_prediction(predictions, advice.settings) or \
                knee_prediction(predictions, payload.workload, MAIN_PRECISION, advice.knee.batch)
            if expected and own:
                band = source.bands.band_for(own) if source.traced else source.bands.host_band(own.host_there)
                expected = on_another_host(expected, band.low, band.high, band.basis)
            if expected and source.traced:  # nothing was measured: the figure is the trace's prediction
                expected = replace(expected, how="predicted", basis=f"predicted from the trace on {source.spec.name}: "
                                                                     f"{expected.basis.removeprefix('measured ')}")
            if expected:
                target.keep_expected(payload.workload, expected, input_feed(source, advice.settings))
    return target


def input_feed(source: Source, settings: Settings, host: str = "") -> tuple[float | None, str]:
    """What the measured data loader feeds with the recommended workers, where it measured this workload's input."""
    feed = load_feed(source.machine, settings.workload)
    if feed is None:
        return None, ""
    workers = settings.loader.workers
    # on the measured host itself, never above what a measured worker count delivered (no extrapolation)
    rate = min(feed.samples_per_s(workers), max(r for _, r in feed.rates))
    return rate, f"the data loader measured on {host or source.machine.machine}'s host, {workers} workers,"


def build_target(source: Source, name: str, gpu: GpuSpec, count: int, measured: Target) -> Target:
    """Another GPU: the source's settings with the batch of the knee predicted on it."""
    capacity, fits = build_capacity(source, gpu)
    rates = target_rates(source.rates, source.spec, gpu)
    same_arch = _same_arch(gpu, source.spec)
    predictions = [with_band(p, source.bands, gpu.name) for w in source.machine.workloads
                   for p in iter_predictions(w, source.rates, rates, same_arch, source.rooflines, gpu)]
    sweep = run_precision(MAIN_PRECISION, rates.flops_per_s)  # fp16 on a GPU without bf16
    recs = build_target_batches(source, gpu, fits, predictions, sweep) if sweep else []
    answers: list[tuple[WorkloadPayload, Settings, Choice | None, Prediction | None]] = []
    for payload in source.machine.workloads:
        rec = next((r for r in recs if r.workload == payload.workload), None)
        base = measured.settings.get(payload.workload)
        precision = run_precision(base.precision, rates.flops_per_s) if base else None
        if rec is None or base is None or precision is None:
            continue  # the GPU has neither the recommended precision nor its stand-in: no answer, not a wrong one
        settings = replace(base.with_batch(rec.amount), precision=precision)
        pred = knee_prediction(predictions, payload.workload, sweep, settings.batch)  # type: ignore[arg-type]
        choice = measured.choices.get(payload.workload)
        if pred and choice:
            settings, choice, pred, recs = at_a_timed_batch_there(source, gpu, fits, payload, settings, choice, pred,
                                                                  predictions, sweep, recs)
        answers.append((payload, settings, choice, pred))
    # the target is made once its batch rows are final: at_a_timed_batch_there returns them anew, edits none in place
    target = Target(name, gpu, count, False, predictions, capacity, recs, validated=gpu.name in source.validated)
    for payload, settings, choice, pred in answers:
        target.settings[payload.workload] = settings
        if pred and choice:
            judged = judge(payload, settings.batch, MAIN_PRECISION, source.rooflines, source.rates)  # type: ignore
            there = judge_on_target(judged, pred, source.machine.machine)
            expected = build_expected(payload, settings, choice, None, there, pred,
                                      exact_prediction(predictions, settings))
            if expected:
                target.keep_expected(payload.workload, expected, input_feed(source, settings))
    return target


def at_a_timed_batch_there(source: Source, gpu: GpuSpec, fits: dict, payload: WorkloadPayload, settings: Settings,
                           choice: Choice, knee: Prediction, predictions: list[Prediction], sweep: str,
                           recs: list[Recommendation]
                           ) -> tuple[Settings, Choice, Prediction, list[Recommendation]]:
    """On another GPU as on the measured one (advice.at_a_timed_batch): the chosen trial is predicted at the batch it
    was timed at, never carried to the knee predicted there. The fastest prediction is the answer: the trial's
    configuration at a batch it was timed at (where it fits; a trial chosen at the knee was timed at the main batch
    too), whose batch then replaces the knee's in a copy of `recs`, or the sweep's plain configuration at the knee.
    Returns the settings, choice and prediction with the recommendations (`recs` itself where none changed)."""
    if not choice.timed_elsewhere(settings.batch):  # type: ignore[arg-type]
        return settings, choice, knee, recs
    chosen = choice.chosen
    assert chosen is not None  # timed_elsewhere says so
    fit = fits.get((payload.workload, settings.precision)) or fits.get((payload.workload, MAIN_PRECISION))
    # the chosen configuration at each batch it was timed at (the knee's trial, and the main batch's where the choice
    # was made among the knee's: compiled ResNet-50 at 512 does not fit a 16 GB card, at 256 it does)
    same = [t for t in trials(payload, MAIN_PRECISION) if t.point.batch != chosen.point.batch and
            (t.precision, t.compiled) == (chosen.precision, chosen.compiled)] if chosen.point.sweep == "knee" else []
    options = []
    for trial in [chosen, *same]:
        batch = trial.point.batch
        timed = exact_prediction(predictions, settings.with_batch(batch))
        plain = knee_prediction(predictions, payload.workload, sweep, batch)
        if timed and plain and (fit is None or batch <= fit.safe_batch(gpu.memory_bytes)) \
                and timed.throughput_per_s > knee.throughput_per_s:
            options.append((timed.throughput_per_s, trial, plain))
    if options:
        timed_per_s, trial, plain = max(options, key=lambda o: o[0])
        batch = trial.point.batch
        reason = (f"the batch {trial.name} was timed at on {source.machine.machine}: predicted "
                  f"{short_rate(timed_per_s)} {payload.unit}/s here, more than the sweep's predicted knee "
                  f"({short_rate(knee.throughput_per_s)} at batch {format_count(knee.batch)}); a gain is not carried "
                  f"to a batch it was not timed at")
        return (settings.with_batch(batch), replace(choice, chosen=trial), plain,
                with_batch_row(recs, payload.workload, batch, reason))
    return replace(settings, precision=sweep, torch_compile=False), choice.sweeps_own(), knee, recs


def with_batch_row(recs: list[Recommendation], workload: str, batch: int, reason: str) -> list[Recommendation]:
    """A copy of `recs` with `workload`'s batch_size row set to `batch` for `reason`: the caller's list (the target's
    rows, read again for the next workload) is never changed under it."""
    return [replace(r, value=str(batch), choice=str(batch), reason=reason, amount=batch)
            if r.workload == workload and r.setting == "batch_size" else r for r in recs]


def build_target_batches(source: Source, gpu: GpuSpec, fits: dict, predictions: list[Prediction],
                         precision: str = MAIN_PRECISION) -> list:
    """On another GPU: the knee among the batches that fit it, by predicted throughput, of the sweep run in
    `precision` there (the sweep's own, or its stand-in: fp16 for bf16; the memory fit is the sweep's)."""
    recs = []
    for payload in source.machine.workloads:
        fit = fits.get((payload.workload, MAIN_PRECISION))
        safe = fit.safe_batch(gpu.memory_bytes) if fit else None
        mine = {p.batch: p for p in predictions if p.workload == payload.workload and p.precision == precision
                and p.variant in ("default", "no_cudnn_benchmark") and p.seq_len is None
                and (safe is None or p.batch <= safe)}
        if not mine:
            continue
        knee = predicted_knee(list(mine.values()))
        recs.append(Recommendation(payload.workload, "batch_size", str(knee.batch),
                                   f"predicted knee: {short_rate(knee.throughput_per_s)} {payload.unit}/s "
                                   f"−{knee.band_low:.0%}/+{knee.band_high:.0%} ({knee.band_basis}), "
                                   f"{knee.bound_there.name}-bound"
                                   f"{'' if gpu.name in source.validated else ', unvalidated'}; "
                                   f"fits under the memory model's {format_count(safe)} (5% margin)", str(knee.batch),
                                   amount=knee.batch))
    return recs


def predicted_knee(predicted: list[Prediction]) -> Prediction:
    """The smallest batch within 5% of the best predicted throughput, over one basis: a counts-basis point
    holds most of its step at the source's speed, so on a slower GPU it would beat a roofline-basis one for
    no measured reason; the roofline ones are used wherever there are any."""
    profiled = [p for p in predicted if p.split.basis.startswith("roofline")]
    predicted = profiled or predicted
    best = max(predicted, key=lambda p: p.throughput_per_s)
    near = (p for p in predicted if p.throughput_per_s >= (1 - KNEE) * best.throughput_per_s)
    return min(near, key=lambda p: p.batch)


def _same_arch(a: GpuSpec, b: GpuSpec) -> bool:
    return (a.compute_capability or "").split(".")[0] == (b.compute_capability or "").split(".")[0]


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

    def predict(gpu: GpuSpec) -> Estimate | None:
        fit = fit_memory(payload, precision, source.spec.memory_bytes)
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
        same_arch = _same_arch(gpu, source.spec)
        predicted = [with_band(x, source.bands, gpu.name) for x in
                     (predict_point(p, payload, source.rates, rates, same_arch, source.rooflines, gpu)
                      for p in candidates) if x and x.precision == precision]  # the job's precision, no stand-in
        if not predicted:
            return _does_not_fit(payload, job, safe)
        knee = predicted_knee(predicted)
        if answer is not None:  # fp8: the bf16 answer × the knee's fp8 gain over its own bf16 step
            point = next(p for p in candidates if (p.batch, p.variant) == (knee.batch, knee.variant))
            bf16 = predict_point(point, payload, source.rates, target_rates(source.rates, source.spec, gpu), same_arch,
                                 source.rooflines, gpu)
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


def build_plan(machine: MachineResults, targets: list[str] | None = None, job: Job | None = None,
               measured: Sequence[MachineResults] | Measured = (), *, rank_defaults: bool = False) -> Plan:
    """The plan of one measured machine. `measured`: the machines (loaded once, the source among them or
    not) whose measurements the plan may cite: multi-GPU efficiencies, and the accuracy residuals that set
    the prediction bands. `job` is ranked; without one, `rank_defaults` ranks each workload's default job at its
    recommended precision and makes resnet50's (DEFAULT_JOB's workload; without it, the first workload's) the plan's
    job, as a report shows it. A machine predicted from a trace (planner/trace/machine.py) is planned the same way,
    with the trace's bands and every answer marked as from a trace."""
    context = Measured.of(machine, measured)
    source, check = prepare_source(machine, context)
    names = targets or [source.spec.name, *(t for t in DEFAULT_TARGETS if t != source.spec.name)]
    built = [build_source_target(source, source.spec.name, 1)]
    for name in dict.fromkeys(names):
        label, gpu, count = resolve_target(name)
        if gpu.name == source.spec.name and count == 1:
            continue  # the measured GPU itself: already first
        built.append(build_source_target(source, label, count) if gpu.name == source.spec.name
                     else build_target(source, label, gpu, count, built[0]))
    used = context.names
    traced = {"traced": source.traced, "machines_used": used,
              "trace": trace_summaries(machine, load_learned().model) if source.traced else []}
    if job is None and not rank_defaults:
        return Plan(machine.machine, source.spec, built, None, [], check, **traced)
    ranker = JobRanker(source, context.scaling, tuple(built))
    precisions = {w: s.precision for w, s in built[0].settings.items()}
    jobs = rank_default_jobs(machine.workloads, ranker.rank, job, precisions) if rank_defaults else {}
    asked = job is not None
    if job is None:
        # resnet50's default job; a folder without it (a user's model, a trace) its first workload's
        default = parse_job(DEFAULT_JOB).workload
        job = jobs[default].job if default in jobs else next((r.job for r in jobs.values()), None)
    if job is None:
        return Plan(machine.machine, source.spec, built, None, [], check, jobs=jobs, ranker=ranker, **traced)
    predict = build_predictor(source, job, ranker.answers)
    ranking = jobs[job.workload].rows if job.workload in jobs else ranker.rank(job, predict)
    nodes = rank_nodes(job, predict, context.node, context.socket, ranker.scaling, build_feed(source, job))
    return Plan(machine.machine, source.spec, built, job, ranking, check, ASSUMPTIONS, nodes, jobs, asked, ranker,
                **traced)


def prepare_source(machine: MachineResults, context: Measured) -> tuple[Source, CrossCheck | None]:
    """The source with what its predictions carry: bands from the residuals of the loaded machines, and the GPUs
    a published cross-architecture check (or a measurement among them) validates. A machine predicted from a
    trace carries the trace's bands (planner/trace/bands.py) and validates no GPU: nothing of it was measured."""
    source = load_source(machine)
    if is_prediction(machine):
        return replace(source, bands=trace_bands(load_learned().residuals), traced=True), None
    check = build_crosscheck(machine)
    validated = (check.validated_gpus() if check else set()) | context.validated
    return replace(source, bands=context.band_table, validated=frozenset(validated)), check


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


def build_ranker(machine: MachineResults, measured: Sequence[MachineResults] | Measured = ()) -> JobRanker:
    """Raises PlanError for a machine the planner cannot use."""
    context = Measured.of(machine, measured)
    source, _ = prepare_source(machine, context)
    return JobRanker(source, context.scaling, (build_source_target(source, source.spec.name, 1),))


def build_feed(source: Source, job: Job):  # noqa: ANN201 - a FeedProvider
    feed = load_feed(source.machine, job.workload)
    return (lambda i: feed_limit(feed, i.vcpus, i.gpu_count)) if feed else no_feed_limit


def plan_to_json(plan: Plan) -> dict:
    from planner.plan.answer import answers_of_target  # answer reads the plan: imported here, not at the top
    from planner.plan.precisions import by_precision

    return {
        "schema_version": PLAN_SCHEMA_VERSION,
        "source": {"machine": plan.machine, "gpu": plan.source_gpu.name,
                   "predicted_from": "trace" if plan.traced else "measurements"},
        "machines_used": list(plan.machines_used),
        "targets": [{"name": t.name, "gpu": t.gpu.name, "gpu_count": t.gpu_count,
                     "measured": t.is_source and not plan.traced, "from_trace": plan.traced,
                     "predictions": [p.to_dict() for p in t.predictions],
                     "by_precision": [b.to_dict() for b in by_precision(t.predictions)],
                     "capacity": [c.to_dict() for c in t.capacity],
                     "recommendations": [r.to_dict() for r in t.recommendations],
                     "presets": t.presets,
                     "preset_values": {w: [p.to_dict() for p in ps] for w, ps in t.preset_values.items()},
                     "answers": [a.to_dict() for a in answers_of_target(plan, t)],
                     "validated": t.validated} for t in plan.targets],
        "job": plan.job.to_dict() if plan.job else None,
        "ranking": [r.to_dict() for r in plan.ranking],
        "job_asked": plan.job_asked,
        "jobs": {w: {"job": j.job.to_dict(), "asked": j.asked, "ranking": [r.to_dict() for r in j.rows]}
                 for w, j in plan.jobs.items()},
        "assumptions": plan.assumptions,
        "node_ranking": [r.to_dict() for r in plan.node_ranking],
        "crosscheck": plan.crosscheck.to_dict() if plan.crosscheck else None,
        "unchecked_notes": plan.unchecked_notes,
        "checked_notes": plan.checked_notes,
        "changes": [c.to_dict() for c in plan.changes],
        "trace": [t.to_dict() for t in plan.trace],
    }
