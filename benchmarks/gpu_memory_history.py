"""The CUDA caching allocator's own record of a boundary probe, beside the trace's replay of the same step: what
settles why a traced largest batch misses (issue 41; benchmarks/trace_boundaries.py says which miss and by what).

    OUT=/path python benchmarks/gpu_memory_history.py [--cases NAME,PRECISION,BATCH ...] [--small]

Each case runs as the collector's boundary probe does (collectors/workloads/boundary.py `probe`: the model built on
the GPU, the step built by collectors/workloads/training.py, two steps, cuDNN autotuning off where it has
convolutions), under torch.cuda.memory._record_memory_history, in a fresh child process (the probe's own). Per case,
$OUT/memory-history/<case>.json keeps:

- gpu: every allocator event (alloc, free, segment alloc and free: its bytes, its address, the Python frame that
  made it and the aten op the profiler's record says ran it), the peak allocated and reserved bytes, and whether the
  two steps fit;
- trace: the same step traced on the meta device here (collectors/trace): its allocations and frees in order (bytes,
  op) and its replayed allocator's peak;
- a summary: both sequences' blocks of 64 MiB and more side by side (the order that sets fragmentation), and the
  per-sample bytes the GPU allocated that the trace did not.

The default cases, on an H100 (what each should settle):
  transformer-xl-base,fp32,96   the replay reserves 97.6 GB where the H100 reserved 80.4 GB (a cached logits segment
                                carved by long-lived blocks in the replay, not on the GPU: where do they go there?)
  mlp-stgan,fp32,262144         the GPU allocates 12,000 B a sample (one fp32 copy of the 3,000 features) more than
                                the trace at every batch and precision: which op
  conv-rollout,bf16,2048        bf16 allocates a block of fp32 size (25.8 GiB at 6,596) where fp16 does not: cuDNN's
                                workspace or an upcast
  conv-rollout,tf32,2048        tf32 holds 7 GB more than the trace at its boundary and fp32 none: cuDNN's workspace
  sensor-cnn,bf16,262144        the GPU reserves 6.5 GB more than the replay at its boundary
  gpt-small,bf16,77             the reference the replay matches (83.3 GB replayed, 83.5 GB reserved)
Runs in about 2 minutes on one H100 (the conv rollout's two steps dominate); 30 s with --small (the built-in tiny
sizes, for a CPU check of the script: no GPU events then). Writes one tarball, $OUT/memory-history.tgz.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CASES = ("transformer-xl-base,fp32,96", "mlp-stgan,fp32,262144", "conv-rollout,bf16,2048", "conv-rollout,tf32,2048",
         "sensor-cnn,bf16,262144", "gpt-small,bf16,77")
SMALL_CASES = ("mlp-stgan,fp32,4096", "gpt-small,bf16,2")
BIG = 64 << 20
MAX_ENTRIES = 2_000_000


def _spec(name: str) -> str:
    from planner.trace.references import REFERENCE_SPECS
    return REFERENCE_SPECS[name]


def gpu_events(name: str, precision: str, batch: int) -> dict:
    """The probe's two steps under the allocator's history (an empty record on a CPU)."""
    import torch

    from collectors.workloads import load_workload
    from collectors.workloads.sweep_plan import untuned
    from collectors.workloads.training import build_step, precision_mode, prepare_model
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    workload = load_workload(_spec(name))
    variant = untuned(workload)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES, context="all", stacks="python")
    fits, reason = True, None
    try:
        with precision_mode(precision, device, variant):
            model = prepare_model(workload, device, variant)
            step = build_step(workload, model, precision, batch, device, variant)
            for _ in range(2 if step.optimizer else 1):
                step.run()
            if cuda:
                torch.cuda.synchronize(device)
    except Exception as e:  # an OOM is an answer too: the record up to it is what explains it
        fits, reason = False, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    out = {"fits": fits, "reason": reason, "events": []}
    if cuda:
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
        out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(device)
        out["events"] = [_event(e) for trace in snapshot["device_traces"] for e in trace]
    return out


def _event(e: dict) -> dict:
    frames = e.get("frames") or []
    mine = next((f for f in frames if "/torch/" not in f.get("filename", "")), frames[0] if frames else {})
    # an "oom" event (the allocator's record of the failed request) carries the free memory, no address
    return {"action": e["action"], "bytes": e.get("size", 0), "addr": e.get("addr"),
            "where": f"{Path(mine.get('filename', '?')).name}:{mine.get('line', '?')} {mine.get('name', '')}"}


def trace_events(name: str, precision: str, batch: int) -> dict:
    """The same step on the meta device: the trace's allocations and frees (with the op that made each) and its
    replayed allocator."""
    from collectors.trace import recorder
    from collectors.trace.allocator import replay
    from collectors.trace.collect import load_on_meta
    from collectors.trace.step import trace_step
    ops: dict[int, str] = {}
    dispatch = recorder.TraceRecorder.__torch_dispatch__

    def named(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN202 - torch's signature
        first = len(self.memory.events)
        out = dispatch(self, func, types, args, kwargs)
        ops.update(dict.fromkeys(range(first, len(self.memory.events)), f"{func._schema.name} {self.phase}"))
        return out
    recorder.TraceRecorder.__torch_dispatch__ = named
    try:
        step = trace_step(load_on_meta(_spec(name)), precision, batch)
    finally:
        recorder.TraceRecorder.__torch_dispatch__ = dispatch
    events = step.memory.events
    allocator = replay(events)
    return {"live_peak_bytes": step.memory.peak, "replayed_bytes": max(allocator.needed, allocator.held),
            "events": [{"key": k, "bytes": n, "op": ops.get(i, "before the step")} for i, (k, n) in enumerate(events)]}


def summary(gpu: dict, trace: dict, batch: int) -> dict:
    big_gpu = [(e["action"], e["bytes"], e["where"]) for e in gpu["events"]
               if e["bytes"] >= BIG and e["action"] in ("alloc", "free_completed", "segment_alloc", "segment_free")]
    sizes: dict[int, int] = {}
    big_trace = []
    for e in trace["events"]:
        if e["bytes"] >= 0:
            sizes[e["key"]] = e["bytes"]
        nbytes = sizes.get(e["key"], 0)
        if nbytes >= BIG:
            big_trace.append(("alloc" if e["bytes"] >= 0 else "free", nbytes, e["op"]))
    gap = (gpu["peak_allocated_bytes"] - trace["live_peak_bytes"]) / batch if gpu.get("peak_allocated_bytes") else None
    return {"gpu_big_blocks": big_gpu, "trace_big_blocks": big_trace, "allocated_gap_per_sample": gap,
            "gpu_peak_reserved_bytes": gpu.get("peak_reserved_bytes"), "trace_replayed_bytes": trace["replayed_bytes"]}


def one_case(case: str, folder: Path) -> str:
    name, precision, batch = case.split(",")
    gpu = gpu_events(name, precision, int(batch))
    trace = trace_events(name, precision, int(batch))
    record = {"case": case, "gpu": gpu, "trace": trace, "summary": summary(gpu, trace, int(batch))}
    (folder / f"{case.replace(',', '-')}.json").write_text(json.dumps(record) + "\n")
    s = record["summary"]
    gb = (lambda x: f"{x / 1e9:.2f} GB" if x else "–")  # noqa: E731
    return (f"{case}: fits {gpu['fits']}; GPU allocated {gb(gpu.get('peak_allocated_bytes'))}, reserved "
            f"{gb(s['gpu_peak_reserved_bytes'])}; trace live {gb(trace['live_peak_bytes'])}, replayed "
            f"{gb(s['trace_replayed_bytes'])}; GPU − trace a sample: {s['allocated_gap_per_sample'] or 0:.0f} B")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", help="NAME,PRECISION,BATCH (default: the module docstring's)")
    parser.add_argument("--small", action="store_true", help="the CPU check: small batches")
    parser.add_argument("--one", help=argparse.SUPPRESS)   # the child's case
    args = parser.parse_args(argv)
    out = Path(os.environ.get("OUT", "")) if os.environ.get("OUT") else None
    if out is None:
        print("gpu_memory_history.py: set OUT to the folder the tarball goes to", file=sys.stderr)
        return 2
    folder = out / "memory-history"
    folder.mkdir(parents=True, exist_ok=True)
    if args.one:
        try:
            print(one_case(args.one, folder), flush=True)
        except Exception:
            traceback.print_exc()
            return 1
        return 0
    lines = []
    for case in args.cases or (SMALL_CASES if args.small else CASES):
        done = subprocess.run([sys.executable, __file__, "--one", case], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        lines.append(done.stdout.strip() or f"{case}: failed ({done.stderr.strip().splitlines()[-1:]})")
        print(lines[-1], flush=True)
    (folder / "summary.txt").write_text("\n".join(lines) + "\n")
    with tarfile.open(out / "memory-history.tgz", "w:gz") as tar:
        tar.add(folder, arcname="memory-history")
    print(f"wrote {out / 'memory-history.tgz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
