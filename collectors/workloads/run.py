"""One workload's collection in progress: what it measured so far, what an earlier run left, its stages' records,
and its document as it stands (saved after every point)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from collectors.core import profiles
from collectors.core.device import free_memory
from collectors.workloads import Workload
from collectors.workloads.boundary import probe_allocator
from collectors.workloads.sweep import Context
from collectors.workloads.sweep_plan import SweepPlan, build_sweep_plan, instantiate
from gpuplan_schema.payloads import OomBoundary, StageRecord, WorkloadPayload, WorkloadPoint
from gpuplan_schema.payloads.workloads import PLAIN_VARIANTS, knee_batch

Item = WorkloadPoint | OomBoundary


@dataclass
class WorkloadRun:
    """A workload being collected: `name` is its spec (a built-in name or path/to/file.py:function), `stem` its
    document's file stem."""

    name: str
    stem: str
    workload: Workload
    plan: SweepPlan
    ctx: Context
    earlier: WorkloadPayload | None = None
    points: list[WorkloadPoint] = field(default_factory=list)
    boundaries: list[OomBoundary] = field(default_factory=list)
    records: dict[str, StageRecord] = field(default_factory=dict)
    spent_s: float = 0.0  # this run's time on the workload, over its stages

    @classmethod
    def start(cls, name: str, stem: str, profile: profiles.Profile, ctx: Context,
              earlier: WorkloadPayload | None) -> WorkloadRun:
        workload = instantiate(name, ctx.device)
        ctx.earlier = {p.key: p for p in (earlier.points if earlier else [])}
        ctx.earlier_boundaries = {(b.precision, b.allocator): b for b in (earlier.boundaries if earlier else [])}
        records = {r.name: r for r in (earlier.stages or [])} if earlier else {}
        return cls(name, stem, workload, build_sweep_plan(name, workload, profile, ctx.device), ctx, earlier,
                   records=records)

    @property
    def profile(self) -> profiles.Profile:
        return self.plan.profile

    def add(self, item: Item) -> bool:
        """Keep an item measured (or reused) in this run; False when this run holds it already (a stage going
        over the points an earlier stage measured)."""
        if isinstance(item, OomBoundary):
            self.boundaries = [b for b in self.boundaries if (b.precision, b.allocator) != (item.precision,
                                                                                             item.allocator)]
            self.boundaries.append(item)
            return True
        if item.key in self.ctx.done:
            return False
        self.ctx.done[item.key] = item
        self.points.append(item)
        return True

    def sweep_throughput(self, precision: str) -> dict[int, float]:
        return {p.batch: p.throughput_per_s for p in self.points if p.sweep == "batch" and p.precision == precision
                and p.status == "ok" and p.throughput_per_s and p.variant in PLAIN_VARIANTS}

    @property
    def knee(self) -> int | None:
        """The knee of the main precision's batch sweep so far (gpuplan_schema knee_batch: the plan's batch)."""
        return knee_batch(self.sweep_throughput(profiles.MAIN_PRECISION))

    def measured_at(self, precision: str) -> list[WorkloadPoint]:
        """This precision's timed points so far: the memory line a boundary search starts from."""
        return [p for p in self.points if p.precision == precision and p.sweep != "probe" and p.seq_len is None
                and p.variant in PLAIN_VARIANTS]

    def record(self, stage: str, seconds: float, status: str = "done", reason: str | None = None) -> None:
        before = self.records.get(stage)
        total = (before.seconds if before else 0.0) + seconds
        self.records[stage] = StageRecord(stage, status, total, reason)  # type: ignore[arg-type]
        self.spent_s += seconds

    def park(self) -> None:
        """Between stages: the model off the GPU, so that the next workload's stage (or the boundary search's own
        process) has the device's memory to itself."""
        if self.ctx.device.type != "cpu":
            self.workload.model.to("cpu")
            free_memory(self.ctx.device)

    def payload(self, complete: bool) -> WorkloadPayload:
        kept_points, kept_boundaries = not_measured_again(self.earlier, self.points, self.boundaries)
        before = self.earlier.elapsed_s if self.earlier else 0.0
        w = self.workload
        return WorkloadPayload(
            workload=w.name, source=w.source, unit=w.unit, training=w.training, device=self.ctx.device.type,
            profile=self.profile.name, parameters=sum(p.numel() for p in w.model.parameters()),
            points=self.points + kept_points, boundaries=self.boundaries + kept_boundaries,
            elapsed_s=before + self.spent_s, tokens_per_sample=w.tokens_per_sample,
            scale="tiny" if self.plan.tiny else "reference", complete=complete,
            stages=list(self.records.values()), source_sha256=w.source_sha256)


def not_measured_again(earlier: WorkloadPayload | None, points: list[WorkloadPoint],
                       boundaries: list[OomBoundary]) -> tuple[list[WorkloadPoint], list[OomBoundary]]:
    """What `earlier` holds that this run has not (yet) measured: kept, so that a smaller profile run over a
    larger one's document, or a run stopped halfway, never loses a reading."""
    if earlier is None:
        return [], []
    done = {p.key for p in points}
    searched = {(b.precision, b.allocator) for b in boundaries}
    # an earlier search's probes go with its boundary when the boundary is searched again
    return ([p for p in earlier.points if p.key not in done and not (
                p.sweep == "probe" and (p.precision, probe_allocator(p)) in searched)],
            [b for b in earlier.boundaries if (b.precision, b.allocator) not in searched])


class StageClock:
    """Wall time of one stage of one workload."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


def cpu_or(device: torch.device, gpu: float, cpu: float) -> float:
    return cpu if device.type == "cpu" else gpu

