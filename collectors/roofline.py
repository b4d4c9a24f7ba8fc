"""`roofline` collector: per-operation roofline of each workload at its main configuration.

For each workload: the main batch (profiles.MAIN_BATCH; the tiny CPU sizes on a CPU) at bf16 (fp16
where the GPU has no bf16), the same step the workloads collector times (training.build_step, the
default variant: cudnn.benchmark on). One step for allocations and autotuning, then the step timed
plainly (CUDA events, a short plan), then PROFILE_STEPS steps under torch.profiler and the op
recorder. Each op's measured time, FLOPs, bytes, expected time at this machine's roofs (from its
ceilings document) and class go into one document per workload, `roofline-<workload>.json`.
Expected under 60 s for the four reference workloads on an H100 (resnet50's cuDNN autotuning alone: 19 s).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import torch

from collectors import profiles
from collectors.op_profile import profile_steps
from collectors.op_roofline import build_ops, build_roofs
from collectors.sweep import error_line, free_memory, is_oom
from collectors.timing import TimingPlan, synchronize, time_callable
from collectors.training import Variant, build_step, precision_mode, precision_unsupported, prepare_model
from collectors.workload_collector import build_sweep_plan, instantiate, load_ceilings
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import RooflinePayload, RooflineRoofs
from gpuplan_schema.progress import Progress

NAME, VERSION = "roofline", "1"
PRECISIONS = ("bf16", "fp16", "fp32")  # the first this device runs is profiled
# The plain step time only places the op times in the step (idle share): a short plan suffices.
GPU_STEP_PLAN = TimingPlan(warmup_s=0.2, sample_s=0.02, min_samples=5, max_samples=9, budget_s=0.8,
                           target_rel_iqr=0.02)
CPU_STEP_PLAN = TimingPlan(warmup_s=0.02, sample_s=0.01, min_samples=3, max_samples=5, budget_s=0.3)


def pick_precision(device: torch.device) -> str:
    return next(p for p in PRECISIONS if precision_unsupported(p, device) is None)


def collect_roofline(name: str, roofs: RooflineRoofs, device: torch.device, progress: Progress) -> RooflinePayload:
    """One workload's document; an out-of-memory or any other error becomes its status."""
    started = time.perf_counter()
    tiny = device.type == "cpu"
    workload = instantiate(name, device)
    batch = build_sweep_plan(name, workload, profiles.PROFILES["quick"], device).main_batch
    precision = pick_precision(device)
    base = dict(workload=workload.name, source=workload.source, device=device.type, precision=precision,
                batch=batch, training=workload.training, roofs=roofs, scale="tiny" if tiny else "reference",
                timer=device.type)
    free_memory(device)
    try:
        with precision_mode(precision, device, Variant()):
            step_s, profiled = _measure(workload, precision, batch, device, progress)
    except Exception as e:  # a user's step may raise anything: record it, go on with the next workload
        return RooflinePayload(status="oom" if is_oom(e) else "error", reason=error_line(e),
                               elapsed_s=time.perf_counter() - started, **base)
    finally:
        free_memory(device)
    progress.note(f"{name}: {len(profiled.calls)} op calls profiled")
    return RooflinePayload(status="ok", steps=profiled.steps, step_s=step_s, unattributed_s=profiled.unattributed_s,
                           unmatched_calls=profiled.unmatched,
                           ops=build_ops(profiled.calls, roofs, precision, profiled.steps),
                           elapsed_s=time.perf_counter() - started, **base)


def _measure(workload, precision: str, batch: int, device: torch.device, progress: Progress):  # noqa: ANN001, ANN202
    """The plain step time, then the profiled steps; the model and step die with this frame."""
    model = prepare_model(workload, device, Variant())
    step = build_step(workload, model, precision, batch, device, Variant())
    progress.note(f"{workload.name}: first step (allocations, autotuning)")
    step.run()
    synchronize(device)
    progress.note(f"{workload.name}: timing the step")
    step_s = time_callable(step.run, device, GPU_STEP_PLAN if device.type == "cuda" else CPU_STEP_PLAN)
    progress.note(f"{workload.name}: profiling")
    return step_s, profile_steps(step.run, device)


def iter_roofline_documents(names: list[str], folder: Path, device: torch.device,
                            progress: Progress) -> Iterator[tuple[str, RooflinePayload]]:
    """(file stem, payload) per workload, yielded as each finishes so it is saved at once."""
    roofs = build_roofs(load_ceilings(folder), device.type, str(folder / "ceilings.json"))
    progress.total = len(names)
    for name in names:
        payload = collect_roofline(name, roofs, device, progress)
        progress.advance(f"{name}: {payload.status}")
        yield f"roofline-{sanitize_machine_id(payload.workload)}", payload


def summarize_roofline(payload: RooflinePayload) -> str:
    """One line for the collection summary: time share by class and the op that loses the most."""
    if payload.status != "ok":
        return f"{payload.status}: {payload.reason or ''}".strip()
    total = payload.op_time_s or 1.0
    shares: dict[str, float] = {}
    for op in payload.ops:
        shares[op.op_class] = shares.get(op.op_class, 0.0) + op.time_s.median / total
    parts = ", ".join(f"{name} {share:.0%}" for name, share in sorted(shares.items(), key=lambda kv: -kv[1]))
    ranked = [op for op in payload.ops if op.lost_s is not None]
    worst = max(ranked, key=lambda op: op.lost_s, default=None)
    return parts + (f"; most time lost: {worst.name}" if worst else "")
