"""The site's workload pages: one workload compared across every machine that ran it.

Each row is a machine's judged point (the verdict's: best precision at the main batch) with its
verdict, memory and achieved fractions, beside the default-variant throughput of every precision
at the main batch and the torch.compile gain where they were measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.stats import Stat
from planner.model.workload_verdict import plain_point
from planner.report.frame import Report
from planner.report.glossary import term_anchor
from planner.report.workloads import WorkloadSection, precision_rank

WORKLOADS_DIR = "workloads"


@dataclass(frozen=True)
class WorkloadMachineRow:
    machine: str
    machine_id: str
    device: str
    profile: str
    tiny: bool
    bound: str
    precision: str | None
    batch: int | None
    throughput: float | None
    tokens_per_s: float | None
    step: Stat | None
    peak_bytes: int | None
    max_batch: int | None          # at the judged precision; None when the boundary was not searched
    max_batch_capped: bool
    flops_fraction: float | None
    bytes_fraction: float | None
    by_precision: dict[str, float]  # default-variant throughput at the main batch
    compile_gain: float | None

    @property
    def bound_anchor(self) -> str | None:
        return term_anchor(self.bound)


@dataclass(frozen=True)
class WorkloadPage:
    name: str
    file_name: str       # under WORKLOADS_DIR: sanitised, unique
    unit: str
    has_tokens: bool
    precisions: list[str]
    rows: list[WorkloadMachineRow]


def build_machine_row(report: Report, section: WorkloadSection) -> WorkloadMachineRow:
    v, payload = section.verdict, section.payload
    point = plain_point(payload, v.batch, v.precision) if v.batch and v.precision else None
    expected = section.expected.throughput_per_s if section.expected else None
    boundary = payload.boundary(v.precision) if v.precision else None
    boundary = boundary if boundary and boundary.max_batch else None
    defaults = {r.precision: r.throughput for r in section.trials if r.variant == "default" and r.throughput}
    compiled = next((r.vs_default for r in section.trials if r.variant == "compile" and r.precision == v.precision
                     and r.vs_default), None)
    return WorkloadMachineRow(
        report.machine, report.machine_id, report.device, payload.profile, section.tiny, v.bound, v.precision,
        v.batch, expected or (point.throughput_per_s if point else None),
        expected * payload.tokens_per_sample if expected and payload.tokens_per_sample else
        (point.tokens_per_s if point else None),
        point.step_s if point else None,
        point.memory.peak_allocated_bytes if point and point.memory else None,
        boundary.max_batch if boundary else None, bool(boundary and boundary.capped),
        point.achieved_flops_fraction if point else None, point.achieved_bytes_fraction if point else None,
        defaults, compiled)


def workload_files(names: list[str]) -> dict[str, str]:
    """Each workload's page file (under WORKLOADS_DIR): sanitised, unique, in name order."""
    files, used = {}, set()
    for name in sorted(set(names)):
        slug, n = sanitize_machine_id(name), 1
        while f"{slug}.html" in used:  # two names that sanitise alike still get a page each
            n += 1
            slug = f"{sanitize_machine_id(name)}-{n}"
        used.add(f"{slug}.html")
        files[name] = f"{slug}.html"
    return files


def build_workload_pages(reports: list[Report], files: dict[str, str]) -> list[WorkloadPage]:
    """One page per workload name (`files` gives its file), its rows in machine-id order."""
    by_name: dict[str, list[tuple[Report, WorkloadSection]]] = {}
    for report in sorted(reports, key=lambda r: r.machine_id):
        for section in report.sections:
            if isinstance(section, WorkloadSection):
                by_name.setdefault(section.name, []).append((report, section))
    pages = []
    for name in sorted(by_name):
        rows = [build_machine_row(report, section) for report, section in by_name[name]]
        sections = [section for _, section in by_name[name]]
        precisions = sorted({p for row in rows for p in row.by_precision}, key=precision_rank)
        pages.append(WorkloadPage(name, files[name], sections[0].unit,
                                  any(s.payload.tokens_per_sample for s in sections), precisions, rows))
    return pages
