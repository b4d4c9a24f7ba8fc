"""Tidy export: every measured figure of one or more machines as one row.

Columns (in this order, a stable contract for pandas users and machine comparisons):
`machine, gpu, collector, workload, precision, batch, variant, metric, value, unit, spread, n, status`.
A cell that does not apply is empty (None here, "" in CSV, null in JSON). `value` is the median,
`spread` the interquartile range (same unit), `n` the sample count.

Each document kind contributes rows through one function registered with `@exporter(kind)`;
a new collector plugs in by registering its own, nothing else changes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from collectors.payloads import BandwidthCeiling, CeilingsPayload, MatmulCeiling, WorkloadPayload, WorkloadPoint
from collectors.stats import Stat
from planner.results import MachineResults, iter_document_paths, load_machine, load_results_root


@dataclass(frozen=True)
class TidyRow:
    machine: str
    gpu: str | None
    collector: str
    workload: str | None = None
    precision: str | None = None
    batch: int | None = None
    variant: str | None = None
    metric: str = ""
    value: float | None = None
    unit: str | None = None
    spread: float | None = None
    n: int | None = None
    status: str = "ok"


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TidyRow))


@dataclass(frozen=True)
class RowContext:
    """What every row of one document shares; `row` fills in the measured part."""

    machine: str
    gpu: str | None
    collector: str

    def row(self, metric: str, unit: str, stat: Stat | None, status: str = "ok", **keys: Any) -> TidyRow:
        # A skipped or failed measurement still gets its row, so a missing figure is visible
        # as such rather than silently absent; a figure missing under status ok is an error.
        if stat is None:
            return TidyRow(self.machine, self.gpu, self.collector, metric=metric, unit=unit,
                           status=status if status != "ok" else "error", **keys)
        return TidyRow(self.machine, self.gpu, self.collector, metric=metric, value=stat.median, unit=unit,
                       spread=stat.iqr, n=stat.n, status=status, **keys)


RowBuilder = Callable[[RowContext, Any], Iterator[TidyRow]]
EXPORTERS: dict[str, RowBuilder] = {}


def exporter(kind: str) -> Callable[[RowBuilder], RowBuilder]:
    """Register the row builder of one document kind."""

    def register(fn: RowBuilder) -> RowBuilder:
        EXPORTERS[kind] = fn
        return fn

    return register


@exporter("environment")
def iter_environment_rows(ctx: RowContext, payload: Any) -> Iterator[TidyRow]:
    # The fingerprint describes the machine; it measures nothing, so it gives no rows.
    return iter(())


@exporter("ceilings")
def iter_ceilings_rows(ctx: RowContext, payload: CeilingsPayload) -> Iterator[TidyRow]:
    for m in payload.matmul:
        yield from _matmul_rows(ctx, m)
    for b in payload.memory:
        yield _bandwidth_row(ctx, f"memory_{b.name}_bytes_per_s", b)
    for b in payload.host_device:
        yield _bandwidth_row(ctx, f"{b.name}_bytes_per_s", b)
    status = "ok" if payload.launch_latency_s is not None else "skipped"
    yield ctx.row("launch_latency_s", "s", payload.launch_latency_s, status)


def _matmul_rows(ctx: RowContext, m: MatmulCeiling) -> Iterator[TidyRow]:
    yield ctx.row("matmul_flops_per_s", "FLOP/s", m.flops_per_s, m.status, precision=m.dtype)
    if m.sustained_flops_per_s is not None:
        yield ctx.row("matmul_sustained_flops_per_s", "FLOP/s", m.sustained_flops_per_s, m.status,
                      precision=m.dtype)


def _bandwidth_row(ctx: RowContext, metric: str, b: BandwidthCeiling) -> TidyRow:
    return ctx.row(metric, "B/s", b.bytes_per_s, b.status)


@exporter("workload")
def iter_workload_rows(ctx: RowContext, payload: WorkloadPayload) -> Iterator[TidyRow]:
    for p in payload.points:
        keys = dict(workload=payload.workload, precision=p.precision, batch=p.batch, variant=_variant_cell(p))
        yield ctx.row("step_s", "s", p.step_s, p.status, **keys)
        if p.status != "ok":
            continue
        yield from _plain_rows(ctx, keys, p)
    for b in payload.boundaries:
        value = Stat(b.max_batch, b.max_batch, b.max_batch, b.max_batch, b.max_batch, 1) if b.max_batch else None
        variant = "capped" if b.capped else "default"
        yield ctx.row("max_batch", "samples", value, b.status, workload=payload.workload, precision=b.precision,
                      variant=variant)


def _variant_cell(p: WorkloadPoint) -> str:
    """The variant's name, plus the sequence length of sequence-scaling points and a repeat marker."""
    parts = [p.variant] + ([f"seq={p.seq_len}"] if p.seq_len else []) + (["repeat"] if p.sweep == "repeat" else [])
    return ";".join(parts)


def _plain_rows(ctx: RowContext, keys: dict, p: WorkloadPoint) -> Iterator[TidyRow]:
    """Figures derived from one point (single values: no spread of their own)."""
    values = [("throughput_per_s", "samples/s", p.throughput_per_s), ("tokens_per_s", "tokens/s", p.tokens_per_s),
              ("peak_allocated_bytes", "B", p.memory.peak_allocated_bytes if p.memory else None),
              ("peak_reserved_bytes", "B", p.memory.peak_reserved_bytes if p.memory else None),
              ("flops_per_step", "FLOP", p.flops_per_step),
              ("bytes_per_step_est", "B", p.traffic.total_bytes if p.traffic else None),
              ("achieved_flops_fraction", "1", p.achieved_flops_fraction),
              ("achieved_bytes_fraction", "1", p.achieved_bytes_fraction)]
    for metric, unit, value in values:
        if value is not None:
            yield TidyRow(ctx.machine, ctx.gpu, ctx.collector, metric=metric, value=float(value), unit=unit,
                          n=p.step_s.n if p.step_s else None, **keys)


def iter_tidy_rows(machine: MachineResults) -> Iterator[TidyRow]:
    """The rows of one machine, document kind by kind in alphabetical order (stable output)."""
    gpu = machine.gpu_name
    for _stem, doc in sorted(machine.documents.items()):
        builder = EXPORTERS.get(doc.kind)
        if builder is None:
            # Every kind in collectors.payloads.PAYLOADS has a builder (a test checks), so this
            # only happens with a newer collector than this planner knows.
            continue
        yield from builder(RowContext(machine.machine, gpu, doc.collector.name), doc.payload)


def load_machines(path: Path) -> list[MachineResults]:
    """A machine folder (holds *.json) or a results root (holds machine folders)."""
    path = Path(path)
    if path.is_dir() and iter_document_paths(path):
        return [load_machine(path)]
    return load_results_root(path)


def build_tidy_table(folders: Iterable[Path]) -> list[TidyRow]:
    """Every row of every machine under `folders`; all documents are read before any row is built,
    so one bad file fails the export as a whole."""
    machines = [m for folder in folders for m in load_machines(Path(folder))]
    return [row for m in machines for row in iter_tidy_rows(m)]


def render_csv(rows: Iterable[TidyRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        # repr of a float round-trips exactly; None becomes the empty cell.
        writer.writerow(["" if v is None else v for v in (getattr(row, c) for c in COLUMNS)])
    return out.getvalue()


def render_json(rows: Iterable[TidyRow]) -> str:
    records = [{k: (None if v == "" else v) for k, v in asdict(row).items()} for row in rows]
    return json.dumps(records, indent=1, allow_nan=False) + "\n"


# The multi-GPU documents' row builders register themselves on import (they need RowContext from here).
import planner.export_multigpu  # noqa: E402, F401
