"""One workload's advice on the measured GPU: its recommendations, then the settings and presets read
from them (the recommendations are the one source; settings.py and presets.py only read them)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import DataloaderPayload, RooflinePayload, WorkloadPayload, WorkloadPoint
from gpuplan_schema.payloads.workloads import MAIN_BATCH, MAIN_PRECISION  # the contract's, the collectors' too
from planner.model.dataloader_verdict import FeedVerdict, workload_feed
from planner.model.memory import fit_memory
from planner.model.performance import Rates
from planner.model.workload_verdict import main_batch, plain_point
from planner.plan.choice import Choice, Trial, choose, ties
from planner.plan.expect import exact_trial
from planner.plan.judge import Judgement, judge, same_regime
from planner.plan.presets import Bounds, Preset, build_presets
from planner.plan.recommend import (
    Knee,
    Recommendation,
    find_knee,
    recommend_allocator,
    recommend_batch,
    recommend_loader,
    recommend_precision,
    recommend_variants,
)
from planner.plan.settings import Settings, settings_from
from planner.specs import GpuSpec
from planner.units import short_rate


@dataclass(frozen=True)
class WorkloadAdvice:
    recommendations: list[Recommendation]
    settings: Settings
    knee: Knee | None
    presets: list[Preset]
    choice: Choice
    judgement: Judgement | None     # the bound at the recommended batch (judge.py), None without a sweep
    feed: FeedVerdict | None = None  # the measured loader against the recommended configuration's GPU rate


def judge_choice(payload: WorkloadPayload, knee: Knee | None, supports_bf16: bool, rooflines: list[RooflinePayload],
                 rates: Rates | None) -> tuple[Choice, Judgement | None, str]:
    """The bound at the knee, and the trials chosen where they apply there (choice.py): (choice, judgement at the
    knee, why the trials do not apply where they do not)."""
    main = main_batch(payload)
    at_knee = judge(payload, knee.batch, MAIN_PRECISION, rooflines, rates) if knee else None
    at_main = judge(payload, main, MAIN_PRECISION, rooflines, rates) if main else None
    applies = at_knee is None or at_main is None or same_regime(at_main, at_knee)
    why = "" if applies else f"there the step is {at_main.label}, at batch {knee.batch} {at_knee.label}"  # type: ignore
    return choose(payload, MAIN_PRECISION, supports_bf16, applies), at_knee, why


def knee_choice(payload: WorkloadPayload, knee: Knee | None, supports_bf16: bool) -> Choice | None:
    """The choice among the trials timed again at the knee (workloads collector 6), where they were; else None."""
    if knee is None:
        return None
    found = choose(payload, MAIN_PRECISION, supports_bf16, True, sweep="knee", batch=knee.batch)
    # None where none was timed at this knee: the memory margin moved it, or the collector's knee (from the sweep's
    # first timings) was another batch than the plan's (from the steady timing that replaced them)
    return found if found.chosen is not None else None


def timed_choice(payload: WorkloadPayload, knee: Knee | None, choice: Choice, judgement: Judgement | None, why: str,
                 supports_bf16: bool, rooflines: list[RooflinePayload], rates: Rates | None
                 ) -> tuple[Knee | None, Choice, Judgement | None, str]:
    """The configuration recommended, timed at the batch recommended. Where the trials were timed again at the knee,
    the choice among them (no regime question: they ran there), unless the main batch's chosen trial is faster
    (at_a_timed_batch then moves the batch to it); else at_a_timed_batch on the main batch's trials alone."""
    at_knee = knee_choice(payload, knee, supports_bf16)
    if at_knee is None:
        return at_a_timed_batch(payload, knee, choice, judgement, rooflines, rates) if not why \
            else (knee, choice, judgement, why)
    if why or not choice.timed_elsewhere(knee.batch):  # type: ignore[union-attr]
        return knee, at_knee, judgement, ""
    return at_a_timed_batch(payload, knee, choice, judgement, rooflines, rates, at_knee)


def at_a_timed_batch(payload: WorkloadPayload, knee: Knee | None, choice: Choice, judgement: Judgement | None,
                     rooflines: list[RooflinePayload], rates: Rates | None, at_knee: Choice | None = None
                     ) -> tuple[Knee | None, Choice, Judgement | None, str]:
    """The recommendation is a configuration timed at the batch recommended: a trial's gain is not carried to a
    batch it was not timed at. Timed on an H100 on 2026-11-27 (benchmarks/recommended_check.py): BERT-base's
    torch.compile gained +30 % at its trial batch (160) and +5 % at the knee (320); dlrm-small's fp32 ran ×1.07
    bf16's at 16,384 and ×0.73 at the knee (1,048,576), both pairs "in one regime". So where the chosen trial ran
    at another batch than the knee, the faster of the two measured configurations is recommended: the trial at its
    own batch, or the sweep's at the knee (the simpler where they tie); or, given `at_knee` (the trials timed again
    at the knee), that choice's configuration there (the knee's where they tie). Returns (knee, choice, judgement,
    why the trial is not taken)."""
    if knee is None or not choice.timed_elsewhere(knee.batch):
        return knee, choice, judgement, ""
    chosen = choice.chosen
    assert chosen is not None  # timed_elsewhere says so
    batch = chosen.point.batch
    rival = at_knee.chosen if at_knee else None
    there = rival.point if rival else plain_point(payload, knee.batch, MAIN_PRECISION)
    there_per_s = rival.throughput if rival else knee.throughput_per_s
    # a tie (within the two timings' spread) keeps the simpler configuration, as choice.py does at one batch
    if chosen.throughput > there_per_s and not (there and ties(chosen, Trial(there))):
        at_trial = payload.sweep_throughput(MAIN_PRECISION).get(batch, choice.baseline.throughput)
        moved = Knee(batch, at_trial, knee.best_batch, knee.best_throughput_per_s, knee.capped_by_memory,
                     timed=chosen.name, timed_per_s=chosen.throughput, sweep_knee=knee,
                     rival=rival.name if rival else "", rival_per_s=rival.throughput if rival else None)
        return moved, choice, judge(payload, batch, MAIN_PRECISION, rooflines, rates), ""
    if at_knee is not None:
        return knee, at_knee, judgement, ""
    why = (f"{chosen.name} was timed at batch {batch}, not at {knee.batch}, where the sweep is as fast or faster "
           f"({short_rate(knee.throughput_per_s)} against {short_rate(chosen.throughput)} {payload.unit}/s); a gain "
           f"is not carried to a batch it was not timed at")
    return knee, choice.sweeps_own(), judgement, why


def recommended_point(payload: WorkloadPayload, settings: Settings) -> WorkloadPoint | None:
    """The measured point of the recommended configuration: the trial itself, else the plain run at its batch."""
    if settings.batch is None:
        return None
    return exact_trial(payload, settings) or plain_point(payload, settings.batch, settings.precision)


def advise_workload(spec: GpuSpec, payload: WorkloadPayload, fits: dict, loader: DataloaderPayload | None,
                    cores: int | None, rooflines: list[RooflinePayload] = (), rates: Rates | None = None
                    ) -> WorkloadAdvice:
    """One workload's recommendations, then the settings and presets read from them. The batch comes from
    the sweep (MAIN_PRECISION) under the memory margin of both the sweep's and the recommended precision. The
    loader's workers come last, set against the GPU rate of the configuration recommended (a loader that feeds the
    main batch's eager step may starve the compiled step at the knee)."""
    card = spec.memory_bytes
    sweep_fit = fits.get((payload.workload, MAIN_PRECISION))

    def decide(knee: Knee | None) -> tuple[Knee | None, Choice, Judgement | None, str]:
        choice, judgement, why = judge_choice(payload, knee, spec.supports_bf16, list(rooflines), rates)
        return timed_choice(payload, knee, choice, judgement, why, spec.supports_bf16, list(rooflines), rates)

    knee, choice, judgement, why = decide(find_knee(payload, MAIN_PRECISION,
                                                    sweep_fit.safe_batch(card) if sweep_fit else None))
    precision = recommend_precision(payload, choice, why)
    chosen = precision.choice if precision else MAIN_PRECISION
    fit = fits.get((payload.workload, chosen)) or sweep_fit
    if fit is not None and fit is not sweep_fit and knee and knee.batch > fit.safe_batch(card):
        # the chosen precision needs more memory: the knee under its margin, and the choice made again there (a
        # configuration timed at the batch it is recommended at, never one timed at the knee given up)
        knee, choice, judgement, why = decide(find_knee(payload, MAIN_PRECISION, fit.safe_batch(card)))
        precision = recommend_precision(payload, choice, why)
        chosen = precision.choice if precision else MAIN_PRECISION
        fit = fits.get((payload.workload, chosen)) or sweep_fit
    mine = [precision] if precision else []
    if knee:
        mine += recommend_batch(payload, knee, fit, card, MAIN_BATCH.get(payload.workload, knee.batch),
                                MAIN_PRECISION)
    mine += recommend_variants(payload, MAIN_PRECISION, choice)
    mine += recommend_allocator(payload, chosen if payload.boundary(chosen) else MAIN_PRECISION)
    point = recommended_point(payload, settings_from(payload.workload, mine, MAIN_PRECISION, MAIN_PRECISION,
                                                     payload.known))
    feed = workload_feed(loader, payload, point) if loader else None
    mine += recommend_loader(payload, feed, cores)
    settings = settings_from(payload.workload, mine, MAIN_PRECISION, MAIN_PRECISION, payload.known)
    expandable = fit_memory(payload, chosen, card, "expandable_segments") if settings.allocator else None
    bounds = Bounds(fit.max_batch(card) if fit else None, fit.safe_batch(card) if fit else None,
                    expandable.safe_batch(card) if expandable and expandable.usable_measured else None)
    return WorkloadAdvice(mine, settings, knee, build_presets(settings, knee, bounds), choice,
                          judgement, feed)
