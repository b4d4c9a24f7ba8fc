"""The tidy table's row, and the registry of row builders: one function per document kind, registered
with `@exporter(kind)` (planner/export/tidy.py for the single-GPU kinds, planner/export/multigpu.py for
`collectives` and `ddp`). Columns, in order, are TidyRow's fields (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any

from gpuplan_schema.stats import Stat


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
