"""The tidy table's row, its key, and the registry of row builders: one function per document kind,
registered with `@exporter(kind)` (planner/export/tidy.py for the single-GPU kinds,
planner/export/multigpu.py for `collectives` and `ddp`). Columns, in order, are TidyRow's fields
(docs/metrics.md).

Each setting a figure was measured under has a typed column of its own (`compile`, `layout`,
`workers`, ...), never a packed string, and `KEY` names the columns that identify a row: no two rows of
an export share them (tests/test_export.py checks every committed results folder). A pandas
`pivot_table` or `groupby` over the key columns therefore never averages unlike measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from typing import Any

from gpuplan_schema.payloads.workloads import variant_settings as parse_variant
from gpuplan_schema.stats import Stat


@dataclass(frozen=True)
class TidyRow:
    machine: str
    gpu: str | None
    gpu_count: int | None            # GPUs the figure was measured on (empty on a CPU-only machine)
    nodes: int | None                # nodes of a multi-GPU run (collectives, ddp); empty elsewhere
    collector: str
    workload: str | None = None
    op: str | None = None            # an aten op (roofline) or a collective (all_reduce, ...)
    precision: str | None = None
    batch: int | None = None
    seq_len: int | None = None       # sequence-scaling points only
    sweep: str | None = None         # workloads: batch, sequence, variant, repeat or probe
    compile: bool | None = None      # torch.compile
    layout: str | None = None        # default (the workload's own), channels_last or contiguous
    cudnn_benchmark: bool | None = None
    allocator: str | None = None     # default or expandable_segments
    capped: bool | None = None       # max_batch: the profile's cap stopped the search first
    workers: int | None = None       # data loader
    prefetch: int | None = None
    pin: bool | None = None
    persistent: bool | None = None
    epoch: int | None = None         # 2: the epoch-boundary rows
    rank: int | None = None          # one GPU of several (gpu_matmul_flops_per_s)
    metric: str = ""
    value: float | None = None
    unit: str | None = None
    spread: float | None = None
    n: int | None = None
    status: str = "ok"               # the outcome: ok, oom, skipped or error
    bound: str | None = None         # roofline: the op's class (math-bound, memory-bound, ...)


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TidyRow))
# The columns that identify a row. `gpu` follows from machine (and rank); `bound` is part of it for the
# roofline's class_time_s rows, one per class at a batch.
MEASURED: tuple[str, ...] = ("value", "unit", "spread", "n", "status")
KEY: tuple[str, ...] = tuple(c for c in COLUMNS if c not in MEASURED and c != "gpu")


def variant_settings(name: str) -> dict[str, Any]:
    """The typed settings a workload variant's name stands for, as row cells (gpuplan_schema's one reader of a
    variant's name: an unknown part raises, so that a newer collector's setting cannot vanish from the key)."""
    return asdict(parse_variant(name))


@dataclass(frozen=True)
class RowContext:
    """What every row of one document shares; `row` and `plain` fill in the measured part."""

    machine: str
    gpu: str | None
    collector: str
    gpu_count: int | None = None
    nodes: int | None = None

    def _row(self, **cells: Any) -> TidyRow:
        cells.setdefault("gpu_count", self.gpu_count)
        cells.setdefault("nodes", self.nodes)
        return TidyRow(machine=self.machine, gpu=self.gpu, collector=self.collector, **cells)

    def row(self, metric: str, unit: str, stat: Stat | None, status: str = "ok", **keys: Any) -> TidyRow:
        # A skipped or failed measurement still gets its row, so a missing figure is visible
        # as such rather than silently absent; a figure missing under status ok is an error.
        if stat is None:
            return self._row(metric=metric, unit=unit, status=status if status != "ok" else "error", **keys)
        return self._row(metric=metric, value=stat.median, unit=unit, spread=stat.iqr, n=stat.n, status=status,
                         **keys)

    def plain(self, metric: str, unit: str, value: float, n: int | None, **keys: Any) -> TidyRow:
        """A single value derived from a measurement (no spread of its own), with its source's sample count."""
        return self._row(metric=metric, value=float(value), unit=unit, n=n, **keys)


RowBuilder = Callable[[RowContext, Any], Iterator[TidyRow]]
EXPORTERS: dict[str, RowBuilder] = {}


def exporter(kind: str) -> Callable[[RowBuilder], RowBuilder]:
    """Register the row builder of one document kind."""

    def register(fn: RowBuilder) -> RowBuilder:
        EXPORTERS[kind] = fn
        return fn

    return register
