"""A measured machine's steps that have no per-op profile, split by the CPU trace of the same model instead of their
FLOP and byte counts (docs/prediction-model.md § 1b).

A user's three-minute collection often ends before its per-op profile, so the plan split those steps from counts:
the FLOPs at the matmul roof, the bytes at the copy bandwidth and everything else "below roof", scaled to another
GPU by SM count × clock. Where a model spends its time in normalisations and elementwise ops (ConvNeXt's LayerNorm
and GELU, a DDPM UNet's GroupNorm and SiLU) much of that rest is bandwidth-bound: the H200 (the H100's SMs and clock,
1.43× its bandwidth) ran them 10–28 % faster than the counts split said. Where the folder also holds the model's
trace (`gpuplan trace FILE.py:build --out RESULTS --machine MACHINE`), each traced (workload, precision) the folder
did not profile gets a profile predicted from its ops (predict.py, with this machine's measured roofs), calibrated
to the measured step: each op's roof (its FLOPs at the matmul rate, its bytes at the bandwidth) is physics and
stays; the GPU time the trace did not predict is below-roof time, shared by the ops as the trace's below-roof times
are. A measured profile is never replaced.

Checked (benchmarks/heldout_trace_split.py): the 15 reference workloads, each with its profiles withheld and its
trace predicted by a model learned without it, H100 <-> H200: median |error| 4.7 % from counts, 2.2 % so split
(2.5 % from their measured profiles); the five held-out models: 119 → 128 of 138 measured truths inside their band.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from gpuplan_schema.payloads import RooflinePayload, TracePayload, WorkloadPayload
from gpuplan_schema.payloads.roofline import RooflineAtBatch
from gpuplan_schema.payloads.workloads import PLAIN_VARIANTS
from gpuplan_schema.results import MachineResults
from gpuplan_schema.stats import Stat
from planner.specs import match_gpu
from planner.trace.learn import GpuModel
from planner.trace.machine import is_prediction, predicted_rooflines, traces_of
from planner.trace.model_file import Learned, load_learned
from planner.trace.training import roofs_of


@dataclass(frozen=True)
class TraceRoofline(RooflinePayload):
    """A profile predicted from the trace and calibrated to the measured step: never a document, never shown as a
    measured profile; the split it gives says where it came from (planner/model/split.py)."""

    basis_words: ClassVar[str] = "the trace's ops, calibrated to the measured step"


def measured_busy(workload: WorkloadPayload, precision: str) -> dict[int, tuple[float, float]]:
    """batch → (GPU busy seconds, step seconds) of the workload's plain measured points in `precision`."""
    out: dict[int, tuple[float, float]] = {}
    for p in workload.points:
        if p.precision == precision and p.status == "ok" and p.step_s and p.gpu_busy_s and p.seq_len is None \
                and p.variant in PLAIN_VARIANTS:
            out.setdefault(p.batch, (p.gpu_busy_s, p.step_s.median))
    return out


def _stat(value: float) -> Stat:
    return Stat(value, value, value, value, value, 1)


def calibrated(at: RooflineAtBatch, busy_s: float, step_s: float) -> RooflineAtBatch:
    """A predicted profile made to add up to the measured GPU time: the ops' roofs stay, the time the trace did not
    predict (or predicted too much) is below-roof time, shared as the trace's is; where the roofs alone exceed the
    measured time (a roof the GPU beat: a fused kernel), every op is scaled alike."""
    roofs = [min(o.time_s.median, max(o.math_s or 0.0, o.memory_s or 0.0)) for o in at.ops]
    total, roof = sum(o.time_s.median for o in at.ops), sum(roofs)
    below = total - roof
    ops = []
    for o, r in zip(at.ops, roofs, strict=True):
        t = r + (o.time_s.median - r) * (busy_s - roof) / below if busy_s > roof and below > 0 \
            else o.time_s.median * busy_s / total
        ops.append(replace(o, time_s=_stat(t), efficiency=(o.expected_s or 0.0) / t if t else None))
    return replace(at, ops=ops, step_s=_stat(step_s))


def calibrate(roofline: RooflinePayload, workload: WorkloadPayload) -> TraceRoofline | None:
    """The predicted roofline, each traced batch calibrated to the measured point of that batch; batches with no
    measured point dropped (None where none is left)."""
    busy = measured_busy(workload, roofline.precision)
    main = RooflineAtBatch(roofline.batch, "ok", steps=1, step_s=roofline.step_s, ops=roofline.ops)
    kept = [calibrated(at, *busy[at.batch]) for at in (main, *roofline.batches) if at.batch in busy and at.ops]
    if not kept:
        return None
    first = kept[0]
    fields = {**roofline.__dict__, "batch": first.batch, "step_s": first.step_s, "ops": first.ops,
              "batches": kept[1:]}
    return TraceRoofline(**fields)


def model_for(machine: MachineResults, learned: Learned) -> GpuModel:
    """The trace model learned on this machine's GPU type where there is one, else the reference GPU's; with this
    machine's own measured roofs (the ops' roofs are its, as its own profile's would be)."""
    spec = match_gpu(machine.gpu_name or "")
    model = next((m for m in learned.models.values() if spec and m.gpu == spec.name), learned.model)
    return replace(model, roofs=roofs_of(machine.ceilings)) if machine.ceilings else model


def trace_rooflines(machine: MachineResults, learned: Learned | None = None) -> list[RooflinePayload]:
    """The calibrated trace profiles of every (workload, precision) of a measured machine that its folder traced and
    did not profile; [] for a folder without traces. A trace of another model of the same name (its parameter count
    differs from the workload document's) is not used."""
    traces: dict[str, TracePayload] = {t.workload: t for t in traces_of(machine)}
    if not traces or not machine.workloads or is_prediction(machine):  # a trace folder's plan: predicted whole
        return []
    learned = learned or load_learned()
    model = model_for(machine, learned)
    profiled = {(d.payload.workload, d.payload.precision) for d in machine.documents.values() if d.kind == "roofline"}
    out: list[RooflinePayload] = []
    for workload in machine.workloads:
        trace = traces.get(workload.workload)
        if trace is None or trace.parameters != workload.parameters or not trace.ok_runs():
            continue
        for predicted in predicted_rooflines(trace, model, f"{machine.machine} (measured)"):
            if (workload.workload, predicted.precision) not in profiled:
                kept = calibrate(predicted, workload)
                out += [kept] if kept else []
    return out
