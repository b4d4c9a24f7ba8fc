"""Error bands from measured residuals and the measured spread between hosts: each prediction's band is what
comparable predictions missed by where the answer was then measured, plus what the host's share of its step
can move by on another host.

A step is the GPU's work and the host's (h: the host's share of the predicted step, each part of the measured
step's split scaled to the target: a slower GPU leaves the host a smaller share). The two move for
different reasons, so the band has two parts:

- the GPU part: the middle 90% of the errors of GPU-set predictions (host share under GPU_ONLY) of the same
  kind of jump: same architecture (compute capability major equal, e.g. H100 → H200: the H100 ↔ H200 accuracy
  rows, planner/check/accuracy.py, both directions) or another one (the published cross-architecture check,
  planner/check/crossarch.py). With e = predicted / measured − 1 the measurement lay at 1 / (1 + e) of the
  prediction, so low = p95 of (1 − 1 / (1 + e)) and high = p95 of (1 / (1 + e) − 1) (nearest rank): 5% of the
  residuals beyond each side, so nine in ten inside (a p90 on each side leaves one in ten out on each: eight in
  ten inside, which is what the held-out check found);
- the host part: how far the predicted step moves on a host S slower or faster (`HostExposure.steps`: the host's
  part of the step and its issue time scale, the GPU's work does not), where S is the 90th percentile of the
  spreads measured between two hosts of one GPU type for a host-set step (planner/check/repeatability.py, scope
  "another host"): the host of a rented machine is unknown until it is rented, and 9 in 10 such steps moved by
  less than S between two of them.

    high = max(FLOOR, gpu_high + 1 / faster − 1)        low = max(FLOOR, gpu_low + 1 − 1 / slower)

So a GPU-bound step keeps a narrow band and a host-bound one gets the spread measured there. Nothing comparable
measured: ±NO_COMPARABLE, labelled "no comparable measurement". planner/check/coverage.py checks the bands on
residuals they were not built from, and the accuracy page publishes what it finds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gpuplan_schema.results import MachineResults
from planner.check.accuracy import iter_accuracy_tables
from planner.check.crossarch import CrossCheck, build_crosscheck
from planner.check.repeatability import ANOTHER_LEND, all_repeat_pairs
from planner.model.performance import HostExposure, Prediction

FLOOR = 0.03
NO_COMPARABLE = 0.50
NO_COMPARABLE_BASIS = "no comparable measurement"
GPU_ONLY = 0.10   # a residual whose host share is below this says what the GPU part of a prediction misses
SIDE_QUANTILE = 0.95  # each side of the GPU part: 5% of residuals beyond it, a central 90% between the two
HOST_QUANTILE = 0.90
NO_HOST = HostExposure()   # a step the host does not touch


@dataclass(frozen=True)
class Band:
    low: float
    high: float
    basis: str


@dataclass(frozen=True)
class Residual:
    same_architecture: bool
    host: HostExposure  # how the predicted step depended on its host
    error: float        # predicted / measured − 1
    group: str = ""     # its workload (H100 ↔ H200 rows) or its published GPU: what coverage.py leaves out
    bound: str = ""     # the source configuration's regime, for the accuracy page's grouping


@dataclass(frozen=True)
class BandTable:
    residuals: list[Residual] = field(default_factory=list)   # every compared prediction's
    host_spread: float = 0.0   # how far a host-set step moved between two hosts of one GPU type (host_spread())

    def gpu_errors(self, same_architecture: bool) -> list[float]:
        return [r.error for r in self.residuals
                if r.same_architecture == same_architecture and gpu_set(r.host)]

    def without(self, group: str) -> BandTable:
        """The table a residual of `group` is checked against: built as if that group had not been measured."""
        return replace(self, residuals=[r for r in self.residuals if r.group != group])

    def band(self, same_architecture: bool, host: HostExposure = NO_HOST) -> Band:
        errors = self.gpu_errors(same_architecture)
        if not errors:
            return Band(NO_COMPARABLE, NO_COMPARABLE, NO_COMPARABLE_BASIS)
        slower, faster = host.steps(self.host_spread)
        low = max(FLOOR, _side([1 - 1 / (1 + e) for e in errors]) + 1 - 1 / slower)
        high = max(FLOOR, _side([1 / (1 + e) - 1 for e in errors]) + 1 / faster - 1)
        kind = "same architecture" if same_architecture else "other architectures"
        basis = f"the middle 90% of {len(errors)} measured GPU-set predictions, {kind}"
        if slower - 1 >= 0.005:
            basis += (f"; −{1 - 1 / slower:.0%}/+{1 / faster - 1:.0%} on a host {self.host_spread:.0%} slower or "
                      "faster, as two hosts of one GPU type moved apart")
        return Band(low, high, basis)


    def band_for(self, prediction: Prediction) -> Band:
        """The band of one prediction (a table of other residuals, e.g. a trace's, picks by more than these two)."""
        return self.band(prediction.same_architecture, prediction.host_there)

    def host_band(self, host: HostExposure) -> Band:
        """A configuration measured on this GPU type, as another host of it would run it: no GPU part (the GPU was
        measured), the host part as a prediction's, at least FLOOR (timed again on other H100s, the plan's measured
        answers moved by up to 4 %, one by 10 %: docs/accuracy.md, "At the settings the plan recommends")."""
        slower, faster = host.steps(self.host_spread)
        low, high = max(FLOOR, 1 - 1 / slower), max(FLOOR, 1 / faster - 1)
        basis = f"another host of this GPU type: at least ±{FLOOR:.0%}"
        if slower - 1 >= 0.005:
            basis += f", −{1 - 1 / slower:.0%}/+{1 / faster - 1:.0%} on a host {self.host_spread:.0%} slower or faster"
        return Band(low, high, basis)


def gpu_set(host: HostExposure) -> bool:
    """The GPU sets the step and a host of another speed barely moves it: its residual is the GPU part's."""
    return host.part < GPU_ONLY and not host.limited and host.issue < 1 - GPU_ONLY


def _side(values: list[float]) -> float:
    """SIDE_QUANTILE of the values, nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(SIDE_QUANTILE * len(ordered)) - 1)]


def host_spread(machines: Sequence[MachineResults]) -> float:
    """How far a host-set step moves between two hosts of one GPU type: the 90th percentile of the spreads
    measured (a band meant to hold nine times in ten); 0 where none."""
    spreads = sorted(p.spread for p in all_repeat_pairs(machines) if p.scope == ANOTHER_LEND and p.regime == "host")
    return spreads[max(0, math.ceil(HOST_QUANTILE * len(spreads)) - 1)] if spreads else 0.0


def build_band_table(machines: Sequence[MachineResults], crosschecks: Sequence[CrossCheck] = ()) -> BandTable:
    """The residuals of every compared prediction: the H100 ↔ H200 rows and the published checks' rows."""
    residuals = [Residual(True, row.host, row.error, row.workload, row.bound)
                 for table in iter_accuracy_tables(machines) for row in table.rows]
    for check in crosschecks:
        same = same_arch_gpus(check)  # H100 → H200 rows of the published check are the same architecture
        residuals += [Residual(r.gpu in same, r.host, r.error, r.gpu, r.bound) for r in check.rows]
    return BandTable(residuals, host_spread(machines))


def same_arch_gpus(check: CrossCheck) -> set[str]:
    from planner.specs import match_gpu
    ref = match_gpu(check.reference)
    major = (ref.compute_capability or "")[:1] if ref else ""
    return {r.gpu for r in check.rows if (g := match_gpu(r.gpu)) and (g.compute_capability or "")[:1] == major}


def band_table_for(machines: Sequence[MachineResults]) -> BandTable:
    """The band table from every loaded machine: accuracy pairs and each machine's published check."""
    checks = [c for c in (build_crosscheck(m) for m in machines if m.ceilings and m.workloads) if c]
    return build_band_table(machines, checks)


def with_band(prediction: Prediction, table: BandTable) -> Prediction:
    band = table.band_for(prediction)
    return replace(prediction, band_low=band.low, band_high=band.high, band_basis=band.basis)


def measured_band(prediction: Prediction) -> Prediction:
    """The source GPU's own configurations: measured, not predicted."""
    return replace(prediction, band_low=0.0, band_high=0.0, band_basis="measured")
