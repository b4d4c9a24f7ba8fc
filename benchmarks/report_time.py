"""Wall time and peak memory of `gpuplan report` on one machine folder, each run a fresh process pinned to `--cores`
CPUs (issue 37's target: the 15-workload H100 report in ≤ 15 s and ≤ 400 MB on 2 cores), and where the time goes.

    python benchmarks/report_time.py [--folder results/h100-80gb] [--cores 2] [--repeats 5] [--before REPO]
                                     [--full] [--stages] [--out FILE]

Each run is `python -m planner.cli report FOLDER --out TMP` in a child process (os.wait4 gives its own peak
resident set); one warm-up run is dropped, then REPEATS runs, alternating with `--before` (another checkout's
root, e.g. `git worktree add /tmp/before <rev>`) where given. Medians and spread (min–max) are printed and written as
JSON with `--out`. `--stages` times the stages in this process once: load and plan, the report's structure, the
HTML, the PDF's HTML (SVG charts), WeasyPrint's layout, and writing the PDF, with the PDF's page count.

The machine it runs on must be quiet (no other build or test): timings on a shared machine say little.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_once(repo: Path, folder: Path, cores: int, full: bool) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one `gpuplan report` in a fresh process on `cores` CPUs."""
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as shim:
        args = [sys.executable, "-m", "planner.cli", "report", str(folder), "--out", out, *(["--full"] if full else [])]
        # the templates install as gpuplan_templates (pyproject's package-dir): each checkout's own, not the venv's
        (Path(shim) / "gpuplan_templates").symlink_to(repo / "templates")
        env = {**os.environ, "PYTHONPATH": f"{shim}{os.pathsep}{repo}"}
        allowed = sorted(os.sched_getaffinity(0))[:cores]
        start = time.perf_counter()
        child = subprocess.Popen(args, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 preexec_fn=lambda: os.sched_setaffinity(0, allowed))  # noqa: PLW1509
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise SystemExit(f"report failed ({child.returncode}): {child.stderr.read().decode()[-500:]}")
        return wall, usage.ru_maxrss / 1024   # Linux: kilobytes


def stages(folder: Path, full: bool) -> dict[str, float]:
    """Each stage of one report, timed in this process (imports first, so they are not counted in a stage)."""
    sys.path.insert(0, str(REPO))
    import weasyprint  # noqa: F401 - its import (pango) is part of the first PDF's cost otherwise

    from gpuplan_schema.results import load_machine
    from planner.plan.plan import report_plan
    from planner.render.report import layout_report_pdf, render_report_html, source_date_epoch
    from planner.report.frame import build_report

    out: dict[str, float] = {}
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        out[name] = now - t
        t = now

    machine = load_machine(folder)
    lap("load")
    plan = report_plan(machine, None, [machine])
    lap("plan")
    report = build_report(machine, plan, [machine])
    lap("report structure")
    render_report_html(report)
    lap("HTML")
    render_report_html(report, pdf=True, full=full)
    lap("PDF's HTML (SVG charts)")
    document = layout_report_pdf(report, full=full)
    lap("PDF layout (WeasyPrint)")
    with source_date_epoch(report.collected):
        document.write_pdf()
    lap("PDF write")
    out["pages"] = len(document.pages)
    return out


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=REPO / "results" / "h100-80gb")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout's root, timed alternately")
    parser.add_argument("--full", action="store_true", help="time `gpuplan report --full` (the appendix in the PDF)")
    parser.add_argument("--stages", action="store_true", help="time each stage once, in this process")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    repos = {"after": REPO, **({"before": args.before.resolve()} if args.before else {})}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in repos}
    for round_ in range(args.repeats + 1):   # round 0 warms the file cache and is dropped
        for name, repo in repos.items():
            measured = run_once(repo, folder, args.cores, args.full)
            if round_:
                runs[name].append(measured)
    result = {"folder": str(folder), "cores": args.cores, "full": args.full,
              **{name: {"wall_s": summary([w for w, _ in r]), "peak_rss_mb": summary([m for _, m in r])}
                 for name, r in runs.items()}}
    for name in repos:
        wall, rss = result[name]["wall_s"], result[name]["peak_rss_mb"]
        print(f"{name:6} wall {wall['median']:.1f} s ({wall['min']:.1f}–{wall['max']:.1f}), peak RSS "
              f"{rss['median']:.0f} MB ({rss['min']:.0f}–{rss['max']:.0f}), n={wall['n']}, {args.cores} cores")
    if args.stages:
        result["stages_s"] = stages(folder, args.full)
        for stage, seconds in result["stages_s"].items():
            print(f"  {stage:28} {seconds:.2f}" + ("" if stage != "pages" else " pages"))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
