"""Each machine's report, page and PDF for the site, built on every core.

Building a report's charts (altair) is most of an HTML site's time, and WeasyPrint takes seconds a
PDF: a large site does that work in worker processes. The workers are forked, so they inherit the
loaded machines rather than receiving them, and send back only what they made. The first item is
made here, before the fork, so that templates, fonts and the Vega bundle are loaded once rather
than in every worker; a small site is made entirely here, where starting workers would cost more
than it saves. PDFs are the exception: their workers are spawned and receive the reports pickled
(`render_machine_pdfs` says why).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import Generic, TypeVar

from gpuplan_schema.results import MachineResults
from planner.plan.measured import Measured
from planner.plan.plan import report_plan
from planner.render.report import APPENDIX_NAME, HTML_NAME, NavLink, render_report_html, render_report_pdf
from planner.report.decision import DecisionSection
from planner.report.frame import Report, Section, build_report
from planner.report.multigpu import MultiGpuSection
from planner.report.summary import SummarySection
from planner.report.workloads import WorkloadSection

PARALLEL_FROM = 8   # items; fewer are made in this process
ASSETS_DIR, VEGA_NAME = "assets", "vega.js"   # the site's one copy of the Vega bundle
VEGA_SRC = f"../../{ASSETS_DIR}/{VEGA_NAME}"  # from a machine's pages
ANCHOR_ID, LOCAL_LINK = re.compile(r'\bid="([^"]+)"'), re.compile(r'href="#([^"]+)"')
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class MachinePage:
    summary: Report              # site_summary(report): what the index and workload pages read, and the cache keeps
    html: str                    # the short report: the answer and a page per workload (HTML_NAME)
    appendix: str                # every table of measurements (APPENDIX_NAME beside it)
    report: Report | None = None  # the whole report, where its PDF is to be rendered


@dataclass(frozen=True)
class _Job(Generic[T, R]):
    make: Callable[[T], R]
    items: Sequence[T]


_JOB: _Job | None = None  # set only while a pool of forked workers runs (they inherit it)


def _make_at(index: int) -> object:
    assert _JOB is not None
    return _JOB.make(_JOB.items[index])


def worker_count(jobs: int) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cores, jobs)


def map_forked(make: Callable[[T], R], items: Sequence[T], done: Callable[[], None] = lambda: None) -> list[R]:
    """[make(item) for item in items], on every core when there are enough items to pay for the workers; `done`
    is called as each item's result arrives. `make` and the items reach the workers by fork, never pickled; the
    results come back pickled."""
    global _JOB
    workers = worker_count(len(items) - 1)
    if workers < 2 or len(items) < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        return [_then(make(item), done) for item in items]
    first = _then(make(items[0]), done)
    _JOB = _Job(make, items)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            rest = range(1, len(items))
            made = pool.map(_make_at, rest)  # one item at a time: no worker waits idle on the last chunk
            return [first, *(_then(result, done) for result in made)]
    finally:
        _JOB = None


def _then(result: R, done: Callable[[], None]) -> R:
    done()
    return result


def build_machine_pages(machines: Sequence[MachineResults], context: Measured, nav: list[NavLink], has_pdf: bool,
                        keep: set[str], done: Callable[[], None] = lambda: None) -> list[tuple[MachinePage, bytes]]:
    """Each machine's plan (against the shared `context`), report and pages, in the order given, each with the
    page pickled without its report (as the cache keeps it: a worker sends it so, and the build need not pickle it
    again); the whole report is kept only for the machines named in `keep` (their PDFs are to be rendered)."""
    _ = context.digest, context.scaling  # worked out here, once, before the workers inherit it

    def make(machine: MachineResults) -> tuple[bytes, Report | None]:
        report = build_report(machine, report_plan(machine, None, context))
        short, appendix = (render_report_html(report, nav=nav, has_pdf=has_pdf, part=part, vega_src=VEGA_SRC)
                           for part in ("short", "appendix"))
        page = MachinePage(site_summary(report), *link_across(short, appendix))
        return pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL), report if machine.machine in keep else None

    made = map_forked(make, machines, done)
    return [(replace(pickle.loads(data), report=report), data) for data, report in made]


def link_across(short: str, appendix: str) -> tuple[str, str]:
    """A link to an anchor of the other page (a workload page's 'every trial', a glossary term) leads there."""
    def fix(html: str, other: str, other_name: str) -> str:
        own, theirs = set(ANCHOR_ID.findall(html)), set(ANCHOR_ID.findall(other))
        return LOCAL_LINK.sub(lambda m: f'href="{other_name}#{m[1]}"' if m[1] not in own and m[1] in theirs
                              else m[0], html)

    return fix(short, appendix, APPENDIX_NAME), fix(appendix, short, HTML_NAME)


def site_summary(report: Report) -> Report:
    """What the site's shared pages (index, workloads) read of a report, without its charts: what the cache keeps
    of it. Its decision, summary, workload and multi-GPU sections."""
    kept: list[Section] = []
    for section in report.sections:
        if isinstance(section, DecisionSection):
            kept.append(replace(section, blocks=[replace(b, chart=None) for b in section.blocks]))
        elif isinstance(section, WorkloadSection):
            kept.append(replace(section, throughput_chart=None, memory_chart=None, sequence_chart=None))
        elif isinstance(section, MultiGpuSection):
            kept.append(replace(section, busbw_chart=None))
        elif isinstance(section, SummarySection):
            kept.append(section)
    return replace(report, head=kept, pages=[], appendix=[])


def map_spawned(make: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """[make(item) for item in items], on every core when there are enough items, in fresh (spawned) processes:
    for work that must not inherit this process's threads. `make` and the items are pickled."""
    workers = worker_count(len(items))
    if workers < 2 or len(items) < PARALLEL_FROM:
        return [make(item) for item in items]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(make, items))


def render_machine_pdfs(reports: list[Report], paper: str) -> list[bytes]:
    """Spawned, not forked: a PDF's charts are SVG from vl-convert, whose runtime runs on threads that a forked
    child lacks; once this process had drawn a chart (the first PDF, made here), every forked child that drew one
    waited forever (the site of results/ at 8 machines, two of them added by the two-node emulation)."""
    return map_spawned(partial(render_report_pdf, paper=paper), reports)
