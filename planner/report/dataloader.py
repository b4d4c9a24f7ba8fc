"""The input pipeline section of the report: the verdicts (planner/model/dataloader_verdict.py), samples/s against
workers with the GPU's appetite, the workers × prefetch heatmaps, the RAM buffer table in the style of seed
004 (its formula workers × prefetch × batch bytes beside the memory measured), the epoch boundary with and
without persistent workers, and every point. Values stay SI; the templates format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuplan_schema.payloads import DataloaderPayload, EpochBoundary, LoaderPoint
from gpuplan_schema.results import MachineResults
from planner.charts.dataloader import build_loader_heatmap, build_worker_scaling_chart
from planner.model.dataloader_verdict import (
    FeedVerdict,
    WorkerRate,
    applicable_first,
    best_per_workers,
    build_feed_verdicts,
)
from planner.report.sections import SectionBase

if TYPE_CHECKING:
    from planner.plan.plan import Plan


@dataclass(frozen=True)
class BufferRow:
    """One configuration's memory: seed 004's formula and what the main process and workers held above
    the main process's own memory before the loader started."""

    workers: int
    prefetch: int
    pin_memory: bool
    formula_bytes: int
    streaming_bytes: int | None       # peak while batches streamed to a consumer that kept up
    full_bytes: int | None            # once every prefetch slot held a batch (consumer paused)
    buffer_full: bool | None
    batches_held_bytes: int | None    # queued in shared memory (unpinned) or torch's pinned host peak (pinned)
    total_bytes: int | None           # the largest measured total of the group, baseline included
    ram_bytes: int | None

    @property
    def batches_buffered(self) -> int:
        return self.workers * self.prefetch

    @property
    def ram_fraction(self) -> float | None:
        return self.total_bytes / self.ram_bytes if self.total_bytes and self.ram_bytes else None

    @property
    def full_vs_formula(self) -> float | None:
        return self.full_bytes / self.formula_bytes if self.full_bytes and self.formula_bytes else None


@dataclass(frozen=True)
class WorkerRow:
    rate: WorkerRate
    appetite_fraction: float | None   # of the first applicable workload's GPU samples/s


@dataclass(frozen=True)
class DataloaderSection(SectionBase, kind="dataloader", title="Input pipeline"):
    payload: DataloaderPayload
    verdicts: list[FeedVerdict]
    scaling_chart: dict | None
    heatmaps: list[tuple[str, dict]]  # (file-safe name, spec): pinned first
    workers: list[WorkerRow]
    buffer: list[BufferRow]
    epochs: list[EpochBoundary]
    points: list[LoaderPoint]

    @property
    def tiny(self) -> bool:
        return self.payload.scale == "tiny"

    @property
    def applicable(self) -> list[FeedVerdict]:
        return [v for v in self.verdicts if v.applies]

    @property
    def not_applicable(self) -> list[FeedVerdict]:
        return [v for v in self.verdicts if not v.applies]


def loader_of(machine: MachineResults) -> DataloaderPayload | None:
    return next((d.payload for d in machine.documents.values() if d.kind == "dataloader"), None)


def build_dataloader_sections(machine: MachineResults, plan: Plan | None = None) -> list[DataloaderSection]:
    """The section, or none when the machine has no dataloader document ('Not collected' says so)."""
    payload = loader_of(machine)
    return [build_dataloader_section(payload, machine, plan)] if payload else []


def build_dataloader_section(payload: DataloaderPayload, machine: MachineResults,
                             plan: Plan | None = None) -> DataloaderSection:
    """The loader's verdicts (section_verdicts) with its charts and tables."""
    verdicts = section_verdicts(payload, machine, plan)
    appetites = [(v.configuration, v.gpu_samples_per_s) for v in verdicts if v.compared and v.gpu_samples_per_s]
    maps = [(name, chart) for name, chart in (("pinned", build_loader_heatmap(payload, True)),
                                              ("unpinned", build_loader_heatmap(payload, False))) if chart]
    first = appetites[0][1] if appetites else None
    rows = [WorkerRow(r, r.samples_per_s / first if first else None) for r in best_per_workers(payload)]
    return DataloaderSection(payload, verdicts, build_worker_scaling_chart(payload, appetites), maps, rows,
                             build_buffer_rows(payload), payload.epochs, ordered_points(payload.points))


def section_verdicts(payload: DataloaderPayload, machine: MachineResults, plan: Plan | None) -> list[FeedVerdict]:
    """The plan's verdicts where there is a plan (the loader against the GPU rate of the settings it recommends,
    as its loader line says); else the loader against each workload's main-batch run. None (empty) where the loader
    failed."""
    if payload.status != "ok":
        return []
    if plan is None:
        return build_feed_verdicts(payload, machine.workloads)
    return applicable_first(plan.targets[0].feeds.values())


def ordered_points(points: list[LoaderPoint]) -> list[LoaderPoint]:
    """Pinned first (the GPU setting), then by workers and prefetch."""
    return sorted(points, key=lambda p: (not p.pin_memory, p.workers, p.prefetch or 0))


def _over(value: int | None, baseline: int | None) -> int | None:
    return max(0, value - baseline) if value is not None and baseline is not None else None


def build_buffer_rows(payload: DataloaderPayload) -> list[BufferRow]:
    """Every ok point with workers and a memory reading, pinned first, by workers then prefetch."""
    rows = []
    for p in ordered_points(payload.points):
        if p.status != "ok" or not p.workers or p.prefetch is None or p.memory_peak_bytes is None:
            continue
        total = max(v for v in (p.memory_peak_bytes, p.memory_full_bytes) if v is not None)
        rows.append(BufferRow(p.workers, p.prefetch, p.pin_memory, p.formula_bytes,
                              _over(p.memory_peak_bytes, p.memory_baseline_bytes),
                              _over(p.memory_full_bytes, p.memory_baseline_bytes), p.buffer_full,
                              p.pinned_bytes if p.pin_memory else p.memory_full_queued_bytes, total, payload.ram_bytes))
    return rows
