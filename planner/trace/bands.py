"""The bands of a trace-only plan, from the leave-one-workload-out residuals (loo.py, kept in learned.json).

A prediction from a trace has no measured step under it, so its band is what predicting a held-out workload from
its trace missed, not the narrow band of a measured GPU:

- on a GPU of the reference's architecture (the H100 itself, the H200): the middle 90 % of the held-out eager
  residuals (a torch.compile prediction: of the compiled ones, its own band), as bands.py takes its sides;
- on another architecture: each held-out residual compounded with each residual of the reference machine's
  published cross-architecture check ((1 + e_trace)(1 + e_cross) − 1): both errors stand between the trace and
  that GPU;

and the host part as for any prediction (bands.py: a host S slower or faster).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.check.bands import FLOOR, NO_COMPARABLE, Band, BandTable, _side
from planner.model.performance import Prediction
from planner.trace.model_file import Residuals

COMPILED = "compile"


@dataclass(frozen=True)
class TraceBands(BandTable):
    eager: list[float] = field(default_factory=list)
    compiled: list[float] = field(default_factory=list)
    cross: list[float] = field(default_factory=list)

    def errors(self, same_architecture: bool, compiled: bool) -> list[float]:
        own = (self.compiled or self.eager) if compiled else self.eager
        if same_architecture or not self.cross:
            return own
        return [(1 + a) * (1 + b) - 1 for a in own for b in self.cross]

    def band_for(self, prediction: Prediction) -> Band:
        compiled = prediction.variant == COMPILED
        errors = self.errors(prediction.same_architecture, compiled)
        if not errors:
            return Band(NO_COMPARABLE, NO_COMPARABLE, "no held-out trace prediction")
        slower, faster = prediction.host_there.steps(self.host_spread)
        low = max(FLOOR, _side([1 - 1 / (1 + e) for e in errors]) + 1 - 1 / slower)
        high = max(FLOOR, _side([1 / (1 + e) - 1 for e in errors]) + 1 / faster - 1)
        what = "torch.compile " if compiled else ""
        basis = f"from a trace: the middle 90% of {len(errors)} held-out {what}trace predictions"
        if not prediction.same_architecture:
            basis += " compounded with the published cross-architecture check's residuals"
        return Band(low, high, basis)


def trace_bands(residuals: Residuals) -> TraceBands:
    return TraceBands(host_spread=residuals.host_spread, eager=list(residuals.eager),
                      compiled=list(residuals.compiled), cross=list(residuals.cross))
