"""Wall time of one machine's report (HTML and PDF) and of the site (no PDFs), for two checkouts of gpuplan in one
run: each timed in a fresh Python process, the checkouts alternating, REPEATS rounds after one warm-up round;
medians and spread (min–max) printed and written as JSON.

    python benchmarks/build_time.py --before /tmp/before --after . [--results results] [--repeats 5] [--out FILE]

`--before`/`--after`: repository roots (e.g. a `git worktree add /tmp/before <rev>`); each is imported from its
own root, with the committed results of `--results` (read the same by both).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# through the command line's own entry point, which both checkouts have (gpuplan report / gpuplan site)
STEPS = {
    "report": "from planner.cli import main; main(['report', {folder!r}, '--out', {out!r}])",
    "site": "from planner.cli import main; main(['site', {root!r}, '--out', {out!r}, '--no-pdf'])",
}


def time_once(repo: Path, step: str, results: Path) -> float:
    with tempfile.TemporaryDirectory() as out:
        code = STEPS[step].format(folder=str(results / "h100-80gb"), root=str(results), out=out)
        timer = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
        env = {**os.environ, "PYTHONPATH": str(repo)}
        done = subprocess.run([sys.executable, "-c", timer], cwd=repo, env=env, capture_output=True, text=True,
                              check=True)
        return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    results = args.results.resolve()
    times: dict[str, dict[str, list[float]]] = {s: {"before": [], "after": []} for s in STEPS}
    for round_ in range(args.repeats + 1):   # round 0 warms the file cache and is dropped
        for step in STEPS:
            for name, repo in (("before", args.before), ("after", args.after)):
                t = time_once(repo.resolve(), step, results)
                if round_:
                    times[step][name].append(t)
    summary = {step: {name: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "n": len(v)}
                      for name, v in by.items()} for step, by in times.items()}
    for step, by in summary.items():
        b, a = by["before"], by["after"]
        print(f"{step:6} before {b['median_s']:.2f} s ({b['min_s']:.2f}–{b['max_s']:.2f}), after "
              f"{a['median_s']:.2f} s ({a['min_s']:.2f}–{a['max_s']:.2f}), n={a['n']}")
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
