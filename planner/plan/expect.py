"""The throughput to expect with a workload's recommended settings, its range, and what bounds it there.

The batch sweep runs in one precision (bf16), eager; the precision and torch.compile trials run at the main
batch. The recommended settings are one measured configuration (planner/plan/choice.py) at the sweep's knee,
so the expectation is, in this order of preference:

- measured: the configuration itself was timed at the recommended batch (its median, its IQR as the range);
- carried: the sweep's figure at the recommended batch × the chosen configuration's measured ratio over the
  sweep's own at the main batch (the range adds the two measurements' spreads). The plan no longer recommends
  such a configuration (advice.py `at_a_timed_batch`: a gain timed at one batch was 26 % and 43 % off at
  another); the path stays for a payload whose trial point is missing at the batch it names;
- predicted, on another GPU: the prediction of the recommended configuration itself where the source timed it at
  the recommended batch (a torch.compile trial predicted with its own host share: compiling removes most of the
  host's issue time, so an eager twin's host band does not apply to it); else the prediction at the recommended
  batch × that ratio. Its band is the prediction's. The ranking reads this figure for a job at the recommended
  precision (planner/plan/jobs.py `plan_answers`).

Then the input pipeline: where the measured data loader feeds fewer samples than that, the expected figure
is what it feeds, and the bound says input (the GPU's own figure is kept beside it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from planner.model.performance import PLAIN_VARIANTS, Prediction
from planner.plan.bounds import BoundKind
from planner.plan.choice import Choice
from planner.plan.judge import Judgement
from planner.plan.settings import Settings
from planner.units import format_count, short_rate

WIDE = 0.25   # a range wider than ± this says why beside it, wherever it is shown


@dataclass(frozen=True)
class Expected:
    throughput_per_s: float
    low_per_s: float
    high_per_s: float
    unit: str
    basis: str              # where the figure comes from, one sentence
    judgement: Judgement    # what bounds the step with these settings, and how that was judged
    how: str = "measured"   # measured, carried or predicted
    gpu_per_s: float | None = None   # what the GPU alone does, where the input pipeline caps the figure
    band_basis: str = ""    # a prediction's: what its band was built from (planner/check/bands.py)

    @property
    def bound(self) -> str:
        return self.judgement.kind.value

    @property
    def bound_words(self) -> str:
        return self.judgement.words

    @property
    def bound_hint(self) -> str:
        return self.judgement.hint

    @property
    def half_width(self) -> float:
        """The range's larger half, relative to the figure."""
        t = self.throughput_per_s
        return max(t - self.low_per_s, self.high_per_s - t) / t if t else 0.0

    @property
    def wide_note(self) -> str:
        """Why the range is wide, where it is wider than ±WIDE (every screen shows it beside the range)."""
        if self.half_width <= WIDE:
            return ""
        why = self.band_basis if self.band_basis else "the measurements' own spread"
        return f"±{self.half_width:.0%}: {why}"

    def to_dict(self) -> dict:
        return {"throughput_per_s": self.throughput_per_s, "low_per_s": self.low_per_s,
                "high_per_s": self.high_per_s, "unit": self.unit, "basis": self.basis, "how": self.how,
                "gpu_per_s": self.gpu_per_s, "band_basis": self.band_basis or None, "wide": self.wide_note or None,
                "bound": self.judgement.to_dict()}


def spread(point: WorkloadPoint | None) -> float:
    """Half the step's relative IQR: the measurement's own uncertainty."""
    s = point.step_s if point else None
    return (s.q3 - s.q1) / 2 / s.median if s and s.median else 0.0


def exact_trial(payload: WorkloadPayload, settings: Settings) -> WorkloadPoint | None:
    """The recommended configuration itself, timed at the recommended batch (a trial at the main batch or knee)."""
    want = "compile" if settings.torch_compile else None
    return next((p for p in payload.points if p.sweep in ("variant", "knee") and p.status == "ok"
                 and p.batch == settings.batch and p.precision == settings.precision and p.seq_len is None
                 and p.throughput_per_s
                 and (p.variant == want if want else p.variant in PLAIN_VARIANTS)), None)


def exact_prediction(predictions: list[Prediction], settings: Settings) -> Prediction | None:
    """The prediction of the recommended configuration itself on another GPU: its workload, precision, batch and
    torch.compile choice, where the source timed that configuration (a trial at the main batch or the knee)."""
    return next((p for p in predictions if p.workload == settings.workload and p.precision == settings.precision
                 and p.batch == settings.batch and p.seq_len is None
                 and (p.variant == "compile" if settings.torch_compile else p.variant in PLAIN_VARIANTS)), None)


def build_expected(payload: WorkloadPayload, settings: Settings, choice: Choice, base: WorkloadPoint | None,
                   judgement: Judgement, prediction: Prediction | None = None,
                   exact_predicted: Prediction | None = None) -> Expected | None:
    """`base`: the sweep's point at the recommended batch (on the measured GPU); `prediction`: its prediction on
    another GPU (then `base` only names the batch); `exact_predicted`: the recommended configuration's own
    prediction there, where there is one (exact_prediction)."""
    exact = exact_trial(payload, settings) if prediction is None else None
    if exact is not None:
        e = spread(exact)
        t = exact.throughput_per_s or 0.0
        basis = f"measured {short_rate(t)} with these settings at batch {format_count(exact.batch)}"
        return Expected(t, t * (1 - e), t * (1 + e), payload.unit, basis, judgement, "measured")
    if exact_predicted is not None and (exact_predicted.variant == "compile" or choice.ratio != 1.0):
        return predicted_as_recommended(payload, exact_predicted, judgement)
    ratio = choice.ratio
    parts = ""
    if ratio != 1.0 and choice.chosen and choice.baseline:
        parts = f" × {ratio:.2f} for {choice.chosen.name} over {choice.baseline.name} (both measured at batch " \
                f"{choice.chosen.point.batch}, in the same regime)"
    if prediction is not None:
        t0, low, high = prediction.throughput_per_s, prediction.band_low, prediction.band_high
        how = f"{prediction.precision}, eager" + (f"; {prediction.stand_in_words}" if prediction.measured_precision
                                                   else "")
        basis = f"predicted {short_rate(t0)} at batch {format_count(prediction.batch)} ({how})" + \
            parts + f"; band −{low:.0%}/+{high:.0%} ({prediction.band_basis})"
        t = t0 * ratio
        return Expected(t, t * (1 - low), t * (1 + high), payload.unit, basis, judgement, "predicted",
                        band_basis=prediction.band_basis)
    if base is None or not base.throughput_per_s:
        return None
    e = spread(base) + (spread(choice.chosen.point) + spread(choice.baseline.point)
                        if parts and choice.chosen and choice.baseline else 0.0)
    t = base.throughput_per_s * ratio
    basis = (f"measured {short_rate(base.throughput_per_s)} at batch {format_count(base.batch)} "
             f"({base.precision}, eager){parts}")
    return Expected(t, t * (1 - e), t * (1 + e), payload.unit, basis, judgement, "carried" if parts else "measured")


def predicted_as_recommended(payload: WorkloadPayload, p: Prediction, judgement: Judgement) -> Expected:
    """The recommended configuration's own prediction, with its own band."""
    t = p.throughput_per_s
    how = f"{p.precision}, {'torch.compile' if p.variant == 'compile' else 'eager'}" + \
        (f"; {p.stand_in_words}" if p.measured_precision else "")
    basis = (f"predicted {short_rate(t)} at batch {format_count(p.batch)} ({how}: the configuration recommended, as "
             f"measured on the source); band −{p.band_low:.0%}/+{p.band_high:.0%} ({p.band_basis})")
    return Expected(t, t * (1 - p.band_low), t * (1 + p.band_high), payload.unit, basis, judgement, "predicted",
                    band_basis=p.band_basis)


def on_another_host(expected: Expected, low: float, high: float, basis: str) -> Expected:
    """A measured figure's range as a user renting the same GPU type meets it: its own repeat spread or what another
    host of the type moves it by (bands.BandTable.host_band), whichever is wider."""
    t = expected.throughput_per_s
    return replace(expected, low_per_s=min(expected.low_per_s, t * (1 - low)),
                   high_per_s=max(expected.high_per_s, t * (1 + high)), band_basis=basis)


def cap_by_input(expected: Expected, feed_per_s: float | None, feed_what: str) -> Expected:
    """The figure the measured input pipeline allows: where it feeds less than the GPU takes, that, input-bound."""
    if feed_per_s is None or feed_per_s >= expected.throughput_per_s:
        return expected
    j = expected.judgement
    judged = Judgement(BoundKind.INPUT, j.batch, j.precision,
                       f"{feed_what} feeds at most {short_rate(feed_per_s)} {expected.unit}/s, less than the "
                       f"GPU's {short_rate(expected.throughput_per_s)} ({j.label} on its own: {j.how})",
                       {}, "input")
    scale = feed_per_s / expected.throughput_per_s
    # the loader's best measured rate is a ceiling: nothing above it, the GPU's own spread below it
    return replace(expected, throughput_per_s=feed_per_s, low_per_s=expected.low_per_s * scale, high_per_s=feed_per_s,
                   basis=f"{expected.basis}; capped by the input pipeline", judgement=judged,
                   gpu_per_s=expected.throughput_per_s)


def knee_prediction(predictions: list[Prediction], workload: str, precision: str, batch: int | None
                    ) -> Prediction | None:
    """The prediction of the sweep point at `batch` (plain variant, no sequence sweep): the last of them, as
    the plan's predicted knee takes it (a batch's trial and sweep point are both plain; the sweep comes last)."""
    found = [p for p in predictions if p.workload == workload and p.precision == precision
             and p.batch == batch and p.variant in PLAIN_VARIANTS and p.seq_len is None]
    return found[-1] if found else None
