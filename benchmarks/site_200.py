"""How the site's build time grows with the machines: first build and rebuild at 20, 50, 100 and 200 machines.

    python3 benchmarks/site_200.py [--sizes 20 50 100 200] [--repeats 1] [--pdf-samples 0]

Method. The machines are copies of results/*/ (H100, H200 and the CPU run, in turn), each with its
own id and every measured figure scaled by a random factor (±10%, seeded; a statistic's median,
quartiles and extremes by the same factor, so it stays ordered), written to a temporary folder.
Each size runs in a fresh Python process (so that its peak RSS is its own), which first builds a
3-machine site (imports, fonts, the Vega bundle: not counted), then:

- first: `--repeats` builds of the HTML site (no PDFs) into an empty folder each (no cache);
- rebuild: `--repeats` builds into the folder of the last first build, nothing changed (every
  machine page read from the site's cache, the shared pages compared, nothing written);
- peak RSS: the process's and its workers' largest resident set (ru_maxrss).

It prints one line per size (median, min and max of each; seconds per machine of the first build, wall
and CPU: user + sys of the process and its workers, less sensitive to other load than wall time; the
rebuild's CPU seconds),
then the ratio of the largest size's s/machine to the smallest's (issue 42: within 1.5×), and, with
`--pdf-samples N`, one PDF's time over N machines of each kind. The CPU is shared, so a figure is
only as quiet as the machine was.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from planner.render.report import render_report_pdf  # noqa: E402
from planner.report.frame import build_report_for  # noqa: E402
from planner.site.build import build_site  # noqa: E402

SOURCES = ("h100-80gb", "h200", "vm-cpu")
STAT_KEYS = {"median", "q1", "q3", "min", "max", "n"}
SPREAD = 0.10


def perturb(value: object, rng: random.Random) -> object:
    """Every float scaled by its own factor; a statistic's five figures by one factor; ints kept."""
    if isinstance(value, dict):
        if set(value) == STAT_KEYS:
            factor = 1 + rng.uniform(-SPREAD, SPREAD)
            return {k: (v if k == "n" else v * factor) for k, v in value.items()}
        return {k: perturb(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [perturb(v, rng) for v in value]
    if isinstance(value, float):
        return value * (1 + rng.uniform(-SPREAD, SPREAD))
    return value


def make_machines(root: Path, count: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(count):
        source = REPO / "results" / SOURCES[i % len(SOURCES)]
        machine = f"{source.name}-{i:03d}"
        folder = root / machine
        folder.mkdir(parents=True)
        for path in sorted(source.glob("*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            doc["machine"] = machine
            doc["payload"] = perturb(doc["payload"], rng)
            (folder / path.name).write_text(json.dumps(doc), encoding="utf-8")


def cpu_now() -> float:
    """CPU seconds so far of this process and its (finished) workers."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn) -> tuple[float, float]:  # noqa: ANN001 - any callable
    """(wall seconds, CPU seconds) of fn()."""
    cpu, started = cpu_now(), time.perf_counter()
    fn()
    return time.perf_counter() - started, cpu_now() - cpu


def describe(runs: list[float]) -> str:
    return f"{statistics.median(runs):7.2f} s ({min(runs):.2f}–{max(runs):.2f})"


def peak_rss_mb() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return max(own.ru_maxrss, children.ru_maxrss) / 1024  # KiB on Linux


def one_size(count: int, repeats: int) -> dict:
    """Time the site of `count` machines in this process; return the figures."""
    with tempfile.TemporaryDirectory(prefix="gpuplan-site-bench-") as tmp:
        work = Path(tmp)
        make_machines(work / "warm-root", 3, seed=1)
        build_site(work / "warm-root", work / "warm", pdf=False)
        make_machines(work / "results", count)
        first, first_cpu = [], []
        for i in range(repeats):
            wall, cpu = timed(lambda i=i: build_site(work / "results", work / f"first-{i}", pdf=False))
            first.append(wall)
            first_cpu.append(cpu)
            shutil.rmtree(work / f"first-{i - 1}", ignore_errors=True)
        last = work / f"first-{repeats - 1}"
        rebuild, rebuild_cpu = zip(*(timed(lambda: build_site(work / "results", last, pdf=False))
                                     for _ in range(repeats)), strict=True)
        pages = [p for p in (last / "machines").glob("*/index.html")]
        return {"machines": count, "first": first, "rebuild": list(rebuild), "first_cpu": first_cpu,
                "rebuild_cpu": list(rebuild_cpu), "rss_mb": peak_rss_mb(),
                "largest_page_mb": max(p.stat().st_size for p in pages) / 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100, 200])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--pdf-samples", type=int, default=0, help="PDFs timed per kind of machine (0: none)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: one size, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_size(args.one, args.repeats)))
        return 0
    rows = []
    print(f"{'machines':>8}  {'first build':>22}  {'rebuild':>22}  {'s/machine':>9}  {'CPU s/machine':>13}"
          f"  {'rebuild CPU':>11}  {'peak RSS':>9}  largest page")
    for count in args.sizes:
        child = subprocess.run([sys.executable, __file__, "--one", str(count), "--repeats", str(args.repeats)],
                               capture_output=True, text=True)
        if child.returncode:
            print(child.stderr, file=sys.stderr)
            return child.returncode
        row = json.loads(child.stdout.splitlines()[-1])
        rows.append(row)
        per = statistics.median(row["first"]) / count
        cpu = statistics.median(row["first_cpu"]) / count
        print(f"{count:>8}  {describe(row['first']):>22}  {describe(row['rebuild']):>22}  {per:8.3f}s"
              f"  {cpu:12.3f}s  {statistics.median(row['rebuild_cpu']):9.2f} s"
              f"  {row['rss_mb']:7.0f} MB  {row['largest_page_mb']:.2f} MB", flush=True)
    if len(rows) > 1:
        small, large = (statistics.median(r["first"]) / r["machines"] for r in (rows[0], rows[-1]))
        print(f"s/machine at {rows[-1]['machines']} ÷ at {rows[0]['machines']}: {large / small:.2f}× (flat: ≤ 1.5×)")
    if args.pdf_samples:
        with tempfile.TemporaryDirectory(prefix="gpuplan-pdf-bench-") as tmp:
            make_machines(Path(tmp), args.pdf_samples * len(SOURCES))
            pdf = [timed(lambda m=m: render_report_pdf(build_report_for(m)))[0] for m in sorted(Path(tmp).iterdir())]
            print(f"one PDF  {describe(pdf)} over {len(pdf)} machines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
