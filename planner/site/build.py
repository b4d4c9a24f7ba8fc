"""The static site: every machine under a results root, compared and published as plain files.

    index.html                  the machines side by side: ceilings and main workload throughputs
    machines/<id>/index.html    each machine's report: the answer and a page per workload (report.pdf beside it)
    machines/<id>/appendix.html each machine's appendix: every table of measurements, the per-op rooflines
    assets/vega.js              the Vega, Vega-Lite and vega-embed bundle, one copy for every page with charts
    workloads/<name>.html       each workload across the machines that ran it
    accuracy.html               the planner's predictions against measurements
    jobs.html                   the job chooser: instances ranked for a workload, precision and amount
    gpuplan-results.csv         every measured figure of every machine (the tidy export)

Every machine is loaded once and planned once, against one `Measured` (what a plan reads of the other
machines: bands, validated GPUs, scaling), and every page is made in memory before anything is written.
A page whose inputs are unchanged since the last build is read from the cache (planner/site/cache.py says
what each entry's key holds), so an unchanged root rebuilds in seconds and a changed machine folder costs
its own page, or every page where it changes what the plans read of it. Output is deterministic (same
input, same bytes) apart from one build-time stamp on the index, links are relative (the folder can be
served from anywhere or opened from disk), and a file is only rewritten when its content changed. A PDF
(seconds each) is rendered again only when its page's inputs or the paper changed: the manifest
(.gpuplan-site.json) keeps the key of what each PDF was made from, and lists the files a build wrote, so
that the pages of a machine no longer in the root are removed.
"""

from __future__ import annotations

import gc
import io
import json
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.progress import Progress
from gpuplan_schema.results import MachineResults, machine_folders
from gpuplan_schema.schema import DocumentError, utc_now, write_bytes_atomic, write_text_atomic
from planner.check.accuracy import AccuracyRow, iter_accuracy_tables, site_rows
from planner.check.coverage import check_bands, summarise
from planner.check.gpu_types import one_per_gpu_type
from planner.check.repeatability import all_repeat_pairs
from planner.check.scaling_check import check_published_scaling
from planner.export.frame import csv_header
from planner.plan.measured import Measured
from planner.plan.plan import plannable, report_plan
from planner.render.report import (
    APPENDIX_NAME,
    DEFAULT_PAPER,
    HTML_NAME,
    PDF_NAME,
    NavLink,
    build_jinja_env,
    cached_javascript_bundle,
    check_inside,
    paper_of,
    safe_child,
)
from planner.report.frame import Report
from planner.scaling.intra_node import load_link_runs
from planner.site.accuracy import build_accuracy_page, build_crosschecks
from planner.site.cache import CACHE_DIR, SiteCache, digest_of
from planner.site.index import build_site_index
from planner.site.jobs import AMOUNTS, JOBS_NAME, build_chooser
from planner.site.load import Loaded, load_root
from planner.site.machines import ASSETS_DIR, VEGA_NAME, MachinePage, build_machine_pages, render_machine_pdfs
from planner.site.workloads import WORKLOADS_DIR, build_workload_pages, workload_files
from planner.trace.machine import planned_machine

PROG = "gpuplan"
MACHINES_DIR = "machines"
INDEX_NAME, ACCURACY_NAME, CSV_NAME = "index.html", "accuracy.html", "gpuplan-results.csv"
MANIFEST_NAME = ".gpuplan-site.json"
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
    """A page of the site's top folder; with `charts`, it loads the site's Vega bundle (assets/vega.js)."""
    return build_jinja_env().get_template(template).render(
        nav=nav, vega_src=f"{ASSETS_DIR}/{VEGA_NAME}" if charts else None, machines_dir=MACHINES_DIR,
        page_name=HTML_NAME, pdf_name=PDF_NAME, csv_name=CSV_NAME, **context)


def load_manifest(out: Path) -> dict:
    try:
        manifest = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
        return manifest if isinstance(manifest, dict) else {}
    except (OSError, ValueError):
        return {}  # none, or unreadable: every PDF is rendered again, nothing is removed


@dataclass(frozen=True)
class SiteBuild:
    """What a build did: the index page's path, and which machines' pages were made and which read from the cache."""

    index: Path
    rendered: list[str]
    cached: list[str]


def build_site(results_root: Path, out: Path = Path("site/_build"), *, accuracy: Sequence[AccuracyRow] | None = None,
               pdf: bool = True, paper: str = DEFAULT_PAPER, progress: bool = False, cache: Path | None = None) -> Path:
    """Render every machine under RESULTS_ROOT into OUT; return the index page's path.

    `accuracy`: the planner's predictions checked against measurements, for the accuracy page (default:
    each pair of measured GPU types under the root predicts the other).
    `pdf`: render each machine's PDF (slow: seconds each; only those whose inputs changed).
    `cache`: the folder of what a build keeps for the next (default: OUT/.gpuplan-cache)."""
    return make_site(results_root, out, accuracy=accuracy, pdf=pdf, paper=paper, progress=progress, cache=cache).index


def make_site(results_root: Path, out: Path = Path("site/_build"), *, accuracy: Sequence[AccuracyRow] | None = None,
              pdf: bool = True, paper: str = DEFAULT_PAPER, progress: bool = False,
              cache: Path | None = None) -> SiteBuild:
    """`build_site`, saying what it made and what it read from the cache (planner/site/cache.py)."""
    out = Path(out).resolve()
    with no_cyclic_collections():
        return _make_site(results_root, out, accuracy=accuracy, pdf=pdf, paper=paper, progress=progress,
                          cache=SiteCache(Path(cache).resolve() if cache else out / CACHE_DIR))


@contextmanager
def no_cyclic_collections() -> Iterator[None]:
    """Python's cycle collector paused while a site is built. A build makes millions of objects that live until its
    end (the loaded machines, their plans and reports), and every collection of the oldest generation walks all of
    them: with it running, a quarter of a first build's CPU time and two thirds of a rebuild's went to it (20
    machines: 17 → 13 CPU-s, 1.3 → 0.5). What a build leaves in cycles is collected as usual once it returns."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _make_site(results_root: Path, out: Path, *, accuracy: Sequence[AccuracyRow] | None, pdf: bool, paper: str,
               progress: bool, cache: SiteCache) -> SiteBuild:
    paper_of(paper)
    stream = None if progress else io.StringIO()
    count = len(machine_folders(Path(results_root))) if Path(results_root).is_dir() else 0
    with Progress("site", count + 3, stream) as bar:
        bar.note(f"reading {count} machine folders")
        loaded = load_root(Path(results_root), cache)
        for line in loaded.warnings:
            warn(f"{PROG}: warning: {line}", bar if progress else None)
        bar.advance("loaded", count - len(loaded.machines))
        machines = loaded.machines
        context = measured_context(machines, loaded.digests, cache)
        shown = [planned_machine(m) for m in machines]  # a trace folder: its traces predicted (planner/trace)
        files_of = workload_files([w.workload for m in shown for w in m.workloads])
        nav = site_nav("../../", "", files_of)
        keys = {m.machine: digest_of("machine", loaded.digests[m.machine], context.digest, nav, pdf) for m in shown}
        manifest = load_manifest(out)
        stale = stale_pdfs(out, shown, keys, paper, manifest.get("pdf", {})) if pdf else {}
        pages, made = machine_pages(shown, context, keys, nav, pdf, set(stale), cache, bar)
        reports = [page.summary for page in pages.values()]
        check_unique_ids(shown, reports)
        files: dict[Path, str | bytes] = {out / ASSETS_DIR / VEGA_NAME: cached_javascript_bundle()}
        for page in pages.values():
            folder = safe_child(out / MACHINES_DIR, page.summary.machine_id)
            files.update({folder / HTML_NAME: page.html, folder / APPENDIX_NAME: page.appendix})
        bar.note("shared pages")
        files.update(shared_pages(out, machines, shown, loaded, context, reports, files_of, accuracy, cache))
        bar.advance("accuracy, job chooser, workloads, CSV")
        index_html = render_site_page("site_index.html.j2", site_nav("", INDEX_NAME, files_of), has_pdf=pdf,
                                      index=build_site_index(shown, reports, {
                                          name: f"{WORKLOADS_DIR}/{file}" for name, file in files_of.items()}),
                                      stamp="")
        digests = {pdf_path(out, pages[m].summary): pdf_key(keys[m], paper) for m in keys} if pdf else {}
        if stale:
            bar.note(f"rendering {len(stale)} PDF{'s' if len(stale) > 1 else ''} (seconds each)")
            made = render_machine_pdfs([pages[m].report for m in stale], paper)  # type: ignore[misc]
            files.update({path: data for path, data in zip(stale.values(), made, strict=True)})
        bar.advance("pages made")
        write_site(out, files, index_html, manifest, digests)
        cache.commit()
        bar.advance(f"written: {len(made)} machine pages made, {len(machines) - len(made)} from the cache")
    return SiteBuild(out / INDEX_NAME, made, [m.machine for m in machines if m.machine not in made])


def measured_context(machines: list[MachineResults], digests: dict[str, str], cache: SiteCache) -> Measured:
    """What every plan reads of the machines; its digest (the band table: a second of a 200-machine rebuild) read
    from the cache where the same folders were built before: the machines are their folders' documents."""
    context = Measured(tuple(machines), tuple(machines))
    key = digest_of("measured", tuple((m.machine, digests[m.machine]) for m in machines))
    found = cache.get("measured", key)
    if isinstance(found, str):
        context.known_digest(found)
    else:
        cache.put("measured", key, context.digest)
    return context


def warn(line: str, bar: Progress | None) -> None:
    if bar is not None:
        bar.warn(line)
    else:
        print(line, file=sys.stderr)


def pdf_path(out: Path, report: Report) -> str:
    """A machine's PDF, relative to the site's folder (the manifest's key)."""
    return (safe_child(out / MACHINES_DIR, report.machine_id) / PDF_NAME).relative_to(out).as_posix()


def pdf_key(page_key: str, paper: str) -> str:
    """What a PDF is made from: its page's inputs (the machine's documents, what its plan reads of the others, the
    code) and the paper."""
    return digest_of("pdf", page_key, paper)


def stale_pdfs(out: Path, machines: list[MachineResults], keys: dict[str, str], paper: str,
               old: dict) -> dict[str, Path]:
    """machine → its PDF's path, for each PDF whose inputs changed since the last build (or whose file is gone)."""
    stale = {}
    for m in machines:
        path = safe_child(out / MACHINES_DIR, sanitize_machine_id(m.machine)) / PDF_NAME
        rel = path.relative_to(out).as_posix()
        if old.get(rel) != pdf_key(keys[m.machine], paper) or not path.is_file():
            stale[m.machine] = path
    return stale


def machine_pages(machines: list[MachineResults], context: Measured, keys: dict[str, str], nav: list[NavLink],
                  pdf: bool, keep: set[str], cache: SiteCache, bar: Progress
                  ) -> tuple[dict[str, MachinePage], list[str]]:
    """machine → its page: from the cache where its key is there (and its whole report is not needed for a PDF),
    else made (on every core). Also returns the machines whose pages were made."""
    pages: dict[str, MachinePage] = {}
    for m in machines:
        found = cache.get("page", keys[m.machine]) if m.machine not in keep else None
        if isinstance(found, MachinePage):
            pages[m.machine] = found
    bar.advance("from the cache", len(pages))
    todo = [m for m in machines if m.machine not in pages]
    if todo:
        bar.note(f"planning and rendering {len(todo)} machines")
    made = build_machine_pages(todo, context, nav, pdf, keep, lambda: bar.advance("machine page"))
    for m, (page, data) in zip(todo, made, strict=True):
        pages[m.machine] = page
        cache.put_pickled("page", keys[m.machine], data)
    return {m.machine: pages[m.machine] for m in machines}, [m.machine for m in todo]


def shared_pages(out: Path, machines: list[MachineResults], shown: list[MachineResults], loaded: Loaded,
                 context: Measured, reports: list[Report], files_of: dict[str, str],
                 accuracy: Sequence[AccuracyRow] | None, cache: SiteCache) -> dict[Path, str | bytes]:
    """The workload pages, and the accuracy page, job chooser and CSV (each from the cache where every input is
    unchanged). `shown`: the machines as planned (a trace folder predicted), which the job chooser ranks; the
    accuracy page and the CSV are of what was measured."""
    files: dict[Path, str | bytes] = {}
    for page in build_workload_pages(reports, files_of):
        here = f"{WORKLOADS_DIR}/{page.file_name}"
        files[out / here] = render_site_page("site_workload.html.j2", site_nav("../", here, files_of), page=page)
    every = tuple(sorted(loaded.digests.items()))
    made = {
        ACCURACY_NAME: lambda: accuracy_page(machines, context, accuracy, files_of),
        JOBS_NAME: lambda: chooser_page(shown, context, files_of),
        CSV_NAME: lambda: csv_header() + "".join(loaded.csv[m.machine] for m in machines),
    }
    for name, make in made.items():
        key = digest_of(name, every, context.digest, tuple(files_of.items()),
                        None if accuracy is None or name != ACCURACY_NAME else tuple(accuracy))
        found = cache.get("shared", key)
        if not isinstance(found, str):
            found = make()
            cache.put("shared", key, found)
        files[out / name] = found
    return files


def accuracy_page(machines: list[MachineResults], context: Measured, accuracy: Sequence[AccuracyRow] | None,
                  files_of: dict[str, str]) -> str:
    """The predictions against measurements: given rows only, else each pair of measured GPU types, the published
    checks, the repeats, the bands' coverage and the multi-GPU check."""
    given = accuracy is not None
    crosschecks = [] if given else build_crosschecks(machines)
    repeats = [] if given else all_repeat_pairs(machines)
    coverage = [] if given else summarise(check_bands(context.band_table))
    scaling = [] if given else check_published_scaling(load_link_runs(machines))
    rows = accuracy if accuracy is not None else site_rows(iter_accuracy_tables(machines))
    page = build_accuracy_page(rows, crosschecks, repeats, coverage, scaling)
    return render_site_page("site_accuracy.html.j2", site_nav("", ACCURACY_NAME, files_of),
                            charts=page.chart is not None, accuracy=page)


def chooser_page(machines: list[MachineResults], context: Measured, files_of: dict[str, str]) -> str:
    """The job chooser, ranked from one machine per GPU type (the one that measured the most workloads): the
    ranking answers 'which instance', which the hosts of one GPU type answer alike."""
    chosen = one_per_gpu_type(machines, plannable)
    planned = [(m, report_plan(m, None, context)) for m in chosen]
    return render_site_page("site_jobs.html.j2", site_nav("", JOBS_NAME, files_of), chooser=build_chooser(planned),
                            amounts=", ".join(f"{k:g}" for k in AMOUNTS))


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
