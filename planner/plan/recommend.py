"""Recommendations for one workload on the measured machine, each with its reason and the numbers behind
it, and three presets (conservative, balanced, aggressive) as copy-paste YAML.

Every setting comes from a measurement of this machine: the batch from the throughput knee of the
main precision's sweep (the smallest batch within KNEE of the best; never a batch that did not run),
under the memory model's safety margin; the precision, torch.compile, channels_last and
cudnn.benchmark from the main-batch trials; the data loader from the dataloader collector; the
allocator from the boundaries searched with and without expandable segments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.payloads.workloads import KNEE  # the knee: the smallest batch within 5% of the best measured
from planner.model.dataloader_verdict import FeedVerdict
from planner.model.memory import SAFETY_MARGIN, MemoryFit
from planner.plan.choice import Choice, Trial, ties
from planner.units import format_count, short_rate

WARMUP_FRACTION = 0.05  # linear warm-up over the first 5% of steps when the learning rate is scaled up
ALLOCATOR_GAIN = 0.05   # recommend expandable segments from a 5% larger boundary
EXPANDABLE_SETTING = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


DEFAULT_WORKERS = 4    # a common starting point where nothing was measured (said so in the reason)
MEASURE_LOADER = "measure with `gpuplan collect --only dataloader`"


@dataclass(frozen=True)
class Recommendation:
    """One setting for one workload. `value` is for people; `choice` is the same setting for programs
    (the precision's dtype name, the batch as digits, 'true'/'false', the allocator string), and `gain` the
    measured throughput change behind it where there is one (0.38: +38 %)."""

    workload: str
    setting: str
    value: str
    reason: str
    choice: str = ""
    gain: float | None = None
    amount: int | None = None   # the batch or the worker count as a number: Settings reads it, never the text
    measured: bool = True       # False: a stated default (loader workers where nothing measured the input)

    def to_dict(self) -> dict:
        return {"workload": self.workload, "setting": self.setting, "value": self.value, "reason": self.reason,
                "choice": self.choice or self.value, "gain": self.gain, "measured": self.measured}


@dataclass(frozen=True)
class Knee:
    """The batch recommended: the sweep's knee, or the batch a faster trial was timed at (advice.at_a_timed_batch:
    then `timed` names the trial, `timed_per_s` is its figure and `sweep_knee` the knee it beat)."""

    batch: int
    throughput_per_s: float     # the sweep's (plain, MAIN_PRECISION) at `batch`
    best_batch: int
    best_throughput_per_s: float
    capped_by_memory: bool
    timed: str = ""
    timed_per_s: float | None = None
    sweep_knee: Knee | None = None
    rival: str = ""                   # the configuration chosen among the trials at the knee, which `timed` beat
    rival_per_s: float | None = None


def sweep_throughput(payload: WorkloadPayload, precision: str) -> dict[int, float]:
    return payload.sweep_throughput(precision)


def find_knee(payload: WorkloadPayload, precision: str, safe_batch: int | None) -> Knee | None:
    """The smallest measured batch within KNEE of the best, among those under the memory margin (one definition:
    WorkloadPayload.sweep_knee, which the roofline collector profiles)."""
    thr = payload.sweep_throughput(precision)
    allowed = {b: t for b, t in thr.items() if safe_batch is None or b <= safe_batch}
    knee = payload.sweep_knee(precision, KNEE, safe_batch)
    if knee is None:
        return None
    best = max(allowed, key=allowed.__getitem__)
    return Knee(knee, allowed[knee], best, allowed[best], len(allowed) < len(thr))


def main_trials(payload: WorkloadPayload) -> list[WorkloadPoint]:
    return [p for p in payload.points if p.sweep == "variant" and p.status == "ok" and p.throughput_per_s]


def _trial(payload: WorkloadPayload, precision: str, variants: tuple[str, ...]) -> WorkloadPoint | None:
    return next((p for p in main_trials(payload) if p.precision == precision and p.variant in variants), None)


HOW = {"bf16": "bf16 (torch.autocast)", "fp16": "fp16 (torch.autocast + GradScaler)",
       "tf32": "tf32 (torch.backends.cuda.matmul.allow_tf32 = True)", "fp32": "fp32"}


def recommend_precision(payload: WorkloadPayload, choice: Choice, not_applied: str = "") -> Recommendation | None:
    """The chosen configuration's precision, with the measured figures behind it (choice.py)."""
    chosen, best = choice.chosen, choice.best
    if chosen is None or best is None:
        return None
    unit = payload.unit
    fp32 = next((t for t in choice.candidates if t.precision == "fp32" and not t.compiled), None)
    by_speed = sorted(choice.candidates, key=lambda t: -t.throughput)
    figures = "; ".join(f"{t.name} {short_rate(t.throughput)}" for t in by_speed)
    if not choice.applies:
        why = f"the trials at batch {format_count(chosen.point.batch)} do not apply at the recommended batch " \
              f"({not_applied}): the sweep's {chosen.precision} is kept ({payload.known} there: {figures} {unit}/s)"
    elif choice.tied:
        why = f"ties with the fastest, {best.name} ({short_rate(best.throughput)} against " \
              f"{short_rate(chosen.throughput)} {unit}/s, within their measured spread), and is simpler " \
              f"(at batch {format_count(best.point.batch)}: {figures} {unit}/s)"
    else:
        vs = f", {chosen.throughput / fp32.throughput:.2f}× fp32's" if fp32 and fp32 is not chosen else ""
        why = f"fastest at batch {format_count(chosen.point.batch)}: {short_rate(chosen.throughput)} {unit}/s{vs} " \
              f"({figures})"
    return Recommendation(payload.workload, "precision", HOW.get(chosen.precision, chosen.precision), why,
                          chosen.precision, precision_gain(choice))


def precision_gain(choice: Choice) -> float | None:
    """The chosen precision's eager trial against fp32's (TF32 off, PyTorch's default) at the batch both ran."""
    chosen = choice.chosen
    eager = [t for t in choice.candidates if not t.compiled and chosen and t.point.batch == chosen.point.batch]
    fp32 = next((t for t in eager if t.precision == "fp32"), None)
    mine = next((t for t in eager if chosen and t.precision == chosen.precision), None)
    return mine.throughput / fp32.throughput - 1 if fp32 and mine and mine is not fp32 and fp32.throughput else None


def recommend_batch(payload: WorkloadPayload, knee: Knee, fit: MemoryFit | None, card_bytes: int | None,
                    reference: int, sweep_precision: str = "bf16") -> list[Recommendation]:
    memory = ""
    if fit and card_bytes:
        memory = (f"; the memory model puts the boundary at {format_count(fit.max_batch(card_bytes))} "
                  f"({'usable memory measured' if fit.usable_measured else 'assumed usable memory'}), "
                  f"{SAFETY_MARGIN:.0%} margin "
                  f"→ at most {format_count(fit.safe_batch(card_bytes))}")
    at_main = payload.sweep_throughput(sweep_precision).get(reference)
    gain = knee.throughput_per_s / at_main - 1 if at_main and knee.batch != reference else None
    out = [Recommendation(payload.workload, "batch_size", str(knee.batch), _batch_reason(payload, knee, sweep_precision)
                          + memory, str(knee.batch), gain, knee.batch)]
    if knee.batch > reference:
        ratio = knee.batch / reference
        out.append(Recommendation(payload.workload, "learning_rate",
                                  f"× {ratio:g} (linear scaling), warm-up over the first {WARMUP_FRACTION:.0%} "
                                  "of steps",
                                  f"the batch grows {ratio:g}× from the reference {reference}: scale the learning rate "
                                  "with it and warm up linearly (Goyal et al.'s rule)"))
    elif knee.batch < reference:
        steps = math.ceil(reference / knee.batch)
        out.append(Recommendation(payload.workload, "gradient_accumulation", str(steps),
                                  f"to keep the reference global batch of {reference} at batch {knee.batch}, "
                                  f"accumulate {steps} micro-batches per optimizer step (the learning rate stays)"))
    return out


def _batch_reason(payload: WorkloadPayload, knee: Knee, sweep_precision: str) -> str:
    unit = payload.unit
    sweep = knee.sweep_knee or knee
    words = (f"the throughput knee of the {sweep_precision} sweep: {short_rate(sweep.throughput_per_s)} {unit}/s at "
             f"batch {format_count(sweep.batch)}, within {KNEE:.0%} of the best {payload.known} "
             f"({short_rate(sweep.best_throughput_per_s)} at batch {format_count(sweep.best_batch)})")
    if not knee.timed or knee.timed_per_s is None:
        return words
    if knee.rival and knee.rival_per_s is not None:  # the trials timed at the knee too: the fastest of them
        words = (f"{knee.rival} at the {sweep_precision} sweep's knee, batch {format_count(sweep.batch)}: "
                 f"{short_rate(knee.rival_per_s)} {unit}/s, the fastest configuration timed there")
    return (f"the batch {knee.timed} was timed at: {short_rate(knee.timed_per_s)} {unit}/s, more than {words}; "
            f"its gain is not carried to a batch it was not timed at")


def recommend_variants(payload: WorkloadPayload, precision: str, choice: Choice) -> list[Recommendation]:
    """torch.compile as the choice made it; channels_last and cudnn.benchmark where they beat their measured spread
    (a tie keeps PyTorch's default: 'either')."""
    base = _trial(payload, precision, ("default",))
    if base is None:
        return []
    out = []
    compiled = next((t for t in choice.candidates if t.compiled), None)
    # compiled against eager at the batch both were timed at (the knee's trials, where the choice was made there)
    eager = next((t.point for t in choice.candidates if t.precision == precision and not t.compiled), base) \
        if compiled and compiled.point.sweep == "knee" else base
    if compiled and compiled.point.step_s and eager.step_s:
        gain = compiled.throughput / eager.throughput_per_s - 1  # type: ignore[operator]
        saved = eager.step_s.median - compiled.point.step_s.median
        even = ""
        if saved > 0 and compiled.point.compile_s:
            even = f"; it pays back its {compiled.point.compile_s:.0f} s of compiling after " \
                   f"{math.ceil(compiled.point.compile_s / saved)} steps"
        on = choice.chosen is compiled
        why = "" if on or gain <= 0 else "; not recommended: " + (
            f"{payload.known} at another regime's batch" if not choice.applies else
            f"{choice.chosen.name} ties with it or beats it and is simpler" if choice.chosen else "")
        out.append(Recommendation(payload.workload, "torch_compile", "yes" if on else "no",
                                  f"{payload.known} {gain:+.0%} throughput in {precision} at batch "
                                  f"{format_count(compiled.point.batch)}{even}{why}",
                                  "true" if on else "false", gain))
    for variant, setting, on_means in (("contiguous", "channels_last", "channels_last"),
                                       ("no_cudnn_benchmark", "cudnn_benchmark", "autotuning")):
        other = next((p for p in main_trials(payload) if p.precision == precision and variant in p.variant
                      and "compile" not in p.variant), None)
        if other is None or (setting == "channels_last" and "contiguous" not in other.variant):
            continue
        gain = base.throughput_per_s / other.throughput_per_s - 1  # type: ignore[operator]
        on = not ties(Trial(base), Trial(other)) and gain > 0
        out.append(Recommendation(payload.workload, setting, "yes" if on else "either",
                                  f"{on_means} gives {gain:+.1%} throughput at batch {base.batch} "
                                  f"({short_rate(base.throughput_per_s)} against {short_rate(other.throughput_per_s)} "
                                  f"{payload.unit}/s{'' if on else ', within their measured spread'})",
                                  "true" if on else "either", gain))
    return out


def recommend_loader(payload: WorkloadPayload, feed: FeedVerdict | None, cores: int | None) -> list[Recommendation]:
    """DataLoader workers from the loader measurement where it applies to the workload; otherwise a stated
    default (never a bare number: the reason says it was not measured and how to measure it)."""
    if feed is None or not feed.applies:
        why = "no loader measurement here" if feed is None else "the JPEG loader measured is not its input"
        value = str(min(DEFAULT_WORKERS, max(1, (cores or 2) - 1)))
        reason = f"not measured ({why}): {value} is a default, {MEASURE_LOADER}"
    elif feed.workers_needed is None:
        value = str(max(1, (cores or 2) - 1))
        reason = f"no measured worker count keeps up, so all cores but one: {feed.sentence}"
    else:
        value, reason = str(feed.workers_needed), feed.sentence
    measured = feed is not None and feed.applies
    return [Recommendation(payload.workload, "num_workers", value, reason, value, amount=int(value), measured=measured),
            Recommendation(payload.workload, "pin_memory / persistent_workers / prefetch_factor", "true / true / 2",
                           "pinned memory makes the host → device copy asynchronous (non_blocking); persistent "
                           "workers skip the re-fork at each epoch; prefetch 2 is torch's default"
                           + (", which the measured sweep did not beat by more than its spread" if measured
                              else f" (not measured for this workload: {MEASURE_LOADER})"), "true/true/2")]


def recommend_allocator(payload: WorkloadPayload, precision: str) -> list[Recommendation]:
    """Expandable segments where they let a measurably larger batch fit (the two boundary searches)."""
    gain = payload.expandable_gain(precision)
    if gain is None or gain < ALLOCATOR_GAIN:
        return []
    default, expandable = payload.boundary(precision), payload.boundary(precision, "expandable_segments")
    return [Recommendation(payload.workload, "allocator", EXPANDABLE_SETTING,
                           f"the largest {precision} batch that fits grows from {default.max_batch} to "
                           f"{expandable.max_batch} (+{gain:.0%}): with the default allocator, freed blocks too "
                           "small for the next large request take the rest (fragmentation); set it in the "
                           "environment before the job starts, and only needed near the memory limit",
                           "expandable_segments:True", gain)]
