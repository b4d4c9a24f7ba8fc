"""The site's index: every machine side by side, its measured ceilings and its main workload throughputs.

A cell holds an SI value (the page shows it in its column's unit) or the reason it is empty. A
workload's figure is its verdict's judged point: the best precision at the main batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import CeilingsPayload
from gpuplan_schema.results import MachineResults
from planner.report.frame import Report
from planner.report.summary import SummarySection, VerdictRow

MATMUL_COLUMNS = ("bf16", "fp16", "tf32", "fp32", "fp8")
REFERENCE_WORKLOADS = ("gpt-small", "resnet50", "mlp-stgan", "conv-rollout")  # first, in this order


@dataclass(frozen=True)
class SiteColumn:
    title: str
    unit: str      # shown once in the header; cells hold bare numbers in it
    scale: float   # SI value / scale = the number shown
    group: str     # the heading over a run of columns
    href: str | None = None   # a page about the column (a workload's comparison page)


@dataclass(frozen=True)
class SiteCell:
    value: float | None   # SI units; None when not measured
    note: str | None      # why there is no value (skipped, error, not collected), or what the value is
    tiny: bool = False    # a reduced-size CPU test run: shown, but not comparable


@dataclass(frozen=True)
class SiteRow:
    machine: str          # as the documents spell it: display only, escaped
    machine_id: str       # sanitised: the link target
    device: str
    collected: str
    cells: list[SiteCell]


@dataclass(frozen=True)
class SiteIndex:
    columns: list[SiteColumn]
    rows: list[SiteRow]

    @property
    def has_tiny(self) -> bool:
        return any(cell.tiny for row in self.rows for cell in row.cells)

    @property
    def groups(self) -> list[tuple[str, int]]:
        """(heading, number of columns) for each run of columns of one group."""
        runs: list[tuple[str, int]] = []
        for column in self.columns:
            if runs and runs[-1][0] == column.group:
                runs[-1] = (column.group, runs[-1][1] + 1)
            else:
                runs.append((column.group, 1))
        return runs


MATMUL_GROUP, BANDWIDTH_GROUP, LATENCY_GROUP = "Dense matmul, peak", "Bandwidth", "Latency"
WORKLOADS_GROUP = "Workloads: throughput at the main batch, best precision"
CEILING_COLUMNS = [
    *(SiteColumn(dtype, "TFLOP/s", 1e12, MATMUL_GROUP) for dtype in MATMUL_COLUMNS),
    SiteColumn("Memory copy", "GB/s", 1e9, BANDWIDTH_GROUP),
    SiteColumn("Host → device, pinned", "GB/s", 1e9, BANDWIDTH_GROUP),
    SiteColumn("Launch", "µs", 1e-6, LATENCY_GROUP),
]


def build_site_cells(ceilings: CeilingsPayload | None) -> list[SiteCell]:
    """The index's ceiling figures for one machine, in CEILING_COLUMNS order."""
    if ceilings is None:
        return [SiteCell(None, "ceilings not collected") for _ in CEILING_COLUMNS]
    cells = []
    for dtype in MATMUL_COLUMNS:
        found = next((m for m in ceilings.matmul if m.dtype == dtype), None)
        stat = found.flops_per_s if found else None
        cells.append(SiteCell(stat.median if stat else None, _why_missing(found)))
    for name, group in (("copy", ceilings.memory), ("h2d_pinned", ceilings.host_device)):
        found = next((b for b in group if b.name == name), None)
        stat = found.bytes_per_s if found else None
        cells.append(SiteCell(stat.median if stat else None, _why_missing(found)))
    latency = ceilings.launch_latency_s
    cells.append(SiteCell(latency.median if latency else None, None if latency else "not measured"))
    return cells


def _why_missing(found: object) -> str | None:
    if found is None:
        return "not measured"
    reason = getattr(found, "reason", None)
    return f"{found.status}: {reason}" if reason else None  # type: ignore[attr-defined]


def workload_names(machines: list[MachineResults]) -> list[str]:
    """Every workload measured on any machine: the reference ones first, then the rest by name."""
    names = {w.workload for m in machines for w in m.workloads}
    rank = {name: i for i, name in enumerate(REFERENCE_WORKLOADS)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def verdict_rows(report: Report) -> dict[str, VerdictRow]:
    summary = next(s for s in report.sections if isinstance(s, SummarySection))
    return {row.workload: row for row in summary.verdicts}


def workload_cell(row: VerdictRow | None) -> SiteCell:
    if row is None:
        return SiteCell(None, "not measured")
    if row.throughput is None:
        return SiteCell(None, f"{row.bound}: {row.reason}")
    note = f"{row.precision}, batch {row.batch}" + (" (reduced sizes: a CPU test run, not comparable)"
                                                    if row.tiny else "")
    return SiteCell(row.throughput, note, row.tiny)


def workload_columns(names: list[str], reports: list[Report], href: dict[str, str]) -> list[SiteColumn]:
    units = {}
    for report in reports:
        for name, row in verdict_rows(report).items():
            units.setdefault(name, row.unit)
    return [SiteColumn(name, f"{units.get(name, 'samples')}/s", 1.0, WORKLOADS_GROUP, href.get(name))
            for name in names]


def build_site_index(machines: list[MachineResults], reports: list[Report],
                     workload_pages: dict[str, str] | None = None) -> SiteIndex:
    """One row per machine (sorted by id): ceilings, then each workload's judged throughput."""
    names = workload_names(machines)
    rows = []
    for machine, report in zip(machines, reports, strict=True):
        verdicts = verdict_rows(report)
        cells = build_site_cells(machine.ceilings) + [workload_cell(verdicts.get(name)) for name in names]
        rows.append(SiteRow(report.machine, report.machine_id, report.device, report.collected, cells))
    columns = CEILING_COLUMNS + workload_columns(names, reports, workload_pages or {})
    return SiteIndex(columns, sorted(rows, key=lambda row: row.machine_id))
