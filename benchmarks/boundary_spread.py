"""How far one out-of-memory boundary moves when its search is repeated, each search in a fresh process.

Issue 18's max-batch check compares a predicted boundary with one measured search. With PyTorch's default
allocator that search's answer depends on how the cache happened to be cut up: the H200's mlp-stgan fp32
boundary was 2,007,806 in one collection and 1,967,810 (-2.0 %) in another. This repeats the search of one
(workload, precision, allocator) REPEATS times, each in a new Python process (a fresh CUDA context and
cache), starting from the line through the committed document's memory readings (not from its boundary)
and bisecting to TOLERANCE, tighter than the collector's 2 %. Runs on the GPU host with torch and the
standard library, from the repository root:

    python3 benchmarks/boundary_spread.py --machine-dir results/h200 --workload mlp-stgan \\
        --precision fp32 --allocator default --repeats 3 --out spread.json

Each search runs with the collector's settings (`untuned`: no cuDNN autotuning where there is a convolution).
The output (appended to --out when it exists) lists each search's variant, bracket and probes. Searches
without a `variant` field were made before that (2026-11-23, first runs) with PyTorch's defaults, cuDNN
autotuning on: for mlp-stgan and gpt-small (no convolution) the same thing, for conv-rollout not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TOLERANCE = 0.005
BUILTIN_OR_EXAMPLE = {"vit-tiny": "examples/vit_tiny.py:build",
                      "wide-transformer": "examples/wide_transformer.py:build",
                      "dlrm-small": "examples/dlrm_small.py:build", "sensor-cnn": "examples/user_workload.py:build"}


def one_search(args: argparse.Namespace) -> dict:
    """One search in this process: the probes and the boundary, as a dict."""
    import torch

    from collectors import boundary
    from collectors.sweep import Context
    from collectors.workload_collector import untuned
    from collectors.workloads import load_workload
    from gpuplan_schema.schema import load_document

    boundary.BOUNDARY_TOLERANCE = TOLERANCE  # this study's tighter bracket; the collector keeps 2 %
    device = torch.device("cuda")
    committed = load_document(args.machine_dir / f"workload-{args.workload}.json").payload
    measured = [p for p in committed.points if p.precision == args.precision and p.status == "ok"
                and p.seq_len is None and p.memory and p.variant in ("default", "no_cudnn_benchmark")]
    with device:
        workload = load_workload(BUILTIN_OR_EXAMPLE.get(args.workload, args.workload))
    # the collector's own settings: without cuDNN autotuning where there is a convolution (its algorithms'
    # workspaces set conv-rollout's boundary: 11.5 k with autotuning off, 16.4 k with it on, H200 bf16)
    variant = replace(untuned(workload), expandable_segments=args.allocator == "expandable_segments")
    started = time.perf_counter()
    probes, found = [], None
    for item in boundary.iter_boundary(workload, args.precision, measured, Context(device), cap=1 << 40,
                                       variant=variant):
        if hasattr(item, "sweep"):
            probes.append({"batch": item.batch, "status": item.status,
                           "peak_allocated_bytes": item.memory.peak_allocated_bytes if item.memory else None,
                           "peak_reserved_bytes": item.memory.peak_reserved_bytes if item.memory else None})
        else:
            found = item
    return {"workload": args.workload, "precision": args.precision, "allocator": args.allocator,
            "variant": variant.name,
            "gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "tolerance": TOLERANCE,
            "max_batch": found.max_batch if found else None,
            "first_oom_batch": found.first_oom_batch if found else None,
            "status": found.status if found else "error", "probes": probes,
            "wall_s": round(time.perf_counter() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine-dir", type=Path, required=True, help="results/<machine>: its committed document")
    parser.add_argument("--workload", required=True)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--allocator", choices=("default", "expandable_segments"), default="default")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("boundary-spread.json"))
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one search, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_search(args)))
        return 0
    searches = json.loads(args.out.read_text())["searches"] if args.out.exists() else []
    for i in range(args.repeats):
        child = subprocess.run([sys.executable, __file__, "--one", *sys.argv[1:]], capture_output=True, text=True)
        if child.returncode != 0:
            print(f"search {i + 1}: rc {child.returncode}: {child.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        found = json.loads(child.stdout.strip().splitlines()[-1])
        searches.append(found)
        print(f"{args.workload} {args.precision} {args.allocator} search {i + 1}: {found['max_batch']} "
              f"(first OOM {found['first_oom_batch']}, {len(found['probes'])} probes, {found['wall_s']} s)",
              flush=True)
        args.out.write_text(json.dumps({"searches": searches}, indent=1))  # each search kept as it ends
    return 0


if __name__ == "__main__":
    sys.exit(main())
