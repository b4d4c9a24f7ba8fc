"""The site's PDFs in parallel after this process has drawn a chart: forked children hung on vl-convert's runtime
(the site of results/ at 8 machines stopped at 'rendering 8 PDFs'), spawned ones do not. Run in a child process
under a time limit, so that a regression fails rather than hanging the suite."""

from __future__ import annotations

import subprocess
import sys

from paths import FROZEN, REPO

SCRIPT = f"""
import planner.site.machines as machines
from gpuplan_schema.results import load_machine
from planner.render.report import render_report_pdf
from planner.report.frame import build_report

report = build_report(load_machine({str(FROZEN / "vm-cpu")!r}))
render_report_pdf(report, "a4")             # vl-convert's runtime now runs in this process
machines.PARALLEL_FROM = 2
pdfs = machines.render_machine_pdfs([report, report], "a4")
print(len(pdfs), all(p.startswith(b"%PDF") for p in pdfs))
"""


def test_site_pdfs_render_in_worker_processes_after_this_process_drew_a_chart():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["2", "True"]
