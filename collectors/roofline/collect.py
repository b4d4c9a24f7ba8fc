"""`roofline` collector: per-operation roofline of each workload at its main configuration and at a few
other batches (a quarter of the main batch, twice it, and the throughput knee of the workload's batch sweep
where this machine's workloads document has one: the batch the planner recommends, so that its bound is
judged from a profile of that batch, see `other_batches`).

For each workload and batch: the main batch (profiles.MAIN_BATCH; the tiny CPU sizes on a CPU) at bf16 (fp16
where the GPU has no bf16), the same step the workloads collector times (training.build_step, the
default variant: cudnn.benchmark on). One step for allocations and autotuning, then the step timed
plainly (CUDA events, a short plan), then PROFILE_STEPS steps under torch.profiler and the op
recorder. Each op's measured time, FLOPs, bytes, expected time at this machine's roofs (from its
ceilings document) and class go into one document per workload, `roofline-<workload>.json`. The other
batches of a network with convolutions run without cuDNN autotuning (each new shape costs 5-20 s of
autotuning on an H100), as the workloads collector's batch sweep does; each says its variant. Twice
the main batch is skipped (and said so) when the main step is longer than DOUBLE_STEP_LIMIT_S.
On a GPU, each precision of EXTRA_PRECISIONS (tf32) that the workloads document timed is profiled too, at the
batches of its plain points, into `roofline-<workload>-tf32.json` (the planner splits the tf32 steps by it).
Expected under 3 min for the four reference workloads on an H100 (resnet50's cuDNN autotuning alone: 19 s; the
tf32 profiles of every committed workload together took 77 s).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from collectors.core import profiles
from collectors.core.device import error_line, free_memory, is_oom
from collectors.core.timing import TimingPlan, synchronize, time_callable
from collectors.roofline.op_profile import ProfiledSteps, profile_steps
from collectors.roofline.op_roofline import build_ops, build_roofs
from collectors.workloads import Workload
from collectors.workloads.collect import workload_name
from collectors.workloads.sweep_plan import build_sweep_plan, instantiate, load_ceilings, untuned
from collectors.workloads.training import Variant, build_step, precision_mode, precision_unsupported, prepare_model
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import RooflineAtBatch, RooflinePayload, RooflineRoofs, WorkloadPayload, class_times
from gpuplan_schema.payloads.workloads import PLAIN_VARIANTS
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import DocumentError, load_document
from gpuplan_schema.stats import Stat

# 2: the step profiled at a few other batches too (`batches`: main/4 and 2 x main), so that the planner
# sees how each class of op scales with the batch. A version 1 document stays valid (no other batches).
# 3: the sweep's knee profiled too (where the workloads document has a sweep); documents of 1 and 2 stay valid.
# 4: each precision of EXTRA_PRECISIONS the workloads document timed is profiled too, at the batches of its plain
#    points, in a document of its own (`roofline-<workload>-<precision>.json`); documents of 1-3 stay valid.
# Documents keep the workload file's hash (source_sha256): a changed file is profiled again.
NAME, VERSION = "roofline", "4"
PRECISIONS = ("bf16", "fp16", "fp32")  # the first this device runs is profiled
# Profiled beside the main precision where this machine's workloads document timed it: a tf32 step split by the
# counts alone scales its whole non-matmul rest with the SM clock (docs/prediction-model.md § 4); measured, the
# published tf32 rows across architectures went from a median 9.9 % off to 6.4 %.
EXTRA_PRECISIONS = ("tf32",)
EXTRA_BATCHES = 2  # at most, the largest timed: the plan's tf32 answers come from its largest points
# The plain step time only places the op times in the step (idle share): a short plan suffices.
GPU_STEP_PLAN = TimingPlan(warmup_s=0.2, sample_s=0.02, min_samples=5, max_samples=9, budget_s=0.8,
                           target_rel_iqr=0.02)
CPU_STEP_PLAN = TimingPlan(warmup_s=0.02, sample_s=0.01, min_samples=3, max_samples=5, budget_s=0.3)
# On a GPU, twice the main batch is profiled only when the main step is shorter than this: a longer one
# would double a workload's profiling time for a point the workloads collector's sweep already times.
# Not on a CPU: its tiny sizes test the path, and a limit there would depend on the machine's load.
DOUBLE_STEP_LIMIT_S = 0.5


def pick_precision(device: torch.device) -> str:
    return next(p for p in PRECISIONS if precision_unsupported(p, device) is None)


def other_batches(main: int, knee: int | None = None) -> list[int]:
    """The batches profiled beside the main one: a quarter of it (at least 1), twice it, and the sweep's knee."""
    return sorted({max(1, main // 4), 2 * main, knee or main} - {main})


def workload_document(folder: Path, workload: str) -> WorkloadPayload | None:
    """This machine's workloads document of `workload`, if any (an unreadable one is none)."""
    for path in sorted(folder.glob("workload-*.json")):
        try:
            payload = load_document(path).payload
        except DocumentError:
            continue
        # by its name, or as its files are named (a resume knows the workload by its document's stem)
        if isinstance(payload, WorkloadPayload) and workload in (payload.workload,
                                                                 sanitize_machine_id(payload.workload)):
            return payload
    return None


def sweep_knee(folder: Path, workload: str, precision: str) -> int | None:
    """The knee of the workload's batch sweep at `precision` in this machine's workloads document, if any."""
    payload = workload_document(folder, workload)
    return payload.sweep_knee(precision) if payload else None


def timed_batches(folder: Path, workload: str, precision: str) -> list[int]:
    """The batches this machine's workloads document timed `precision` at in a plain variant (largest first, at
    most EXTRA_BATCHES): where a profile at that precision splits the steps the planner predicts from."""
    payload = workload_document(folder, workload)
    if payload is None:
        return []
    batches = {p.batch for p in payload.points if p.precision == precision and p.status == "ok" and p.step_s
               and p.variant in PLAIN_VARIANTS and p.seq_len is None and p.sweep not in ("probe", "repeat")}
    return sorted(batches, reverse=True)[:EXTRA_BATCHES]


def collect_roofline(name: str, roofs: RooflineRoofs, device: torch.device, progress: Progress,
                     folder: Path | None = None, precision: str | None = None,
                     batches: list[int] | None = None, variant: Variant | None = None) -> RooflinePayload:
    """One workload's document: the main batch, then the others; an out-of-memory or any other error
    becomes that batch's status. With `precision` and `batches`: those batches at that precision instead (the
    first is the document's main one), in `variant` (default: the plain run; benchmarks/dle_points.py names a
    layout)."""
    started = time.perf_counter()
    workload = instantiate(name, device)
    if precision and batches:
        profiled = [profile_batch(workload, precision, b, variant or Variant(), roofs, device, progress)
                    for b in batches]
        return _document(workload, precision, profiled, roofs, device, started)
    main = build_sweep_plan(name, workload, profiles.PROFILES["quick"], device).main_batch
    precision = pick_precision(device)
    knee = sweep_knee(folder, workload.name, precision) if folder else None
    first = profile_batch(workload, precision, main, Variant(), roofs, device, progress)
    others = []
    for batch in other_batches(main, knee):
        too_long = device.type == "cuda" and first.step_s is not None and first.step_s.median > DOUBLE_STEP_LIMIT_S
        if batch == 2 * main and batch != knee and (first.status != "ok" or too_long):
            why = (f"the main batch's step takes {first.step_s.median:.2f} s (> {DOUBLE_STEP_LIMIT_S} s)"
                   if first.step_s else f"the main batch ended {first.status}")
            others.append(RooflineAtBatch(batch, "skipped", reason=why))
            continue
        others.append(profile_batch(workload, precision, batch, untuned(workload), roofs, device, progress))
    return _document(workload, precision, [first, *others], roofs, device, started)


def _document(workload: Workload, precision: str, profiled: list[RooflineAtBatch], roofs: RooflineRoofs,
              device: torch.device, started: float) -> RooflinePayload:
    """The document of profiled batches, the first its main one."""
    first, others = profiled[0], profiled[1:]
    return RooflinePayload(
        workload=workload.name, source=workload.source, device=device.type, precision=precision, batch=first.batch,
        training=workload.training, roofs=roofs, scale="tiny" if device.type == "cpu" else "reference",
        timer=device.type, status=first.status, reason=first.reason, steps=first.steps, step_s=first.step_s,
        unattributed_s=first.unattributed_s, unmatched_calls=first.unmatched_calls, ops=first.ops,
        batches=others, variant=first.variant, elapsed_s=time.perf_counter() - started,
        source_sha256=workload.source_sha256)


def profile_batch(workload: Workload, precision: str, batch: int, variant: Variant, roofs: RooflineRoofs,
                  device: torch.device, progress: Progress) -> RooflineAtBatch:
    """One batch profiled; an error is its status, and the memory is freed either way."""
    started = time.perf_counter()
    free_memory(device)
    try:
        with precision_mode(precision, device, variant):
            step_s, profiled = _measure(workload, precision, batch, device, variant, progress)
    except Exception as e:  # a user's step may raise anything: record it, go on with the next batch
        return RooflineAtBatch(batch, "oom" if is_oom(e) else "error", variant.name, reason=error_line(e),
                               elapsed_s=time.perf_counter() - started)
    finally:
        free_memory(device)
    progress.note(f"{workload.name} batch {batch}: {len(profiled.calls)} op calls profiled")
    return RooflineAtBatch(batch, "ok", variant.name, steps=profiled.steps, step_s=step_s,
                           unattributed_s=profiled.unattributed_s, unmatched_calls=profiled.unmatched,
                           ops=build_ops(profiled.calls, roofs, precision, profiled.steps),
                           elapsed_s=time.perf_counter() - started)


def _measure(workload: Workload, precision: str, batch: int, device: torch.device, variant: Variant,
             progress: Progress) -> tuple[Stat, ProfiledSteps]:
    """The plain step time, then the profiled steps; the model and step die with this frame."""
    model = prepare_model(workload, device, variant)
    step = build_step(workload, model, precision, batch, device, variant)
    progress.note(f"{workload.name} batch {batch}: first step (allocations, autotuning)")
    step.run()
    synchronize(device)
    progress.note(f"{workload.name} batch {batch}: timing the step")
    step_s = time_callable(step.run, device, GPU_STEP_PLAN if device.type == "cuda" else CPU_STEP_PLAN)
    progress.note(f"{workload.name} batch {batch}: profiling")
    return step_s, profile_steps(step.run, device)


def iter_roofline_documents(names: list[str], folder: Path, device: torch.device, progress: Progress,
                            kept: Callable[[str], bool] = lambda stem: False) -> Iterator[tuple[str, RooflinePayload]]:
    """(file stem, payload) per workload, yielded as each finishes so it is saved at once; a document `kept` says is
    complete already is not profiled again (a resume owes only its extra precisions')."""
    roofs = build_roofs(load_ceilings(folder), device.type, str(folder / "ceilings.json"))
    progress.total = len(names)
    for name in names:
        workload = workload_name(name)
        stem = f"roofline-{sanitize_machine_id(workload)}"
        if kept(stem):
            progress.advance(f"{name}: kept")
        else:
            payload = collect_roofline(name, roofs, device, progress, folder)
            progress.advance(f"{name}: {payload.status}")
            yield stem, payload
        for precision in extra_precisions(device):
            batches = timed_batches(folder, workload, precision)
            if batches and not kept(f"{stem}-{precision}"):
                extra = collect_roofline(name, roofs, device, progress, folder, precision, batches)
                progress.note(f"{name} {precision}: {extra.status}")
                yield f"{stem}-{precision}", extra


def extra_precisions(device: torch.device) -> list[str]:
    """EXTRA_PRECISIONS this device runs (none on a CPU: TF32 is a GPU tensor-core mode)."""
    return [p for p in EXTRA_PRECISIONS if device.type == "cuda" and precision_unsupported(p, device) is None]


def summarize_roofline(payload: RooflinePayload) -> str:
    """One line for the collection summary: time share by class, the op that loses the most, the batches."""
    if payload.status != "ok":
        return f"{payload.status}: {payload.reason or ''}".strip()
    total = payload.op_time_s or 1.0
    shares = class_times(payload.ops)
    parts = ", ".join(f"{name} {t / total:.0%}" for name, t in sorted(shares.items(), key=lambda kv: -kv[1]))
    ranked = [op for op in payload.ops if op.lost_s is not None]
    worst = max(ranked, key=lambda op: op.lost_s, default=None)
    batches = "; batches " + ", ".join(f"{b.batch} {b.status}" for b in payload.profiled())
    return parts + (f"; most time lost: {worst.name}" if worst else "") + batches
