"""How far one out-of-memory boundary moves when its search is repeated, each search in a fresh process.

The accuracy check of max batch compares a predicted boundary with one measured search. With PyTorch's
default allocator that search's answer depends on how the cache happened to be cut up, so a boundary moves
between collections (docs/history.md, "The boundary in a fresh process"). This repeats the search of one
(workload, precision, allocator) REPEATS times, each in a new Python process (the collector's own child,
collectors/workloads/boundary_process.py; this process never starts CUDA), starting from the line through the
committed document's memory readings (not from its boundary) and bisecting to TOLERANCE, tighter than the
collector's 2 %. Runs on the GPU host with torch, nvidia-ml-py and the standard library, from the repository
root:

    python3 benchmarks/boundary_spread.py --machine-dir results/h200 --workload mlp-stgan \\
        --precision fp32 --allocator default --repeats 3 --out spread.json

Each search runs with the collector's settings (`untuned`: no cuDNN autotuning where there is a convolution).
The output (appended to --out when it exists) lists each search's variant, bracket and probes. Searches
without a `variant` field were made with PyTorch's defaults, cuDNN autotuning on: for mlp-stgan and gpt-small
(no convolution) the same thing, for conv-rollout not. Output committed: results/*/diagnostics/boundary-spread.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.workloads import load_workload  # noqa: E402
from collectors.workloads.boundary_process import Search, iter_boundary_in_fresh_process  # noqa: E402
from collectors.workloads.sweep_plan import untuned  # noqa: E402
from gpuplan_schema.payloads import OomBoundary  # noqa: E402
from gpuplan_schema.schema import load_document  # noqa: E402

TOLERANCE = 0.005
CAP = 1 << 40  # no cap: the card stops the search


def gpu_name() -> str | None:
    """The GPU's name from NVML: CUDA in this process would hold memory the searches are measuring."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
    except Exception:  # noqa: BLE001 - the name is a label; a search without it still counts
        return None


def one_search(search: Search) -> dict:
    """One search, in a fresh child process (the collector's own, collectors/workloads/boundary_process.py),
    as a dict."""
    started = time.perf_counter()
    probes, found = [], None
    for item in iter_boundary_in_fresh_process(search):
        if isinstance(item, OomBoundary):
            found = item
            continue
        probes.append({"batch": item.batch, "status": item.status,
                       "peak_allocated_bytes": item.memory.peak_allocated_bytes if item.memory else None,
                       "peak_reserved_bytes": item.memory.peak_reserved_bytes if item.memory else None})
    return {"max_batch": found.max_batch if found else None,
            "first_oom_batch": found.first_oom_batch if found else None,
            "status": found.status if found else "error", "reason": found.reason if found else None,
            "probes": probes, "wall_s": round(time.perf_counter() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine-dir", type=Path, required=True, help="results/<machine>: its committed document")
    parser.add_argument("--workload", required=True, help="a built-in name or path/to/file.py:function")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--allocator", choices=("default", "expandable_segments"), default="default")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("boundary-spread.json"))
    args = parser.parse_args()
    workload = load_workload(args.workload)  # on the CPU: only its name and whether it convolves
    name = workload.name
    committed = load_document(args.machine_dir / f"workload-{name}.json").payload
    measured = [p for p in committed.points if p.precision == args.precision and p.status == "ok"
                and p.seq_len is None and p.memory and p.variant in ("default", "no_cudnn_benchmark")]
    # the collector's own settings: without cuDNN autotuning where there is a convolution (its algorithms'
    # workspaces set conv-rollout's boundary: 11.5 k with autotuning off, 16.4 k with it on, H200 bf16)
    variant = replace(untuned(workload), expandable_segments=args.allocator == "expandable_segments")
    search = Search(args.workload, "cuda", args.precision, measured, CAP, variant.name, tolerance=TOLERANCE,
                    limit_s=float("inf"))  # the spread to the last batch: no time limit
    searches = json.loads(args.out.read_text())["searches"] if args.out.exists() else []
    for i in range(args.repeats):
        found = {"workload": name, "precision": args.precision, "allocator": args.allocator, "variant": variant.name,
                 "gpu": gpu_name(), "torch": torch.__version__, "tolerance": TOLERANCE, **one_search(search)}
        searches.append(found)
        print(f"{name} {args.precision} {args.allocator} search {i + 1}: {found['max_batch']} "
              f"(first OOM {found['first_oom_batch']}, {len(found['probes'])} probes, {found['wall_s']} s)"
              + (f": {found['reason']}" if found["status"] == "error" else ""), flush=True)
        args.out.write_text(json.dumps({"searches": searches}, indent=1))  # each search kept as it ends
    return 0


if __name__ == "__main__":
    sys.exit(main())
