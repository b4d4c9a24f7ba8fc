"""Which measured configuration to recommend: the precision and torch.compile trials at the main batch, chosen
so that noise cannot flip the answer, and only where the measurement applies to the recommended batch.

The trials run at the main batch: every precision in its plain variant, and torch.compile at the sweep's
precision. Two of them tie when their throughputs differ by no more than their measured spread (the sum of
their steps' relative IQRs) or TIE_FLOOR, whichever is larger (TIE_FLOOR: the largest spread a GPU-bound
configuration showed when timed again in one collection, docs/accuracy.md); among tied configurations the
simplest is kept (COST: fp32 < tf32 < bf16 < fp16, eager < compiled), so that two hosts of one GPU type give
the same settings. The recommendation is one configuration that was measured, never a product of gains
measured apart (fp16 eager +22 % and bf16 compiled +36 % say nothing of fp16 compiled).

Where the collector timed the same trials again at the sweep's knee (sweep "knee", workloads collector 6), the
choice is made there, among configurations timed at the batch recommended (advice.py `timed_choice`).

A trial at the main batch speaks for the recommended batch only where both are in one regime
(planner/plan/judge.py `same_regime`): a gain measured where the host sets a 30 ms step says nothing of a
GPU-bound step at 64× the batch. Otherwise the sweep's own configuration is kept, and the reason says so. Nor is
one regime enough to carry a trial's gain to another batch (advice.py `at_a_timed_batch`): the configuration
recommended is timed at the batch recommended.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from planner.model.split import COMPILED, PLAIN_VARIANTS

TIE_FLOOR = 0.03
PRECISION_COST = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 3}
COMPILE_COST = 4   # a compiled step: minutes of compiling, recompiles on new shapes, a second code path


@dataclass(frozen=True)
class Trial:
    point: WorkloadPoint

    @property
    def precision(self) -> str:
        return self.point.precision

    @property
    def compiled(self) -> bool:
        return self.point.variant == COMPILED

    @property
    def throughput(self) -> float:
        return self.point.throughput_per_s or 0.0

    @property
    def spread(self) -> float:
        s = self.point.step_s
        return (s.q3 - s.q1) / s.median if s and s.median else 0.0

    @property
    def cost(self) -> int:
        return PRECISION_COST.get(self.precision, 9) + (COMPILE_COST if self.compiled else 0)

    @property
    def name(self) -> str:
        return f"{self.precision}{' compiled' if self.compiled else ''}"


def ties(a: Trial, b: Trial) -> bool:
    return abs(a.throughput / b.throughput - 1) <= max(TIE_FLOOR, a.spread + b.spread)


def trials(payload: WorkloadPayload, sweep_precision: str, supports_bf16: bool = True,
           sweep: str = "variant", batch: int | None = None) -> list[Trial]:
    """One plain trial per precision (the faster of its plain variants) and the compiled one: at the main batch
    (`sweep` "variant"), or at the sweep's knee ("knee": the same trials timed again there, workloads collector 6;
    `batch` keeps those of one knee where a document holds another's too)."""
    best: dict[str, WorkloadPoint] = {}
    for p in payload.points:
        if p.sweep != sweep or p.status != "ok" or not p.throughput_per_s or p.seq_len is not None \
                or (batch is not None and p.batch != batch):
            continue
        if p.precision == "bf16" and not supports_bf16:
            continue
        key = p.precision if p.variant in PLAIN_VARIANTS else (
            COMPILED if p.variant == COMPILED and p.precision == sweep_precision else None)
        if key and (key not in best or p.throughput_per_s > best[key].throughput_per_s):
            best[key] = p
    return [Trial(p) for p in best.values()]


@dataclass(frozen=True)
class Choice:
    chosen: Trial | None       # the configuration recommended (None: no trials)
    baseline: Trial | None     # the sweep's own: plain, at the sweep's precision
    best: Trial | None         # the fastest measured, which `chosen` ties with or is
    applies: bool              # the trials speak for the recommended batch
    candidates: list[Trial]

    @property
    def ratio(self) -> float:
        """Throughput of the chosen configuration over the baseline's, at the main batch (1: the baseline)."""
        if not self.chosen or not self.baseline or self.chosen is self.baseline:
            return 1.0
        return self.chosen.throughput / self.baseline.throughput

    @property
    def tied(self) -> bool:
        return self.chosen is not None and self.best is not None and self.chosen is not self.best

    def timed_elsewhere(self, batch: int) -> bool:
        """A trial other than the sweep's own was chosen, and it was timed at another batch than `batch`: its gain
        says nothing there (advice.at_a_timed_batch)."""
        return self.applies and self.chosen is not None and self.baseline is not None \
            and self.chosen is not self.baseline and self.chosen.point.batch != batch

    def sweeps_own(self) -> Choice:
        """The sweep's own configuration kept, the trials not applied."""
        return replace(self, chosen=self.baseline, applies=False)


def choose(payload: WorkloadPayload, sweep_precision: str, supports_bf16: bool, applies: bool,
           sweep: str = "variant", batch: int | None = None) -> Choice:
    found = trials(payload, sweep_precision, supports_bf16, sweep, batch)
    baseline = next((t for t in found if t.precision == sweep_precision and not t.compiled), None)
    if not found:
        return Choice(None, None, None, applies, [])
    best = max(found, key=lambda t: t.throughput)
    if not applies:
        return Choice(baseline or best, baseline, best, False, found)
    chosen = min((t for t in found if t is best or ties(t, best)), key=lambda t: (t.cost, -t.throughput))
    return Choice(chosen, baseline, best, True, found)
