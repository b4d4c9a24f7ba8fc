"""The static site: every machine under a results root, compared and published as plain files.

    index.html                  the machines side by side: ceilings and main workload throughputs
    machines/<id>/index.html    each machine's report (and report.pdf beside it)
    workloads/<name>.html       each workload across the machines that ran it
    accuracy.html               the planner's predictions against measurements
    jobs.html                   the job chooser: instances ranked for a workload, precision and amount
    gpuplan-results.csv         every measured figure of every machine (the tidy export)

Every machine is loaded and every page rendered in memory before anything is written. Output is
deterministic (same input, same bytes) apart from one build-time stamp on the index, links are
relative (the folder can be served from anywhere or opened from disk), and a file is only
rewritten when its content changed, so a rebuild of an unchanged root touches nothing. A PDF,
the one slow page (seconds each), is rendered again only when its report or gpuplan's code
changed: the manifest (.gpuplan-site.json) keeps the digest of what each PDF was made from, and
lists the files a build wrote, so that the pages of a machine no longer in the root are removed.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from gpuplan_templates import TEMPLATES_DIR

from gpuplan_schema.progress import Progress
from gpuplan_schema.results import MachineResults, load_results_root
from gpuplan_schema.schema import DocumentError, utc_now, write_bytes_atomic, write_text_atomic
from planner.check.accuracy import AccuracyRow, iter_accuracy_tables, site_rows
from planner.check.coverage import band_coverage
from planner.check.repeatability import all_repeat_pairs
from planner.check.scaling_check import check_published_scaling
from planner.export.frame import machines_frame, to_csv
from planner.plan.plan import report_plan
from planner.render.report import (
    DEFAULT_PAPER,
    HTML_NAME,
    PDF_NAME,
    NavLink,
    build_jinja_env,
    check_inside,
    paper_of,
    safe_child,
    vega_javascript,
)
from planner.report.frame import Report
from planner.scaling.intra_node import load_link_runs
from planner.site.accuracy import build_accuracy_page, build_crosschecks
from planner.site.index import build_site_index
from planner.site.jobs import AMOUNTS, JOBS_NAME, build_chooser
from planner.site.machines import build_machine_pages, render_machine_pdfs
from planner.site.workloads import WORKLOADS_DIR, build_workload_pages, workload_files
from planner.trace.machine import planned_machine

MACHINES_DIR = "machines"
INDEX_NAME, ACCURACY_NAME, CSV_NAME = "index.html", "accuracy.html", "gpuplan-results.csv"
MANIFEST_NAME = ".gpuplan-site.json"
CODE_DIRS = (Path(__file__).resolve().parent.parent, TEMPLATES_DIR)  # the planner package and the templates
# The one part of the output that differs between builds; compared with it masked out.
STAMP_RE = re.compile(r'(<time class="build-stamp" datetime=")[^"]*(">)[^<]*(</time>)')


def check_unique_ids(machines: list[MachineResults], reports: list[Report]) -> None:
    """Two folders whose machine ids sanitise alike would overwrite each other's pages."""
    seen: dict[str, MachineResults] = {}
    for machine, report in zip(machines, reports, strict=True):
        if report.machine_id in seen:
            raise DocumentError(machine.folder, "machine",
                                f"id {report.machine_id!r} is also used by {seen[report.machine_id].folder}")
        seen[report.machine_id] = machine


def site_nav(root: str, current: str, workloads: dict[str, str]) -> list[NavLink]:
    """The links on every page; `root` leads from the page to the site's top folder ("" or "../");
    `workloads` maps each workload to its page's file."""
    links = [("Machines", INDEX_NAME), ("Choose a job", JOBS_NAME)]
    links += [(f"Workload: {name}", f"{WORKLOADS_DIR}/{file}") for name, file in workloads.items()]
    links += [("Prediction accuracy", ACCURACY_NAME), ("Download all figures (CSV)", CSV_NAME)]
    return [NavLink(label, root + href, href == current) for label, href in links]


def render_site_page(template: str, nav: list[NavLink], charts: bool = False, **context: object) -> str:
    return build_jinja_env().get_template(template).render(
        nav=nav, vega_js=vega_javascript() if charts else None, machines_dir=MACHINES_DIR, page_name=HTML_NAME,
        pdf_name=PDF_NAME, csv_name=CSV_NAME, **context)


@lru_cache(maxsize=1)
def code_digest() -> str:
    """gpuplan's planner code and templates, with the versions of the PDF's renderers: a change to any of
    them may change a PDF, so it is part of every PDF's digest."""
    import vl_convert
    import weasyprint

    digest = hashlib.sha256(f"{weasyprint.__version__} {vl_convert.__version__}".encode())
    for folder in CODE_DIRS:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".py", ".j2", ".css", ".js")):
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def pdf_digest(report: Report, paper: str) -> str:
    """What a PDF is made from: the report (its repr holds every figure and chart spec), the paper, the code."""
    return hashlib.sha256(f"{code_digest()}\0{paper}\0{report!r}".encode()).hexdigest()


def load_manifest(out: Path) -> dict:
    try:
        manifest = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
        return manifest if isinstance(manifest, dict) else {}
    except (OSError, ValueError):
        return {}  # none, or unreadable: every PDF is rendered again, nothing is removed


def render_pdfs(out: Path, reports: list[Report], paper: str, old: dict, progress: bool) -> tuple[dict, dict]:
    """Each machine's PDF, rendered only where its digest differs from the last build's (or its file is gone).
    Returns (new PDF bytes by path, digest by relative path)."""
    pdfs, digests, stale = {}, {}, []
    for report in reports:
        path = safe_child(out / MACHINES_DIR, report.machine_id) / PDF_NAME
        rel = path.relative_to(out.resolve()).as_posix()
        digests[rel] = pdf_digest(report, paper)
        if old.get(rel) != digests[rel] or not path.is_file():
            stale.append((path, report))
    if stale:
        with Progress("site PDFs", len(stale), None if progress else io.StringIO()) as bar:
            bar.note(f"rendering {len(stale)} PDF{'s' if len(stale) > 1 else ''} (seconds each)")
            made = render_machine_pdfs([report for _, report in stale], paper)
            pdfs = {path: data for (path, _), data in zip(stale, made, strict=True)}
            bar.advance("done", len(stale))
    return pdfs, digests


def build_site(results_root: Path, out: Path = Path("site/_build"), *, accuracy: Sequence[AccuracyRow] | None = None,
               pdf: bool = True, paper: str = DEFAULT_PAPER, progress: bool = False) -> Path:
    """Render every machine under RESULTS_ROOT into OUT; return the index page's path. The root is loaded
    once; each machine's plan is built once and shared by its page and PDF.

    `accuracy`: the planner's predictions checked against measurements, for the accuracy page (default:
    every pair of measured GPUs under the root predicts the other).
    `pdf`: render each machine's PDF (slow: seconds each; only those whose report changed)."""
    paper_of(paper)
    machines = load_results_root(Path(results_root))
    crosschecks = build_crosschecks(machines) if accuracy is None else []  # given rows: only those
    repeats = all_repeat_pairs(machines) if accuracy is None else []
    coverage = band_coverage(machines, crosschecks) if accuracy is None else []
    scaling = check_published_scaling(load_link_runs(machines)) if accuracy is None else []
    if accuracy is None:
        accuracy = site_rows(iter_accuracy_tables(machines))
    out = Path(out).resolve()
    shown = [planned_machine(m) for m in machines]   # a trace folder: its traces predicted (planner/trace)
    files_of = workload_files([w.workload for m in shown for w in m.workloads])
    planned = [(m, report_plan(m, None, machines)) for m in shown]   # each machine's plan, once
    built = build_machine_pages(planned, site_nav("../../", "", files_of), pdf)
    reports = [page.report for page in built]
    check_unique_ids(machines, reports)
    files: dict[Path, str | bytes] = {
        safe_child(out / MACHINES_DIR, page.report.machine_id) / HTML_NAME: page.html for page in built}
    for page in build_workload_pages(reports, files_of):
        here = f"{WORKLOADS_DIR}/{page.file_name}"
        files[out / here] = render_site_page("site_workload.html.j2", site_nav("../", here, files_of), page=page)
    accuracy_page = build_accuracy_page(accuracy, crosschecks, repeats, coverage, scaling)
    files[out / ACCURACY_NAME] = render_site_page("site_accuracy.html.j2", site_nav("", ACCURACY_NAME, files_of),
                                                  charts=accuracy_page.chart is not None, accuracy=accuracy_page)
    files[out / JOBS_NAME] = render_site_page("site_jobs.html.j2", site_nav("", JOBS_NAME, files_of),
                                              chooser=build_chooser(planned),
                                              amounts=", ".join(f"{k:g}" for k in AMOUNTS))
    files[out / CSV_NAME] = to_csv(machines_frame(machines))
    pages = {name: f"{WORKLOADS_DIR}/{file}" for name, file in files_of.items()}
    index_html = render_site_page("site_index.html.j2", site_nav("", INDEX_NAME, files_of), has_pdf=pdf,
                                  index=build_site_index(shown, reports, pages), stamp="")
    manifest = load_manifest(out)
    digests = {}
    if pdf:
        rendered, digests = render_pdfs(out, reports, paper, manifest.get("pdf", {}), progress)
        files.update(rendered)
    write_site(out, files, index_html, manifest, digests)
    return out / INDEX_NAME


def write_site(out: Path, files: dict[Path, str | bytes], index_html: str, old: dict, digests: dict) -> None:
    """Write what changed, remove what the last build wrote and this one did not, then the manifest."""
    check_inside(out, [*files, out / INDEX_NAME, out / MANIFEST_NAME])
    for path, content in files.items():
        write_if_changed(path, content)
    write_index_if_changed(out / INDEX_NAME, index_html)
    current = {p.relative_to(out).as_posix() for p in files} | {INDEX_NAME} | set(digests)
    for rel in sorted(set(old.get("files", [])) - current):
        gone = (out / rel).resolve()
        if gone.is_relative_to(out) and gone.is_file():
            gone.unlink()
            if gone.parent != out and not any(gone.parent.iterdir()):
                gone.parent.rmdir()  # a removed machine's folder
    manifest = {"files": sorted(current), "pdf": dict(sorted(digests.items()))}
    write_if_changed(out / MANIFEST_NAME, json.dumps(manifest, indent=1) + "\n")


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
