"""Do the bands hold? Each measured truth the planner could have predicted, checked against the band it would
have been given without it.

The bands (planner/check/bands.py) are built from measured residuals, so checking a band against the residuals
it was built from would hold by construction. Here every residual is checked against the band table built
without its own group: without its workload for the H100 ↔ H200 rows (both directions, which mirror each
other), without its GPU for the published cross-architecture rows. The share inside is the coverage a user can
expect on a workload or GPU the bands have not seen (target ≥ TARGET_COVERAGE); the median half-width says
whether the bands are narrow enough to act on (HALF_WIDTH_TARGET, GPU-bound and host-bound).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gpuplan_schema.results import MachineResults
from planner.check.bands import BandTable, Residual, build_band_table
from planner.check.crossarch import CrossCheck

TARGET_COVERAGE = 0.90
HALF_WIDTH_TARGET = {"GPU-bound": 0.06, "host-bound": 0.15}
SCOPES = ((True, "same architecture"), (False, "other architectures"))


@dataclass(frozen=True)
class Check:
    residual: Residual
    low: float
    high: float
    basis: str

    @property
    def inside(self) -> bool:
        """The measurement lay at 1 / (1 + error) of the prediction: inside (1 − low) … (1 + high)?"""
        at = 1 / (1 + self.residual.error)
        return 1 - self.low - 1e-12 <= at <= 1 + self.high + 1e-12

    @property
    def half_width(self) -> float:
        return max(self.low, self.high)


@dataclass(frozen=True)
class CoverageGroup:
    scope: str        # same or other architectures
    regime: str       # GPU-bound or host-bound
    n: int
    inside: int
    median_half_width: float
    no_comparable: int   # checks that found nothing comparable left (the ±50% band)

    @property
    def coverage(self) -> float:
        return self.inside / self.n if self.n else 0.0

    @property
    def width_target(self) -> float:
        return HALF_WIDTH_TARGET[self.regime]

    @property
    def meets_coverage(self) -> bool:
        return self.coverage >= TARGET_COVERAGE

    @property
    def meets_width(self) -> bool:
        return self.median_half_width <= self.width_target


def regime_group(bound: str) -> str:
    return "host-bound" if bound == "host" else "GPU-bound"


def check_bands(table: BandTable) -> list[Check]:
    """Each residual against the band the table gives without its group: a measured pair's row without its
    workload, a published row of another architecture without its model (a user's model is not published), its
    GPU's rows of other models kept as the plan keeps them."""
    out = []
    for r in table.residuals:
        if r.same_architecture:
            band = table.without(r.group).band(True, r.host, r.compiled)
        else:  # a published row on another architecture: its model held out, its GPU's other rows kept
            band = table.without_family(r.family).band(False, r.host, r.compiled, r.gpu)
        out.append(Check(r, band.low, band.high, band.basis))
    return out


def summarise(checks: list[Check]) -> list[CoverageGroup]:
    out = []
    for same, scope in SCOPES:
        for regime in ("GPU-bound", "host-bound"):
            group = [c for c in checks if c.residual.same_architecture == same
                     and regime_group(c.residual.bound) == regime]
            if group:
                out.append(CoverageGroup(scope, regime, len(group), sum(c.inside for c in group),
                                         statistics.median(c.half_width for c in group),
                                         sum(c.basis.startswith("no comparable") for c in group)))
    return out


def overall(groups: list[CoverageGroup]) -> tuple[int, int]:
    """(inside, n) over every group."""
    return sum(g.inside for g in groups), sum(g.n for g in groups)


def band_coverage(machines: Sequence[MachineResults], crosschecks: Sequence[CrossCheck]) -> list[CoverageGroup]:
    """The bands' held-out coverage and width, by scope (same or other architecture) and regime."""
    return summarise(check_bands(build_band_table(machines, crosschecks)))
