"""`gpuplan trace`: trace workloads on the meta device into a machine folder of `trace-<workload>.json` documents.

Each workload is built on the meta device (no weights are made: a 1 B-parameter model traces on a laptop) and its
step traced at the standard profile's configurations (collectors/core/profiles.py, workloads/sweep_plan.py): the
main batch at every precision (and twice it, for the memory line), and at bf16 the batch sweep, doubling from the
workload's first batch up to the profile's cap. A traced step costs the same at any batch, so the sweep goes to the
cap, or until the step would hold more than MAX_DEVICE_BYTES, which no GPU of the catalog has.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import torch

from collectors.core import profiles
from collectors.trace.allocator import reserved_peak
from collectors.trace.capacity import least_capacity
from collectors.trace.memory import thin
from collectors.trace.recorder import TracedCall
from collectors.trace.step import trace_step
from collectors.workloads import BUILTIN, Workload, WorkloadError, load_workload
from collectors.workloads.sweep_plan import build_sweep_plan
from gpuplan_schema.payloads import TracedOp, TraceMemory, TracePayload, TraceRun
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import build_document, save_document

COLLECTOR, VERSION = "trace", "1"
MAX_DEVICE_BYTES = 256 << 30   # above the largest catalog GPU (192 GB): a larger step fits none
GPU = torch.device("cuda")      # the sweep plan of a GPU (only its type is read; no GPU is needed)


def load_on_meta(spec: str) -> Workload:
    """A built-in name or path/to/file.py:function, its model built on the meta device."""
    with torch.device("meta"):
        return load_workload(spec)


def trace_configs(spec: str, workload: Workload) -> list[tuple[str, int]]:
    """(precision, batch) of the standard profile for this workload: the main batch (and twice it) at every precision,
    then the rest of the bf16 sweep (checked against MAX_DEVICE_BYTES as it goes)."""
    name = spec if spec in BUILTIN else workload.name
    plan = build_sweep_plan(name, workload, profiles.STANDARD, GPU)
    # twice the main batch too, at every precision: two batches draw each precision's memory line (peak against batch)
    configs = [(p, b) for p in profiles.STANDARD.precisions for b in (plan.main_batch, 2 * plan.main_batch)]
    batch = plan.start
    while batch <= plan.cap:
        if (profiles.MAIN_PRECISION, batch) not in configs:
            configs.append((profiles.MAIN_PRECISION, batch))
        batch *= 2
    return configs


def split_configs(spec: str, workload: Workload) -> list[tuple[str, int]]:
    """(precision, batch) that split a measured step by its ops (planner/trace/hybrid.py): bf16 at the main batch, a
    quarter and twice it (the batches the per-op profile would take), tf32 at the main batch."""
    main = build_sweep_plan(spec if spec in BUILTIN else workload.name, workload, profiles.STANDARD, GPU).main_batch
    batches = dict.fromkeys((max(1, main // 4), main, 2 * main))
    return [(profiles.MAIN_PRECISION, b) for b in batches] + [("tf32", main)]


def aggregate(calls: list[TracedCall]) -> list[TracedOp]:
    """Calls with the same name, phase, dtype and shapes as one row, in the order they first ran."""
    groups: dict[tuple, list[TracedCall]] = defaultdict(list)
    for call in calls:
        groups[call.key].append(call)
    out = []
    for (name, phase, dtype, shapes, variant), group in groups.items():
        flops = None if any(c.flops is None for c in group) else sum(c.flops for c in group)  # type: ignore[misc]
        out.append(TracedOp(name, phase, len(group), float(sum(c.read_bytes for c in group)),
                            float(sum(c.written_bytes for c in group)), sum(c.launches for c in group), dtype,
                            [list(s) for s in shapes], flops, variant))
    return out


def trace_run(workload: Workload, precision: str, batch: int) -> TraceRun:
    started = time.perf_counter()
    try:
        step = trace_step(workload, precision, batch)
    except Exception as e:  # the user's model on meta: a data-dependent op, a CPU-only call; said, not raised
        first = (str(e).splitlines() or [""])[0].strip()[:300]
        return TraceRun(precision, batch, "error", f"{type(e).__name__}: {first}",
                        trace_s=time.perf_counter() - started)
    mem = step.memory
    part = mem.at_peak
    workspaces = frozenset(mem.workspaces)   # the kept and released replays leave cuDNN's workspaces out
    memory = TraceMemory(mem.peak, part.get("parameters", 0), part.get("inputs", 0), part.get("gradients", 0),
                         part.get("optimizer", 0), part.get("activations", 0) + part.get("other", 0),
                         [list(p) for p in thin(mem.timeline)], mem.largest,
                         reserved_peak(mem.events, workspaces=workspaces),
                         reserved_peak(mem.events, release_empty=True, workspaces=workspaces),
                         least_capacity(mem.events, mem.workspaces, mem.peak),
                         least_capacity(mem.events, mem.workspaces, mem.peak, release_empty=True))
    return TraceRun(precision, batch, "ok", None, aggregate(step.calls), memory, time.perf_counter() - started,
                    step.module_calls)


def iter_runs(spec: str, workload: Workload, progress: Progress | None = None,
              configs: list[tuple[str, int]] | None = None) -> Iterator[TraceRun]:
    """The workload's traced runs (`configs`, default the standard profile's: trace_configs); the sweep stops past
    MAX_DEVICE_BYTES or at its first failed run."""
    configs = configs or trace_configs(spec, workload)
    for i, (precision, batch) in enumerate(configs):
        if progress:
            progress.note(f"{workload.name} {precision} batch {batch}")
        run = trace_run(workload, precision, batch)
        yield run
        if progress:
            progress.advance(f"{workload.name} {precision} batch {batch}: {run.status}")
        too_big = run.memory is not None and run.memory.peak_bytes > MAX_DEVICE_BYTES
        if i >= 2 * len(profiles.STANDARD.precisions) and (too_big or run.status != "ok"):
            if progress:
                progress.advance("", len(configs) - i - 1)
            return


def trace_workload(spec: str, workload: Workload | None = None, progress: Progress | None = None,
                   configs: list[tuple[str, int]] | None = None) -> TracePayload:
    """Trace one workload (a built-in name or path/to/file.py:function; `workload`: it loaded by load_on_meta
    already) at `configs` (default: the standard profile's). Raises WorkloadError for a file that cannot be loaded."""
    started = time.perf_counter()
    workload = workload or load_on_meta(spec)
    runs = list(iter_runs(spec, workload, progress, configs))
    main = build_sweep_plan(spec if spec in BUILTIN else workload.name, workload, profiles.STANDARD, GPU).main_batch
    parameters = sum(p.numel() for p in workload.model.parameters())
    return TracePayload(workload.name, workload.source, workload.unit, workload.training, parameters, main, runs,
                        time.perf_counter() - started, torch.__version__, workload.tokens_per_sample)


def save_trace(payload: TracePayload, folder: Path, machine: str) -> Path:
    doc = build_document("trace", COLLECTOR, VERSION, machine, payload)
    return save_document(doc, Path(folder) / f"trace-{payload.workload}.json")


__all__ = ["WorkloadError", "save_trace", "trace_configs", "trace_workload"]
