"""What `gpuplan trace` costs on a laptop-class CPU: a 350 M-parameter decoder (gpt-small's code at GPT-2 medium's
width: 20 layers, d_model 1024, 16 heads, vocabulary 50,257 with an untied head, sequence 1024; 355 M parameters)
traced at the standard profile's configurations, on 2 CPU cores, in a process of its own: its wall time and its
peak resident memory.

    python benchmarks/trace_memory.py [--cores 2] [--repeats 3] [--out FILE]

Each repeat runs `python -m collectors.trace benchmarks/trace_decoder.py:build` (what `gpuplan trace` runs) pinned
to the first `--cores` cores (taskset) into a temporary folder; the wall time is the child's,
the peak memory its maximum resident set (getrusage of the children, in a fresh process per repeat so that each
repeat's maximum is its own). Acceptance (issue 41): at most 60 s and 4 GB. Timings taken on a shared machine are
not claims: re-time on a quiet one (the median of the repeats and their spread are printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECODER = ROOT / "benchmarks" / "trace_decoder.py"   # the 355 M-parameter decoder
MEASURE = '''
import resource, subprocess, sys, time, json
started = time.perf_counter()
rc = subprocess.call(sys.argv[1:])
wall = time.perf_counter() - started
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"rc": rc, "wall_s": wall, "max_rss_bytes": rss}))
'''


def one_run(folder: Path, cores: int) -> dict:
    """One traced run in a fresh measuring process (so RUSAGE_CHILDREN is this run's alone)."""
    pin = ["taskset", "-c", f"0-{cores - 1}"] if shutil.which("taskset") and cores < (os.cpu_count() or 1) else []
    trace = [*pin, sys.executable, "-m", "collectors.trace", f"{DECODER}:build", "--out", str(folder / "out"),
             "--machine", "decoder"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS=str(cores))
    done = subprocess.run([sys.executable, "-c", MEASURE, *trace], env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise SystemExit(f"the measuring process failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, default=2, help="CPU cores to pin the trace to (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats (default 3; the median is reported)")
    parser.add_argument("--out", type=Path, help="write the runs and their summary as JSON here")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="gpuplan-trace-bench-") as tmp:
        folder = Path(tmp)
        for i in range(args.repeats):
            run = one_run(folder, args.cores)
            if run["rc"]:
                raise SystemExit(f"gpuplan trace exited {run['rc']}")
            runs.append(run)
            print(f"run {i + 1}: {run['wall_s']:.1f} s, peak RSS {run['max_rss_bytes'] / 2**30:.2f} GiB", flush=True)
        doc = json.loads(next((folder / "out" / "decoder").glob("trace-*.json")).read_text())
    walls = [r["wall_s"] for r in runs]
    rss = [r["max_rss_bytes"] for r in runs]
    summary = {"cores": args.cores, "repeats": len(runs), "wall_s_median": statistics.median(walls),
               "wall_s_min": min(walls), "wall_s_max": max(walls), "max_rss_bytes_median": statistics.median(rss),
               "max_rss_bytes_max": max(rss), "parameters": doc["payload"]["parameters"],
               "traced_steps": len(doc["payload"]["runs"]), "limit_s": 60, "limit_bytes": 4e9,
               "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(f"{summary['parameters'] / 1e6:.0f} M parameters, {summary['traced_steps']} steps traced on {args.cores} "
          f"cores: median {summary['wall_s_median']:.1f} s (min {summary['wall_s_min']:.1f}, max "
          f"{summary['wall_s_max']:.1f}; limit 60 s), peak RSS {summary['max_rss_bytes_max'] / 1e9:.2f} GB "
          f"(limit 4 GB)")
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
