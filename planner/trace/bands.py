"""The bands of a trace-only plan, from the leave-one-workload-out residuals (loo.py, kept in learned.json).

A prediction from a trace has no measured step under it, so its band is what predicting a held-out workload from
its trace missed, not the narrow band of a measured GPU:

- on a GPU of the reference's architecture (the H100 itself, the H200): the middle 95 % of the held-out eager
  residuals (a torch.compile prediction: of the compiled ones, its own band; SIDE_QUANTILE says why 95), each
  reference workload weighing alike (a model the plan has never seen is one more workload, not one more step of
  those measured: with each step weighing alike, the workloads measured at many batches set the band, and in the
  leave-one-out check 89–90 % of held-out steps lay inside it; with each workload alike, 93–94 %);
- on another architecture: each held-out residual compounded with each residual of the reference machine's
  published cross-architecture check ((1 + e_trace)(1 + e_cross) − 1): both errors stand between the trace and
  that GPU;

and the host part as for any prediction (bands.py: a host S slower or faster).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from planner.check.bands import FLOOR, NO_COMPARABLE, Band, BandTable
from planner.model.performance import Prediction
from planner.trace.model_file import Residuals

COMPILED = "compile"
# Each side of the band: 2.5 % of the held-out residuals beyond it. A measured machine's band leaves 5 % out on each
# side (bands.py), but a workload's held-out residuals share its errors (one model file, one kernel choice): with
# 5 % a side, fewer than nine in ten held-out steps lay inside the band built without them.
SIDE_QUANTILE = 0.975


def sides(errors: list[float], groups: list[str] | None = None) -> tuple[float, float]:
    """(low, high) relative half-widths from residuals e = predicted / measured − 1: the measurement lay at
    1 / (1 + e) of the prediction; SIDE_QUANTILE of those on each side, each residual weighing 1 / its group's
    count (`groups`: each residual's workload; none: every residual alike, the nearest rank)."""
    counts = Counter(groups or [])
    weights = [1 / counts[g] for g in groups] if groups else [1.0] * len(errors)

    def side(values: list[float]) -> float:
        ordered = sorted(zip(values, weights, strict=True))
        need, acc = SIDE_QUANTILE * sum(weights), 0.0
        for value, weight in ordered:
            acc += weight
            if acc >= need * (1 - 1e-12):
                return value
        return ordered[-1][0]
    return side([1 - 1 / (1 + e) for e in errors]), side([1 / (1 + e) - 1 for e in errors])


@dataclass(frozen=True)
class TraceBands(BandTable):
    eager: list[float] = field(default_factory=list)
    compiled: list[float] = field(default_factory=list)
    cross: list[float] = field(default_factory=list)
    eager_workloads: list[str] = field(default_factory=list)     # each residual's workload (empty: weigh alike)
    compiled_workloads: list[str] = field(default_factory=list)

    def errors(self, same_architecture: bool, compiled: bool) -> tuple[list[float], list[str] | None]:
        """The residuals of the band and their workloads (None where not kept: every residual weighs alike)."""
        own, groups = (self.compiled, self.compiled_workloads) if compiled and self.compiled else \
            (self.eager, self.eager_workloads)
        labels = groups if len(groups) == len(own) else None
        if same_architecture or not self.cross:
            return own, labels
        return [(1 + a) * (1 + b) - 1 for a in own for b in self.cross], \
            [g for g in labels for _ in self.cross] if labels else None

    @cached_property
    def _sides_cache(self) -> dict[tuple[bool, bool], tuple[float, float, int, int]]:
        return {}

    def residual_sides(self, same_architecture: bool, compiled: bool) -> tuple[float, float, int, int]:
        """(low, high, residuals, workloads) of the band before the host's part: the same for every prediction of
        one kind, so worked out once (a plan asks for it per target, batch and precision: across architectures it
        sorts each held-out residual compounded with each published one, ~40,000, and a trace plan took 30 s)."""
        key = (same_architecture, compiled)
        if key not in self._sides_cache:
            errors, groups = self.errors(same_architecture, compiled)
            low, high = sides(errors, groups) if errors else (NO_COMPARABLE, NO_COMPARABLE)
            self._sides_cache[key] = (low, high, len(errors), len(set(groups)) if groups else 0)
        return self._sides_cache[key]

    def band_for(self, prediction: Prediction, gpu: str | None = None) -> Band:
        compiled = prediction.variant == COMPILED
        low, high, count, workloads = self.residual_sides(prediction.same_architecture, compiled)
        if not count:
            return Band(NO_COMPARABLE, NO_COMPARABLE, "no held-out trace prediction")
        slower, faster = prediction.host_there.steps(self.host_spread)
        low, high = max(FLOOR, low + 1 - 1 / slower), max(FLOOR, high + 1 / faster - 1)
        what = "torch.compile " if compiled else ""
        basis = f"from a trace: the middle 95% of {count} held-out {what}trace predictions" + \
            (f" of {workloads} workloads, each weighing alike" if workloads else "")
        if not prediction.same_architecture:
            basis += " compounded with the published cross-architecture check's residuals"
        return Band(low, high, basis)


def trace_bands(residuals: Residuals) -> TraceBands:
    return TraceBands(host_spread=residuals.host_spread, eager=list(residuals.eager),
                      compiled=list(residuals.compiled), cross=list(residuals.cross),
                      eager_workloads=list(residuals.eager_workloads),
                      compiled_workloads=list(residuals.compiled_workloads))
