"""A plan's targets: the measured GPU with its recommendations and answers, and every other GPU or instance with the
source's settings at the batch predicted there, each with its predictions, bands and memory capacity."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuplan_schema.payloads import Allocator, WorkloadPayload
from gpuplan_schema.payloads.workloads import KNEE
from gpuplan_schema.results import MachineResults
from planner.check.bands import measured_band, with_band
from planner.model.dataloader_verdict import FeedVerdict
from planner.model.host import load_feed
from planner.model.memory import MemoryFit
from planner.model.performance import (
    Prediction,
    iter_predictions,
    run_precision,
    target_rates,
)
from planner.plan.advice import MAIN_PRECISION, advise_workload
from planner.plan.alignment import recommend_alignment
from planner.plan.choice import Choice, trials
from planner.plan.expect import (
    Expected,
    build_expected,
    cap_by_input,
    exact_prediction,
    knee_prediction,
    on_another_host,
)
from planner.plan.judge import judge, judge_on_target, plain_point
from planner.plan.presets import Preset, render_presets_yaml
from planner.plan.recommend import Recommendation
from planner.plan.settings import Settings
from planner.plan.source import Source
from planner.plan.untimed import Untimed, untimed_of
from planner.specs import GpuSpec
from planner.specs.require import require_target
from planner.units import format_count, short_rate


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


def trace_command(machine: MachineResults, payload: WorkloadPayload) -> str:
    """The command that traces a user's model file beside its measurement (a built-in workload has its profiles)."""
    if not payload.source.endswith(".py"):
        return ""
    return f"gpuplan trace {payload.source}:build --out {machine.folder.parent} --machine {machine.folder.name}"


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
            fit = source.memory_fit(payload, precision)
            if fit is None:
                continue
            fits[(payload.workload, precision)] = fit
            expandable = source.memory_fit(payload, precision, "expandable_segments")
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
        target.untimed[payload.workload] = untimed_of(payload, source.rooflines, any(
            r.workload == payload.workload for r in source.trace_rooflines), trace_command(machine, payload))
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
    same_arch = same_architecture(gpu, source.spec)
    predictions = [with_band(p, source.bands, gpu.name) for w in source.machine.workloads
                   for p in iter_predictions(w, source.rates, rates, same_arch, source.split_rooflines, gpu)]
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


def same_architecture(a: GpuSpec, b: GpuSpec) -> bool:
    return (a.compute_capability or "").split(".")[0] == (b.compute_capability or "").split(".")[0]
