"""The site's index: every machine side by side, its measured ceilings, its main workload throughputs and,
where it has several GPUs, what it measured of them (all_reduce bus bandwidth, DDP scaling efficiency), so
that a machine that measured only collectives shows those rather than a row of dashes. Under the table, the
instance answer: each workload's default job, the fastest and the cheapest instance, from each machine's
decision page.

A cell holds an SI value (the page shows it in its column's unit) or the reason it is empty. A
workload's figure is its verdict's judged point: the best precision at the main batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import CeilingsPayload
from gpuplan_schema.results import MachineResults
from planner.report.decision import DecisionSection, Pick
from planner.report.frame import Report
from planner.report.multigpu import MultiGpuSection
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
class JobAnswer:
    """A workload's default job as predicted from one machine: the fastest and the cheapest instance."""

    workload: str
    machine: str
    machine_id: str
    job: str
    fastest: Pick
    cheapest: Pick


@dataclass(frozen=True)
class SiteIndex:
    columns: list[SiteColumn]
    rows: list[SiteRow]
    answers: list[JobAnswer]

    @property
    def has_tiny(self) -> bool:
        return any(cell.tiny for row in self.rows for cell in row.cells)

    @property
    def parts(self) -> list[tuple[str, str, list[int]]]:
        """The table in two, so that each fits a 1280 px screen: (id, caption, column indexes)."""
        ceilings = [i for i, c in enumerate(self.columns) if c.group in CEILING_GROUPS]
        rest = [i for i, c in enumerate(self.columns) if c.group not in CEILING_GROUPS]
        parts = [("machines", "Measured ceilings", ceilings)]
        return parts + ([("machine-workloads", "Workloads and several GPUs", rest)] if rest else [])

    def groups_of(self, indexes: list[int]) -> list[tuple[str, int]]:
        runs: list[tuple[str, int]] = []
        for column in (self.columns[i] for i in indexes):
            if runs and runs[-1][0] == column.group:
                runs[-1] = (column.group, runs[-1][1] + 1)
            else:
                runs.append((column.group, 1))
        return runs

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
CEILING_GROUPS = (MATMUL_GROUP, BANDWIDTH_GROUP, LATENCY_GROUP)
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


MULTI_GROUP = "Several GPUs"
BUS_COLUMN = SiteColumn("all_reduce bus bandwidth, peak", "GB/s", 1e9, MULTI_GROUP)


def multigpu_of(report: Report) -> MultiGpuSection | None:
    return next((s for s in report.sections if isinstance(s, MultiGpuSection)), None)


def ddp_names(reports: list[Report]) -> list[str]:
    return list(dict.fromkeys(t.workload.workload for r in reports if (m := multigpu_of(r)) for t in m.tables))


def multigpu_cells(section: MultiGpuSection | None, ddp: list[str]) -> list[SiteCell]:
    """all_reduce's peak bus bandwidth, then each DDP workload's efficiency at the most GPUs that ran."""
    if section is None:
        return [SiteCell(None, "no collectives or ddp document")] * (1 + len(ddp))
    bus = next((b for b in section.bus_rows if b.op == "all_reduce"), None)
    cells = [SiteCell(bus.peak_busbw.median, f"{section.gpus_words(section.world_size)}, "
                      f"{bus.peak_size_bytes / 2**20:g} MiB messages")
             if bus else SiteCell(None, "all_reduce not measured")]
    for name in ddp:
        table = next((t for t in section.tables if t.workload.workload == name), None)
        ran = [r for r in table.rows if r.status == "ok" and r.efficiency is not None] if table else []
        top = max(ran, key=lambda r: r.gpus, default=None)
        cells.append(SiteCell(top.efficiency, f"{section.gpus_words(top.gpus)}, {table.precision}, "
                                              f"batch {top.per_gpu_batch}/GPU")
                     if top and table else SiteCell(None, "DDP not measured for this workload"))
    return cells


def job_answers(reports: list[Report]) -> list[JobAnswer]:
    """Each workload's default job, per machine that ranked it: fastest and cheapest instance."""
    out = []
    for report in reports:
        decision = next((s for s in report.sections if isinstance(s, DecisionSection)), None)
        for block in decision.blocks if decision else []:
            ranked = [p for p in block.picks if p.role != "Pareto front"]
            if ranked and block.job:
                cheapest = next((p for p in ranked if "cheapest" in p.role), ranked[0])
                out.append(JobAnswer(block.workload, report.machine, report.machine_id, block.job, ranked[0],
                                     cheapest))
    return sorted(out, key=lambda a: (a.workload, a.machine_id))


def build_site_index(machines: list[MachineResults], reports: list[Report],
                     workload_pages: dict[str, str] | None = None) -> SiteIndex:
    """One row per machine (sorted by id): ceilings, each workload's judged throughput, the multi-GPU figures."""
    names = workload_names(machines)
    ddp = ddp_names(reports)
    multi = [BUS_COLUMN, *(SiteColumn(f"{n} DDP efficiency, most GPUs", "%", 0.01, MULTI_GROUP) for n in ddp)] \
        if any(multigpu_of(r) for r in reports) else []
    rows = []
    for machine, report in zip(machines, reports, strict=True):
        verdicts = verdict_rows(report)
        cells = build_site_cells(machine.ceilings) + [workload_cell(verdicts.get(name)) for name in names]
        if multi:
            cells += multigpu_cells(multigpu_of(report), ddp)
        rows.append(SiteRow(report.machine, report.machine_id, report.device, report.collected, cells))
    columns = CEILING_COLUMNS + workload_columns(names, reports, workload_pages or {}) + multi
    return SiteIndex(columns, sorted(rows, key=lambda row: row.machine_id), job_answers(reports))
