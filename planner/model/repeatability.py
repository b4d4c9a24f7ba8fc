"""How far two measurements of the same configuration on the same machine lie apart: the floor under any
prediction's error, read from the committed results themselves.

A workload document times some configurations twice, minutes apart: the main batch in the batch sweep and
again as a variant (same precision, batch and variant), and the `repeat` point the collector takes on
purpose. Their spread, max / min − 1 of the median steps, is what a second measurement would move by. A
prediction checked against one such measurement cannot be judged more finely than that: on the lent
GPU machines a host-bound step (vit-tiny bf16 batch 64, set by the host issuing ~700 kernels) measured
32.7 ms in the sweep and 19.7 ms as a variant on one H100, while GPU-bound steps repeat within 2 %
(docs/accuracy.md, "Repeatability"; benchmarks/host_noise.py says why: the VM's launch cost wanders).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.model.performance import source_bound
from planner.model.split import machine_rooflines


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

    @property
    def spread(self) -> float:
        return max(self.steps_s) / min(self.steps_s) - 1


@dataclass(frozen=True)
class RepeatSummary:
    regime: str
    n: int
    median_spread: float
    max_spread: float
    machines: tuple[str, ...]


def _configurations(points: Iterable[WorkloadPoint]) -> dict[tuple, list[WorkloadPoint]]:
    out: dict[tuple, list[WorkloadPoint]] = {}
    for p in points:
        if p.status == "ok" and p.step_s and p.sweep != "probe":
            out.setdefault((p.precision, p.batch, p.variant, p.seq_len), []).append(p)
    return out


def repeat_pairs(machine: MachineResults) -> list[RepeatPair]:
    """Every configuration of the machine's workloads timed at least twice, with its regime."""
    if machine.ceilings is None:
        return []
    rooflines = machine_rooflines(machine)
    pairs = []
    for payload in machine.workloads:
        for (precision, batch, variant, _), points in _configurations(payload.points).items():
            if len(points) < 2:
                continue
            bound = source_bound(points[0], payload, machine.ceilings, rooflines)
            pairs.append(RepeatPair(machine.machine, payload.workload, precision, batch, variant,
                                    tuple(p.sweep for p in points),
                                    tuple(p.step_s.median for p in points),  # type: ignore[union-attr]
                                    bound.name if bound else "unattributed"))
    return pairs


def all_repeat_pairs(machines: Iterable[MachineResults]) -> list[RepeatPair]:
    return [pair for m in machines for pair in repeat_pairs(m)]


def repeat_summaries(pairs: list[RepeatPair]) -> list[RepeatSummary]:
    """By regime, over every machine: how far a second measurement moved."""
    out = []
    for regime in sorted({p.regime for p in pairs}):
        group = [p for p in pairs if p.regime == regime]
        spreads = [p.spread for p in group]
        out.append(RepeatSummary(regime, len(group), statistics.median(spreads), max(spreads),
                                 tuple(sorted({p.machine for p in group}))))
    return out


def repeat_floor(pairs: list[RepeatPair]) -> dict[str, float]:
    """The largest repeat spread measured per regime."""
    return {s.regime: s.max_spread for s in repeat_summaries(pairs)}


def floor_for(pairs: list[RepeatPair], workload: str, regime: str) -> float | None:
    """How far a second measurement of this workload in this regime moved: the largest spread of its own
    repeated configurations where it has some, else the regime's over every workload; None: never repeated."""
    own = [p.spread for p in pairs if p.workload == workload and p.regime == regime]
    if own:
        return max(own)
    return repeat_floor(pairs).get(regime)
