"""The CUDA caching allocator's own record of a boundary probe, beside the trace's replay of the same step: what
settles why a traced largest batch misses (issue 41; benchmarks/trace_boundaries.py says which miss and by what).

    OUT=/path python benchmarks/gpu_memory_history.py [--cases NAME,PRECISION,BATCH ...] [--small] [--trace-only]

Each case runs as the collector's boundary probe does (collectors/workloads/boundary.py `probe`: the model built on
the GPU, the step built by collectors/workloads/training.py with the workload's `probe_run` where it has one, two
training steps, cuDNN autotuning off where it has convolutions), under torch.cuda.memory._record_memory_history and
the profiler's memory record (which names the aten ops running each allocation), in a fresh child process (the
probe's own). Per case, $OUT/memory-history/<case>.json keeps:

- gpu: every allocator event (alloc, free, segment alloc and free: its bytes, its address, the Python frame that
  made it and `op`, the outermost and the innermost non-allocating aten op the profiler saw running it, matched
  by address and order), the peak allocated and reserved bytes, and whether the two steps fit;
- trace: the same step traced on the meta device here (collectors/trace): its allocations and frees in order (bytes,
  op, whether it is a cuDNN workspace), its replayed allocator's peak and the least capacity it runs in
  (collectors/trace/capacity.py: compare with the card less the context where a case fits or fails);
- a summary: both sequences' blocks of 64 MiB and more side by side (the order that sets fragmentation), the
  per-sample bytes the GPU allocated that the trace did not, and each side's blocks held at its peak summed by op
  (`gpu_peak_by_op`, `trace_peak_by_op`: bytes a sample).

The default cases, on an H100 (the measured boundaries that still miss, 2026-11-28; what each should settle):
  transformer-xl-base,fp32,96   the replay kept reserves 97.6 GB, released 80.3, the H100 80.4: where the GPU puts
                                the blocks the kept replay carves out of its cached logits segments
  transformer-xl-base,fp16,112  +6 %: the GPU reserved 81.9 GB, between the two replays (87.1 and 77.0)
  conv-rollout,tf32,8723        -26 %: the GPU reserved what it allocated (83.5 GB), the replay 1.45x its live
                                peak; at 2,048 cuDNN's untuned forward took a 17.2 GB workspace (twice the output)
  conv-rollout,fp16,17117       -26 %: the same in fp16 (83.8 GB allocated and reserved)
  conv-rollout,bf16,6528        +94 % before the bf16 batch norm's fp32 copy was traced (collectors/trace/kernels.py)
  sensor-cnn,bf16,745652        +6.5 %: its failed request (24.9 GB) was the batch norm's fp32 copy; the GPU
                                reserved 6.5 GB more than the replay
  gnmt,bf16,3931                +6 %: the replay's reservation jumps from batch to batch around the GPU's 76.5 GB
  mlp-stgan,bf16,1051582        +19 % before a reduced mse_loss's storage was traced (kernels.py)
Runs in under 3 minutes on one H100; 30 s with --small (the built-in tiny sizes, a real CPU step: the profiler's
allocations stand for the history). Without a GPU and without --small it traces the cases only (--trace-only).
Writes one tarball, $OUT/memory-history.tgz, again after each case.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CASES = ("transformer-xl-base,fp32,96", "transformer-xl-base,fp16,112", "conv-rollout,tf32,8723",
         "conv-rollout,fp16,17117", "conv-rollout,bf16,6528", "sensor-cnn,bf16,745652", "gnmt,bf16,3931",
         "mlp-stgan,bf16,1051582")
SMALL_CASES = ("mlp-stgan,fp32,4096", "gpt-small,bf16,2")
BIG = 64 << 20
MAX_ENTRIES = 2_000_000


def _spec(name: str) -> str:
    """A reference workload's file and function, or a case named by its own (examples/video_r2plus1d.py:build)."""
    from planner.trace.references import REFERENCE_SPECS
    return name if ".py:" in name else REFERENCE_SPECS[name]


def _probe_workload(name: str):  # noqa: ANN202 - a Workload, loaded on import of the collector
    """The workload as the boundary probe runs it: its cheaper `probe_run` where it has one (the conv rollout's two
    steps: the same peak as a hundred, collectors/workloads/boundary.py)."""
    from dataclasses import replace

    from collectors.workloads import load_workload
    workload = load_workload(_spec(name))
    return replace(workload, run=workload.probe_run) if workload.probe_run else workload


def gpu_events(name: str, precision: str, batch: int) -> dict:
    """The probe's two steps under the allocator's history, each allocation named by the aten ops that made it (the
    profiler's record of the same run). On a CPU (--small) the profiler's own allocations stand for the history."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from collectors.workloads.sweep_plan import untuned
    from collectors.workloads.training import build_step, precision_mode, prepare_model
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    workload = _probe_workload(name)
    variant = untuned(workload)
    if cuda:
        torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES, context="all", stacks="python")
    fits, reason = True, None
    # the CPU activity only: memory events come from the allocator's own report, on every device; CUPTI would take
    # device memory the probe never had
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
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
    out = {"fits": fits, "reason": reason, "device": device.type}
    try:
        profiled = profiled_events(prof, device.type)
    except Exception as e:  # the op names are a help: the allocator's record stands without them
        profiled, out["profiler_error"] = [], f"{type(e).__name__}: {e}"[:300]
    if cuda:
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
        out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(device)
        out["events"] = name_ops([_event(e) for trace in snapshot["device_traces"] for e in trace], profiled)
    else:
        out["events"] = profiled
        out["peak_allocated_bytes"] = live_peak(gpu_blocks(profiled))[0]
    return out


def _event(e: dict) -> dict:
    frames = e.get("frames") or []
    mine = next((f for f in frames if "/torch/" not in f.get("filename", "")), frames[0] if frames else {})
    # an "oom" event (the allocator's record of the failed request) carries the free memory, no address
    return {"action": e["action"], "bytes": e.get("size", 0), "addr": e.get("addr"),
            "where": f"{Path(mine.get('filename', '?')).name}:{mine.get('line', '?')} {mine.get('name', '')}"}


def profiled_events(prof, device_type: str) -> list[dict]:  # noqa: ANN001 - a torch.profiler.profile
    """The profiler's allocations and frees on `device_type`, in time order, each with the aten ops running it."""
    from torch._C._profiler import _EventType
    from torch.profiler._utils import traverse_dfs
    rows = []
    for e in traverse_dfs(prof.profiler.kineto_results.experimental_event_tree()):
        if e.typed[0] != _EventType.Allocation or e.typed[1].device.type != device_type:
            continue
        size = e.typed[1].alloc_size
        rows.append((e.start_time_ns, {"action": "alloc" if size > 0 else "free_completed", "bytes": abs(size),
                                       "addr": e.typed[1].ptr, "where": "", "op": _op_chain(e)}))
    return [row for _, row in sorted(rows, key=lambda r: r[0])]


ALLOCATING = ("aten::empty", "aten::empty_strided", "aten::empty_like", "aten::resize_")


def _op_chain(event) -> str:  # noqa: ANN001 - a profiler event
    """The outermost op (an autograd node's in backward) and the innermost one that is not a bare allocation:
    `aten::batch_norm > aten::_to_copy` names both the layer and what inside it allocated."""
    chain = []
    parent = event.parent
    while parent is not None:
        chain.append(parent.name)
        parent = parent.parent
    chain = [n for n in reversed(chain) if n.startswith(("aten::", "autograd::", "cudnn"))] or ["?"]
    inner = next((n for n in reversed(chain) if n not in ALLOCATING), chain[-1])
    return chain[0] if inner == chain[0] else f"{chain[0]} > {inner}"


def name_ops(events: list[dict], profiled: list[dict]) -> list[dict]:
    """Each history event with the op of the profiler's allocation at the same address, matched in order (one
    address holds one block at a time, so its n-th allocation in both records is the same block)."""
    from collections import defaultdict, deque
    ops: dict[int, deque] = defaultdict(deque)
    for p in profiled:
        if p["action"] == "alloc":
            ops[p["addr"]].append(p["op"])
    live: dict[int, str] = {}
    for e in events:
        if e["action"] == "alloc":
            live[e["addr"]] = ops[e["addr"]].popleft() if ops[e["addr"]] else "?"
        e["op"] = live.get(e["addr"], "") if e["addr"] is not None else ""
        if e["action"] == "free_completed":
            live.pop(e["addr"], None)
    return events


def gpu_blocks(events: list[dict]) -> list[tuple[int, int, str]]:
    return [(e["addr"], e["bytes"] if e["action"] == "alloc" else -1, e.get("op", "")) for e in events
            if e["action"] in ("alloc", "free_completed")]


def trace_blocks(events: list[dict]) -> list[tuple[int, int, str]]:
    """The trace's live blocks: cuDNN's workspaces left out (the trace's live peak leaves them out: they shrink to
    what fits, collectors/trace/capacity.py)."""
    return [(e["key"], e["bytes"], e["op"]) for e in events if not e.get("workspace")]


def live_peak(blocks: list[tuple[int, int, str]]) -> tuple[int, dict[int, tuple[int, str]]]:
    """The most bytes held at once and the blocks held then (key → (bytes, op)): (key, bytes, op) an allocation,
    (key, -1, _) its free."""
    live: dict[int, tuple[int, str]] = {}
    total = peak = 0
    at_peak: dict[int, tuple[int, str]] = {}
    for key, nbytes, op in blocks:
        if nbytes >= 0:
            live[key] = (nbytes, op)
            total += nbytes
        else:
            total -= live.pop(key, (0, ""))[0]
        if total > peak:
            peak, at_peak = total, dict(live)
    return peak, at_peak


def by_op(at_peak: dict[int, tuple[int, str]], batch: int, top: int = 15) -> list[tuple[str, float]]:
    """The blocks held at a peak, summed by the op that made them, in bytes a sample, largest first."""
    sums: dict[str, int] = {}
    for nbytes, op in at_peak.values():
        sums[op] = sums.get(op, 0) + nbytes
    return [(op, round(n / batch, 1)) for op, n in sorted(sums.items(), key=lambda kv: -kv[1])[:top]]


def trace_events(name: str, precision: str, batch: int) -> dict:
    """The same step on the meta device: the trace's allocations and frees (with the op that made each) and its
    replayed allocator."""
    from dataclasses import replace

    from collectors.trace import recorder
    from collectors.trace.allocator import replay
    from collectors.trace.capacity import least_capacity
    from collectors.trace.collect import load_on_meta
    from collectors.trace.step import trace_step
    ops: dict[tuple[int, bool], str] = {}   # (allocation, freed) → the op it happened in
    dispatch = recorder.TraceRecorder.__torch_dispatch__

    def named(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN202 - torch's signature
        first, threads = len(self.memory.events), len(self.blas_threads)
        out = dispatch(self, func, types, args, kwargs)
        held = len(self.blas_threads) - threads   # a cuBLAS workspace goes first in the events (workspace.py)
        op = f"{func._schema.name} {self.phase}"
        ops.update({(k, n < 0): op for k, n in self.memory.events[first + held:]})
        ops.update({(k, False): f"{op} (its thread's cuBLAS workspace)" for k, _ in self.memory.events[:held]})
        return out
    recorder.TraceRecorder.__torch_dispatch__ = named
    try:
        workload = load_on_meta(_spec(name))
        step = trace_step(replace(workload, run=workload.probe_run) if workload.probe_run else workload,
                          precision, batch)
    finally:
        recorder.TraceRecorder.__torch_dispatch__ = dispatch
    memory = step.memory
    allocator = replay(memory.events, workspaces=frozenset(memory.workspaces))
    return {"live_peak_bytes": memory.peak, "replayed_bytes": max(allocator.needed, allocator.held),
            "capacity_bytes": least_capacity(memory.events, memory.workspaces, memory.peak),
            "events": [{"key": k, "bytes": n, "op": ops.get((k, n < 0), "before the step"),
                        "workspace": k in memory.workspaces} for k, n in memory.events]}


def summary(gpu: dict, trace: dict, batch: int) -> dict:
    big_gpu = [(e["action"], e["bytes"], e["where"], e.get("op", "")) for e in gpu["events"]
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
            "gpu_peak_reserved_bytes": gpu.get("peak_reserved_bytes"), "trace_replayed_bytes": trace["replayed_bytes"],
            "gpu_peak_by_op": by_op(live_peak(gpu_blocks(gpu["events"]))[1], batch),
            "trace_peak_by_op": by_op(live_peak(trace_blocks(trace["events"]))[1], batch)}


def one_case(case: str, folder: Path, real: bool = True) -> str:
    """One case's record written to `folder`; `real` False: the trace side only (a CPU without the case's memory)."""
    name, precision, batch = case.split(",")
    gpu = gpu_events(name, precision, int(batch)) if real else {"fits": None, "reason": "not run: trace only",
                                                                "device": None, "events": []}
    trace = trace_events(name, precision, int(batch))
    record = {"case": case, "gpu": gpu, "trace": trace, "summary": summary(gpu, trace, int(batch))}
    (folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '-', case.replace(',', '-'))}.json").write_text(json.dumps(record) + "\n")
    s = record["summary"]
    gb = (lambda x: f"{x / 1e9:.2f} GB" if x else "–")  # noqa: E731
    ops = (lambda rows: "; ".join(f"{op or '?'} {n:,.0f}" for op, n in rows[:6]))  # noqa: E731
    return (f"{case}: fits {gpu['fits']}; GPU allocated {gb(gpu.get('peak_allocated_bytes'))}, reserved "
            f"{gb(s['gpu_peak_reserved_bytes'])}; trace live {gb(trace['live_peak_bytes'])}, replayed "
            f"{gb(s['trace_replayed_bytes'])}, least capacity {gb(trace['capacity_bytes'])}; GPU − trace a sample: "
            f"{s['allocated_gap_per_sample'] or 0:.0f} B\n"
            f"  at the GPU's peak, B a sample by op: {ops(s['gpu_peak_by_op'])}\n"
            f"  at the trace's peak: {ops(s['trace_peak_by_op'])}")


def _child(case: str, trace_only: bool, timeout: float) -> str:
    """One case in a fresh process (the probe's own: nothing cached from another case), its printed line."""
    command = [sys.executable, __file__, "--one", case, *(["--trace-only"] if trace_only else [])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return f"{case}: failed (over {timeout:.0f} s)"
    return done.stdout.strip() or f"{case}: failed ({done.stderr.strip().splitlines()[-1:]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", help="NAME,PRECISION,BATCH (default: the module docstring's)")
    parser.add_argument("--small", action="store_true", help="the CPU check: small batches")
    parser.add_argument("--trace-only", action="store_true",
                        help="skip the real step (the default where there is no GPU, except with --small)")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds a case may take (default 150)")
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
            print(one_case(args.one, folder, real=not args.trace_only), flush=True)
        except Exception:
            traceback.print_exc()
            return 1
        return 0
    import torch
    trace_only = args.trace_only or not (torch.cuda.is_available() or args.small)
    if trace_only and not args.trace_only:
        print("no GPU: the default cases' real steps are a GPU's; tracing them only (--small runs real CPU steps)")
    lines = []
    for case in args.cases or (SMALL_CASES if args.small else CASES):
        lines.append(_child(case, trace_only, args.timeout))
        print(lines[-1], flush=True)
        (folder / "summary.txt").write_text("\n".join(lines) + "\n")
        with tarfile.open(out / "memory-history.tgz", "w:gz") as tar:   # after each case: a later one may not end
            tar.add(folder, arcname="memory-history")
    print(f"wrote {out / 'memory-history.tgz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
