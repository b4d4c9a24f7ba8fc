"""Error bands from measured residuals: each prediction's band is the spread of the errors that comparable
predictions made where the answer was then measured.

Comparable: the same regime (the source configuration's bound, planner/model/bound.py) and the same kind
of jump (same architecture: compute capability major equal, e.g. H100 → H200; or another one). The
residuals are the H100 ↔ H200 accuracy rows (planner/model/accuracy.py, both directions, every
configuration) for the same architecture, and the published cross-architecture check
(planner/model/crossarch.py) for another. With e = predicted / measured − 1 for each, the measured value
lay at 1 / (1 + e) of the prediction, so the band is

    low  = 90th percentile over residuals of (1 − 1 / (1 + e))   (how far below the prediction measurements fell)
    high = 90th percentile over residuals of (1 / (1 + e) − 1)   (how far above)

(nearest rank, so the largest where there are fewer than ten), each at least the regime's median repeat
spread (planner/model/repeatability.py: how far a second measurement of the same configuration on the
same machine moved) and at
least FLOOR. Nothing comparable measured: ±NO_COMPARABLE, labelled
"no comparable measurement".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gpuplan_schema.results import MachineResults
from planner.model.accuracy import iter_accuracy_tables
from planner.model.crossarch import CrossCheck, build_crosscheck
from planner.model.performance import Prediction
from planner.model.repeatability import all_repeat_pairs, regime_spread

FLOOR = 0.03
NO_COMPARABLE = 0.50
NO_COMPARABLE_BASIS = "no comparable measurement"


@dataclass(frozen=True)
class Band:
    low: float
    high: float
    basis: str


@dataclass(frozen=True)
class BandTable:
    residuals: dict[tuple[bool, str], list[float]]   # (same architecture, bound) → signed errors
    repeat_spread: dict[str, float] = field(default_factory=dict)  # bound → median repeat spread

    def band(self, same_architecture: bool, bound: str) -> Band:
        errors = self.residuals.get((same_architecture, bound), [])
        if not errors:
            return Band(NO_COMPARABLE, NO_COMPARABLE, NO_COMPARABLE_BASIS)
        floor = max(FLOOR, self.repeat_spread.get(bound, 0.0))
        low = max(floor, _p90([1 - 1 / (1 + e) for e in errors]))
        high = max(floor, _p90([1 / (1 + e) - 1 for e in errors]))
        kind = "same architecture" if same_architecture else "other architectures"
        return Band(low, high, f"90% of {len(errors)} measured {bound}-bound predictions, {kind}")


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def build_band_table(machines: Sequence[MachineResults], crosschecks: Sequence[CrossCheck] = ()) -> BandTable:
    residuals: dict[tuple[bool, str], list[float]] = {}
    for table in iter_accuracy_tables(machines):
        for row in table.rows:
            residuals.setdefault((True, row.bound), []).append(row.error)
    for check in crosschecks:
        for r in check.rows:
            # H100 → H200 rows of the published check are the same architecture
            residuals.setdefault((r.gpu in _same_arch_gpus(check), r.bound), []).append(r.error)
    spread = regime_spread(all_repeat_pairs(machines))
    return BandTable(residuals, spread)


def _same_arch_gpus(check: CrossCheck) -> set[str]:
    from planner.specs import match_gpu
    ref = match_gpu(check.reference)
    major = (ref.compute_capability or "")[:1] if ref else ""
    return {r.gpu for r in check.rows if (g := match_gpu(r.gpu)) and (g.compute_capability or "")[:1] == major}


def band_table_for(machines: Sequence[MachineResults]) -> BandTable:
    """The band table from every loaded machine: accuracy pairs and each machine's published check."""
    checks = [c for c in (build_crosscheck(m) for m in machines if m.ceilings and m.workloads) if c]
    return build_band_table(machines, checks)


def with_band(prediction: Prediction, table: BandTable) -> Prediction:
    band = table.band(prediction.same_architecture, prediction.bound)
    return replace(prediction, band_low=band.low, band_high=band.high, band_basis=band.basis)


def measured_band(prediction: Prediction) -> Prediction:
    """The source GPU's own configurations: measured, not predicted."""
    return replace(prediction, band_low=0.0, band_high=0.0, band_basis="measured")
