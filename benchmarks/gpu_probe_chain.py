"""Does a boundary probe's answer depend on the probes run before it in the same process? (issue 41)

    OUT=/path python benchmarks/gpu_probe_chain.py [--chains NAME,PRECISION,B1:B2:... ...]
                                                   [--fresh NAME,PRECISION,B ...]

The collector searches an out-of-memory boundary in one child process (collectors/workloads/boundary_process.py),
probe after probe on one built workload (collectors/workloads/boundary.py `probe`: two training steps, then
gc and empty_cache). What a probe leaves live survives empty_cache with the segments it sits in: the model's
gradients, and any tensor the model keeps on itself (Transformer-XL's recurrence memory `self.mems`); the next
probe's blocks are carved out of those segments. Replayed on the traces (benchmarks/trace_boundary_search.py), the
searches the H100 and the H200 ran for Transformer-XL come out probe for probe (33 of 36), while the same batch
traced alone, as a job started on its own runs it, fails at the measured fp32 and fp16 boundaries (the H100's
memory history, results/h100-80gb/diagnostics/memory-history-2026-11-28b, failed at fp32 96 and fp16 112 exactly
where that replay does).

This runs both on one GPU with the collector's own `probe`:
- a chain: the batches in order in one child process on one workload, as a boundary search runs them;
- fresh: each batch alone in a child process of its own (a training job started at that batch).
The parent never touches CUDA (the children have the whole card, less nothing but their own context).
Writes $OUT/probe-chain.json (every probe: batch, status, peak allocated and reserved bytes, the OOM's message)
and prints one line a case. The defaults are the H200's Transformer-XL searches (the order its collection ran them,
results/h200/workload-transformer-xl-base.json) and the batches where the trace says a job started on its own
stops fitting (fp16 192 fits, 194 not; fp32 146 fits, 148 not, and 174, the measured boundary, not; bf16 168
fits). About 6 minutes on an H200.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHAINS = ("transformer-xl-base,fp16,12:174:181:196:188:192:194", "transformer-xl-base,fp32,12:176:168:172:174",
          "transformer-xl-base,bf16,184:176:161:168:172:174")
FRESH = ("transformer-xl-base,fp16,192", "transformer-xl-base,fp16,194", "transformer-xl-base,fp32,146",
         "transformer-xl-base,fp32,148", "transformer-xl-base,fp32,174", "transformer-xl-base,bf16,168",
         "transformer-xl-base,bf16,174")


def run_chain(name: str, precision: str, batches: list[int]) -> list[dict]:
    """The probes in one process on one workload, as boundary_process.run_search runs a search (child side)."""
    import torch

    from collectors.workloads.boundary import probe
    from collectors.workloads.sweep import Context
    from collectors.workloads.sweep_plan import instantiate, untuned
    from planner.trace.references import REFERENCE_SPECS
    device = torch.device("cuda")
    workload = instantiate(REFERENCE_SPECS.get(name, name), device)
    ctx = Context(device)
    out = []
    for batch in batches:
        point = probe(workload, precision, batch, ctx, untuned(workload))
        memory = point.memory
        out.append({"batch": batch, "status": point.status, "reason": point.reason, "wall_s": point.wall_s,
                    "peak_allocated_bytes": memory.peak_allocated_bytes if memory else None,
                    "peak_reserved_bytes": memory.peak_reserved_bytes if memory else None})
    return out


def _child(kind: str, case: str, timeout: float) -> list[dict]:
    command = [sys.executable, __file__, "--child", case]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return [{"case": case, "kind": kind, "status": "error", "reason": f"over {timeout:.0f} s"}]
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]   # the child's one JSON list
    if not lines:
        return [{"case": case, "kind": kind, "status": "error", "reason": f"exit {done.returncode}: "
                 + (done.stderr.strip() or done.stdout.strip())[-500:]}]
    return [{"case": case, "kind": kind, **p} for p in json.loads(lines[-1])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", nargs="*", default=list(CHAINS), help="NAME,PRECISION,B1:B2:... in one process")
    parser.add_argument("--fresh", nargs="*", default=list(FRESH), help="NAME,PRECISION,B each in its own process")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds a child may take")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, precision, batches = args.child.split(",")
        print(json.dumps(run_chain(name, precision, [int(b) for b in batches.split(":")])), flush=True)
        return 0
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    if out is None:
        print("gpu_probe_chain.py: set OUT to the folder the results go to", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    records: list[dict] = []
    started = time.perf_counter()
    for kind, cases in (("chain", args.chains), ("fresh", args.fresh)):
        for case in cases:
            probes = _child(kind, case, args.timeout)
            records += probes
            print(f"{kind} {case}: " + " ".join(f"{p.get('batch', '?')}{'+' if p['status'] == 'ok' else '-'}"
                                              for p in probes), flush=True)
            (out / "probe-chain.json").write_text(json.dumps(records, indent=1) + "\n")
    print(f"wrote {out / 'probe-chain.json'} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
