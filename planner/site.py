"""The static site: an index comparing every machine under a results root, and one page per machine.

Every machine is loaded and every page rendered in memory before anything is written. Output
is deterministic (same input, same bytes) apart from one build-time stamp on the index, and a
file is only rewritten when its content changed, so a rebuild of an unchanged root touches
nothing and a published copy syncs only what moved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from collectors.payloads import CeilingsPayload
from collectors.schema import DocumentError, utc_now, write_bytes_atomic, write_text_atomic
from planner.render import (
    HTML_NAME,
    PDF_NAME,
    build_jinja_env,
    render_report_html,
    render_report_pdf,
    safe_child,
)
from planner.report import Report, build_report
from planner.results import MachineResults, load_results_root

MACHINES_DIR = "machines"
INDEX_NAME = "index.html"
# The one part of the output that differs between builds; compared with it masked out.
STAMP_RE = re.compile(r'(<time class="build-stamp" datetime=")[^"]*(">)[^<]*(</time>)')


@dataclass(frozen=True)
class SiteColumn:
    title: str
    unit: str      # shown once in the header; cells hold bare numbers in it
    scale: float   # SI value / scale = the number shown


@dataclass(frozen=True)
class SiteCell:
    value: float | None   # SI units; None when not measured
    note: str | None      # why there is no value (skipped, error, not collected)


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


MATMUL_COLUMNS = ("bf16", "fp16", "tf32", "fp32", "fp8")
COLUMNS = [
    *(SiteColumn(f"{dtype} peak", "TFLOP/s", 1e12) for dtype in MATMUL_COLUMNS),
    SiteColumn("Memory copy", "GB/s", 1e9),
    SiteColumn("Host → device, pinned", "GB/s", 1e9),
    SiteColumn("Launch latency", "µs", 1e-6),
]


def build_site_cells(ceilings: CeilingsPayload | None) -> list[SiteCell]:
    """The index's figures for one machine, in COLUMNS order."""
    if ceilings is None:
        return [SiteCell(None, "ceilings not collected") for _ in COLUMNS]
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


def build_site_index(machines: list[MachineResults], reports: list[Report]) -> SiteIndex:
    rows = [SiteRow(r.machine, r.machine_id, r.device, r.collected, build_site_cells(m.ceilings))
            for m, r in zip(machines, reports, strict=True)]
    return SiteIndex(COLUMNS, sorted(rows, key=lambda row: row.machine_id))


def check_unique_ids(machines: list[MachineResults], reports: list[Report]) -> None:
    """Two folders whose machine ids sanitise alike would overwrite each other's pages."""
    seen: dict[str, MachineResults] = {}
    for machine, report in zip(machines, reports, strict=True):
        if report.machine_id in seen:
            raise DocumentError(machine.folder, "machine",
                                f"id {report.machine_id!r} is also used by {seen[report.machine_id].folder}")
        seen[report.machine_id] = machine


def render_site_index(index: SiteIndex, stamp: str) -> str:
    return build_jinja_env().get_template("site_index.html.j2").render(
        index=index, stamp=stamp, machines_dir=MACHINES_DIR, page_name=HTML_NAME, pdf_name=PDF_NAME)


def build_site(results_root: Path, out: Path = Path("site/_build")) -> Path:
    """Render every machine under RESULTS_ROOT into OUT; return the index page's path."""
    machines = load_results_root(Path(results_root))
    reports = [build_report(m) for m in machines]
    check_unique_ids(machines, reports)
    out = Path(out)
    pages: dict[Path, str | bytes] = {}
    for report in reports:
        folder = safe_child(out / MACHINES_DIR, report.machine_id)
        back = f"../../{INDEX_NAME}"
        pages[folder / HTML_NAME] = render_report_html(report, back_link=back)
        pages[folder / PDF_NAME] = render_report_pdf(report)
    index_html = render_site_index(build_site_index(machines, reports), stamp="")
    for path, content in pages.items():
        write_if_changed(path, content)
    index_path = out.resolve() / INDEX_NAME
    write_index_if_changed(index_path, index_html)
    return index_path


def write_if_changed(path: Path, content: str | bytes) -> bool:
    data = content.encode("utf-8") if isinstance(content, str) else content
    if path.is_file() and path.read_bytes() == data:
        return False
    if isinstance(content, str):
        write_text_atomic(path, content)
    else:
        write_bytes_atomic(path, content)
    return True


def write_index_if_changed(path: Path, html: str) -> bool:
    """Write the index with a fresh stamp, unless only the stamp would change."""
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if old is not None and _mask_stamp(old) == _mask_stamp(html):
        return False
    stamp = utc_now()
    write_text_atomic(path, STAMP_RE.sub(lambda m: f"{m[1]}{stamp}{m[2]}{stamp}{m[3]}", html))
    return True


def _mask_stamp(html: str) -> str:
    return STAMP_RE.sub(r"\1\2\3", html)
