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
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Generic, TypeVar

from gpuplan_schema.results import MachineResults
from planner.plan.plan import Plan
from planner.render.report import NavLink, render_report_html, render_report_pdf
from planner.report.frame import Report, build_report

PARALLEL_FROM = 8   # items; fewer are made in this process
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class MachinePage:
    report: Report
    html: str


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


def map_forked(make: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """[make(item) for item in items], on every core when there are enough items to pay for the workers.
    `make` and the items reach the workers by fork, never pickled; the results come back pickled."""
    global _JOB
    workers = worker_count(len(items) - 1)
    if workers < 2 or len(items) < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        return [make(item) for item in items]
    first = make(items[0])
    _JOB = _Job(make, items)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            rest = range(1, len(items))
            return [first, *pool.map(_make_at, rest, chunksize=max(1, len(rest) // (8 * workers)))]
    finally:
        _JOB = None


def build_machine_pages(planned: list[tuple[MachineResults, Plan | None]], nav: list[NavLink],
                        has_pdf: bool) -> list[MachinePage]:
    """Each machine's report and its page from its plan (built once by the caller), in the order given."""
    machines = [m for m, _ in planned]

    def make(pair: tuple[MachineResults, Plan | None]) -> MachinePage:
        report = build_report(pair[0], pair[1], machines)
        return MachinePage(report, render_report_html(report, nav=nav, has_pdf=has_pdf))

    return map_forked(make, planned)


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
