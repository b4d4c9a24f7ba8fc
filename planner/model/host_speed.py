"""How much longer one measured machine's host takes than another's to issue the same training steps.

The dispatch benchmark (collectors/ceilings/dispatch.py: a small Linear's forward and backward) is one figure for
the host, taken within a second, and it can disagree with real steps timed for minutes (docs/history.md,
"The hosts' speed"): a real step's host time is Python modules, autocast and the optimizer as well as
kernel launches, and the dispatch benchmark's own repeats spread widely on one machine. So where both
machines timed the same host-set steps steadily (collectors/workloads/steady.py), in one window each, their ratio
is the hosts' ratio: the median, over the configurations both measured, of the target's host issue time
over the source's, among those whose host limits the step on both machines.

A workload's own steps never set the ratio its predictions use (`exclude`): what is checked is a model
carried to a machine where only the reference workloads ran. Below MIN_PAIRS configurations there is no
ratio, and the dispatch benchmark's stands.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from planner.model.bound import HOST_MARGIN

MIN_PAIRS = 3


@dataclass(frozen=True)
class HostRatio:
    ratio: float       # target host issue time / source's for the same step
    pairs: int         # configurations it is the median of
    workloads: tuple[str, ...]

    @property
    def basis(self) -> str:
        return (f"the hosts' issue times of {self.pairs} host-set steps timed steadily on both machines "
                f"({', '.join(self.workloads)})")


def host_set(point: WorkloadPoint) -> bool:
    """Timed steadily, its host's issue time over its GPU's busy time (planner/model/bound.py's rule), and no
    wait inside the step (which would make the issue time partly the GPU's)."""
    return bool(point.steady_rounds and point.host_issue_s and point.gpu_busy_s and point.step_syncs == 0
                and point.host_issue_s.median > HOST_MARGIN * point.gpu_busy_s)


def step_host_ratio(source: list[WorkloadPayload], target: list[WorkloadPayload],
                    exclude: str | None = None) -> HostRatio | None:
    """The hosts' ratio from the steps both machines timed steadily (module docstring); None below MIN_PAIRS."""
    ratios: list[float] = []
    used: list[str] = []
    theirs = {w.workload: w for w in target}
    for payload in source:
        other = theirs.get(payload.workload)
        if other is None or payload.workload == exclude:
            continue
        there = {p.key: p for p in other.points if host_set(p)}
        found = [there[p.key].host_issue_s.median / p.host_issue_s.median  # type: ignore[union-attr]
                 for p in payload.points if host_set(p) and p.key in there]
        ratios += found
        used += [payload.workload] if found else []
    if len(ratios) < MIN_PAIRS:
        return None
    return HostRatio(statistics.median(ratios), len(ratios), tuple(used))
