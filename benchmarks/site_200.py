"""How long `build_site` takes for 200 machines, made from the committed results with perturbed numbers.

    python3 benchmarks/site_200.py [--machines 200] [--repeats 3] [--pdf-samples 2]

Method. The machines are copies of results/*/ (H100, H200 and the CPU run, in turn), each with its
own id and every measured figure scaled by a random factor (±10%, seeded; a statistic's median,
quartiles and extremes by the same factor, so it stays ordered), written to a temporary folder.
One warm-up build (imports, fonts, the inlined Vega bundle) is not counted; then:

- cold: `--repeats` builds of the HTML site (index, one report page per machine, workload pages,
  accuracy page, CSV) into a fresh, empty folder each;
- rebuild: `--repeats` builds into the folder of the last cold build, where nothing changed (the
  cost of `gpuplan site` on an unchanged root: every page is still rendered and compared, none is
  written);
- PDF: the time of one machine's PDF (WeasyPrint), over `--pdf-samples` machines of each kind.
  The site renders a machine's PDF once and again only when its report or gpuplan changes, so a
  cold site with PDFs costs about machines × this on top of the cold HTML build.

It prints the median, the minimum and the maximum of each, the pages written and the largest
machine page. The CPU is shared, so a figure is only as quiet as the machine was.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
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


def describe(name: str, runs: list[tuple[float, float]]) -> str:
    wall, cpu = [w for w, _ in runs], [c for _, c in runs]
    return (f"{name:<8} median {statistics.median(wall):7.2f} s   min {min(wall):7.2f} s   max {max(wall):7.2f} s"
            f"   ({len(runs)} runs; CPU time median {statistics.median(cpu):.1f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pdf-samples", type=int, default=1, help="PDFs timed per kind of machine (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuplan-site-bench-") as tmp:
        root, work = Path(tmp) / "results", Path(tmp)
        make_machines(root, args.machines)
        print(f"{args.machines} machines from {', '.join(SOURCES)} in {root}", flush=True)
        warm, _ = timed(lambda: build_site(root, work / "warm", pdf=False))
        print(f"warm-up  {warm:7.2f} s (not counted)", flush=True)
        cold = []
        for i in range(args.repeats):
            cold.append(timed(lambda i=i: build_site(root, work / f"cold-{i}", pdf=False)))
            shutil.rmtree(work / f"cold-{i - 1}", ignore_errors=True)
        last = work / f"cold-{args.repeats - 1}"
        rebuild = [timed(lambda: build_site(root, last, pdf=False)) for _ in range(args.repeats)]
        files = [p for p in last.rglob("*") if p.is_file()]
        largest = max((p for p in files if p.name == "index.html" and p.parent.parent.name == "machines"),
                      key=lambda p: p.stat().st_size)
        print(describe("cold", cold))
        print(describe("rebuild", rebuild))
        print(f"pages    {len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.0f} MB; largest machine "
              f"page {largest.stat().st_size / 1e6:.2f} MB ({largest.parent.name})")
        sampled = [f"{SOURCES[i % len(SOURCES)]}-{i:03d}" for i in range(args.pdf_samples * len(SOURCES))]
        pdf = [timed(lambda m=m: render_report_pdf(build_report_for(root / m))) for m in sampled]
        if pdf:
            print(describe("one PDF", pdf))
    return 0


if __name__ == "__main__":
    sys.exit(main())
