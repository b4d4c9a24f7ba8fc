"""The throughput to expect with a workload's recommended settings, with its band and what bounds it.

The batch sweep runs in one precision (bf16) and eager mode; the precision and torch.compile trials run at
the main batch. The recommended settings may combine them (fp16 at the knee batch, compiled), a
configuration no single run measured. So the expectation states its parts: the measured (or, on another
GPU, predicted) sweep figure at the recommended batch is the low end, and that figure times the measured
precision and compile ratios is the high end; the middle is their product, labelled as combined.
A prediction adds its own error band to both ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload
from planner.model.performance import PLAIN_VARIANTS, Prediction
from planner.model.recommend import main_trials
from planner.model.settings import Settings
from planner.units import format_count, short_rate

# Words for each bound of planner/model/bound.py (the one bound of a configuration), and what would help.
BOUND_WORDS = {
    "math": ("compute-bound", "matrix math takes most of the step; a faster GPU or a lower precision helps"),
    "memory": ("memory-bandwidth-bound", "moving bytes takes most of the step; fusing (torch.compile) or more "
                                         "bandwidth helps"),
    "latency": ("launch/latency-bound", "small kernels take most of the step; a larger batch, torch.compile or "
                                        "CUDA graphs help more than a faster GPU"),
    "host": ("host-bound", "the GPU waits for the host to issue kernels; a larger batch, torch.compile or CUDA "
                           "graphs help, a faster GPU does not"),
    "unattributed": ("bound not decided", "most of the step is below both roofs in ops no profile classified; "
                                          "`gpuplan collect --only roofline` decides it"),
}


@dataclass(frozen=True)
class Expected:
    throughput_per_s: float
    low_per_s: float
    high_per_s: float
    unit: str
    basis: str          # where the figure comes from, one sentence
    bound: str | None   # compute / memory / overhead, None where no prediction exists
    bound_words: str    # the bound and the step's parts, e.g. 'overhead-bound (step: 7% math, …)'
    bound_hint: str     # what would help, one clause
    shares: tuple[float, float, float] | None   # math, memory, rest: parts of the step


def trial_ratio(payload: WorkloadPayload, precision: str, against: str) -> float | None:
    """Throughput of `precision` over `against`, both plain runs at the main batch."""
    plain = {p.precision: p.throughput_per_s for p in main_trials(payload) if p.variant in PLAIN_VARIANTS}
    if precision == against:
        return 1.0
    return plain[precision] / plain[against] if plain.get(precision) and plain.get(against) else None


def build_expected(payload: WorkloadPayload, settings: Settings, sweep_precision: str, base: float,
                   base_what: str, prediction: Prediction | None) -> Expected:
    """`base`: the sweep's throughput at the recommended batch (measured, or `prediction`'s)."""
    factors, parts = 1.0, []
    ratio = trial_ratio(payload, settings.precision, sweep_precision)
    if ratio and abs(ratio - 1) >= 0.005:  # a ratio that prints as ×1.00 says nothing
        factors *= ratio
        parts.append(f"×{ratio:.2f} for {settings.precision}")
    if settings.torch_compile and settings.compile_gain:
        factors *= 1 + settings.compile_gain
        parts.append(f"×{1 + settings.compile_gain:.2f} for torch.compile")
    error = prediction.error if prediction and base_what.startswith("predicted") else 0.0
    central = base * factors
    low, high = min(base, central) * (1 - error), max(base, central) * (1 + error)
    basis = f"{base_what} {short_rate(base)} at batch {format_count(settings.batch)} ({sweep_precision}, eager)"
    if parts:
        basis += f"; {' and '.join(parts)}, each measured on its own at the main batch"
    if error:
        basis += f"; ±{error:.0%} prediction band"
    there = prediction.bound_there if prediction else None   # on the target: its own bound
    bound = there.name if there else None
    parts_of = there.shares if there else None
    shares = (parts_of["math"], parts_of["memory"], max(0.0, 1 - parts_of["math"] - parts_of["memory"])) \
        if parts_of else None
    words, hint = BOUND_WORDS.get(bound or "", ("bound not known", "no prediction of this point"))
    if shares:
        words += f" (step: {shares[0]:.0%} math, {shares[1]:.0%} memory, {shares[2]:.0%} host, launches and other)"
    return Expected(central, low, high, payload.unit, basis, bound, words, hint, shares)


def knee_prediction(predictions: list[Prediction], workload: str, precision: str, batch: int | None
                    ) -> Prediction | None:
    """The prediction of the sweep point at `batch` (plain variant, no sequence sweep): the last of them, as
    the plan's predicted knee takes it (a batch's trial and sweep point are both plain; the sweep comes last)."""
    found = [p for p in predictions if p.workload == workload and p.precision == precision
             and p.batch == batch and p.variant in PLAIN_VARIANTS and p.seq_len is None]
    return found[-1] if found else None
