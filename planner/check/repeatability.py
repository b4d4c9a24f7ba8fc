"""How far two measurements of the same configuration on the same kind of machine lie apart: the floor under
any prediction's error, read from the committed results themselves.

A workload document times some configurations twice, minutes apart: the main batch in the batch sweep and
again as a variant (same precision, batch and variant), and the `repeat` point the collector takes on
purpose. Their spread, max / min − 1 of the median steps, is what a second measurement would move by. A
prediction checked against one such measurement cannot be judged more finely than that: a host-bound
step can move by far more than a GPU-bound one (docs/accuracy.md, "Repeatability").

Since workloads collector 4 those steps are timed steadily (collectors/workloads/steady.py), all in one window, and
repeat within a few percent in one collection. Another lend of the same GPU type is another host, though:
a machine folder may keep another lend's steady documents under `diagnostics/<name>/` (never read as
results), and each configuration both timed steadily is a pair too, of scope "another lend": a host-set
step is the host's, and a prediction for one lent machine cannot be checked closer than another lend moves
(docs/history.md, "Repeatability across lends").
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.model.performance import source_bound
from planner.model.split import machine_rooflines

SAME_RUN, ANOTHER_LEND = "same run", "another host"  # another rented host of the same GPU type


@dataclass(frozen=True)
class RepeatPair:
    """One configuration measured more than once in one machine's document."""

    machine: str
    workload: str
    precision: str
    batch: int
    variant: str
    sweeps: tuple[str, ...]        # which parts of the collection measured it ("batch", "variant", "repeat")
    steps_s: tuple[float, ...]     # their median steps, in collection order
    regime: str                    # the configuration's bound (planner/model/bound.py)
    scope: str = SAME_RUN          # SAME_RUN, or ANOTHER_LEND: this machine's steady timing against another lend's

    @property
    def spread(self) -> float:
        return max(self.steps_s) / min(self.steps_s) - 1


@dataclass(frozen=True)
class RepeatSummary:
    regime: str
    scope: str
    n: int
    median_spread: float
    max_spread: float
    machines: tuple[str, ...]


def _configurations(points: Iterable[WorkloadPoint]) -> dict[tuple, list[WorkloadPoint]]:
    out: dict[tuple, list[WorkloadPoint]] = {}
    for p in points:
        # not the knee's trials: a resumed document gains them on another lend (workloads collector 6 over a
        # version 5 document, 2026-11-27), so they are not timed again "in one collection"
        if p.status == "ok" and p.step_s and p.sweep not in ("probe", "knee"):
            out.setdefault((p.precision, p.batch, p.variant, p.seq_len), []).append(p)
    return out


def repeat_pairs(machine: MachineResults) -> list[RepeatPair]:
    """Every configuration of the machine's workloads timed at least twice, with its regime: in one collection,
    and against another lend's steady timing (module docstring)."""
    if machine.ceilings is None:
        return []
    rooflines = machine_rooflines(machine)
    pairs = []
    lends = other_lends(machine)
    for payload in machine.workloads:

        def regime(point: WorkloadPoint, payload: WorkloadPayload = payload) -> str:
            bound = source_bound(point, payload, machine.ceilings, rooflines)  # type: ignore[arg-type]
            return bound.name if bound else "unattributed"
        for (precision, batch, variant, _), points in _configurations(payload.points).items():
            if len(points) >= 2:
                pairs.append(RepeatPair(machine.machine, payload.workload, precision, batch, variant,
                                        tuple(p.sweep for p in points),
                                        tuple(p.step_s.median for p in points),  # type: ignore[union-attr]
                                        regime(points[0])))
        for lend, other in lends.get(payload.workload, []):
            theirs = {p.key: p for p in other.points if p.steady_rounds}
            for p in payload.points:
                if p.steady_rounds and p.key in theirs and p.step_s:
                    there = theirs[p.key].step_s.median  # type: ignore[union-attr]
                    pairs.append(RepeatPair(machine.machine, payload.workload, p.precision, p.batch, p.variant,
                                            (p.sweep, f"{p.sweep} ({lend})"), (p.step_s.median, there),
                                            regime(p), ANOTHER_LEND))
    return pairs


def other_lends(machine: MachineResults) -> dict[str, list[tuple[str, WorkloadPayload]]]:
    """The workloads timed on another host of the same GPU type (loaded with the machine), by workload."""
    out: dict[str, list[tuple[str, WorkloadPayload]]] = {}
    for host, payload in machine.other_hosts:
        out.setdefault(payload.workload, []).append((host, payload))
    return out


def all_repeat_pairs(machines: Iterable[MachineResults]) -> list[RepeatPair]:
    return [pair for m in machines for pair in repeat_pairs(m)]


def repeat_summaries(pairs: list[RepeatPair]) -> list[RepeatSummary]:
    """By regime and scope, over every machine: how far a second measurement moved."""
    out = []
    for regime, scope in sorted({(p.regime, p.scope) for p in pairs}):
        group = [p for p in pairs if p.regime == regime and p.scope == scope]
        spreads = [p.spread for p in group]
        out.append(RepeatSummary(regime, scope, len(group), statistics.median(spreads), max(spreads),
                                 tuple(sorted({p.machine for p in group}))))
    return out


def regime_spread(pairs: list[RepeatPair]) -> dict[str, float]:
    """Per regime, the larger median spread of its scopes: what a second measurement on the machine a prediction
    is for would typically move by (another lend's where one was measured)."""
    return _largest_per_regime(pairs, lambda s: s.median_spread)


def repeat_floor(pairs: list[RepeatPair]) -> dict[str, float]:
    """The largest repeat spread measured per regime, over both scopes."""
    return _largest_per_regime(pairs, lambda s: s.max_spread)


def _largest_per_regime(pairs: list[RepeatPair], figure: Callable[[RepeatSummary], float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in repeat_summaries(pairs):
        out[s.regime] = max(out.get(s.regime, 0.0), figure(s))
    return out


def floor_for(pairs: list[RepeatPair], workload: str, regime: str) -> float | None:
    """How far a second measurement of this workload in this regime moved: the largest spread of its own
    repeated configurations where it has some, else the regime's over every workload; None: never repeated."""
    own = [p.spread for p in pairs if p.workload == workload and p.regime == regime]
    if own:
        return max(own)
    return repeat_floor(pairs).get(regime)
