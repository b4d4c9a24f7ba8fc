"""A trace folder as the machine the plan reads: every traced step predicted on the reference GPU (learned.json's
model of the H100 it was learned on), written as that GPU's documents would be, so that `gpuplan plan`, the report
and the site answer for it through the same Plan as for a measured machine (DESIGN.md: the plan decides).

- ceilings: the reference GPU's measured ceilings (results/h100-80gb, carried in learned.json): the roofs the
  per-op efficiency was learned against, and what the cross-architecture model scales to every other GPU;
- workload-<name>: each traced run a point (the bf16 sweep's batches as the batch sweep, the other precisions as
  the main batch's trials), its step predicted (predict.py), its peak memory the trace's plus the allocator's
  offset; a torch.compile point at the main batch from the learned compile effect; each precision's boundary from
  the memory line (memory.py);
- roofline-<name>: the predicted per-op times of the bf16 (and TF32) runs, so that the plan splits each step by
  its ops' classes as it splits a profiled one.

Every document says it was predicted (collector `trace-prediction`); the trace documents themselves stay in the
folder beside them, and `is_traced` tells the report and the site which machines are predictions only.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import (
    TRACE_PROFILE,
    MemoryUse,
    OomBoundary,
    OpRoofline,
    RooflineAtBatch,
    RooflinePayload,
    RooflineRoofs,
    TracePayload,
    TraceRun,
    TrafficEstimate,
    WorkloadPayload,
    WorkloadPoint,
)
from gpuplan_schema.results import MachineResults
from gpuplan_schema.schema import Document, build_document
from gpuplan_schema.stats import Stat
from planner.specs import match_gpu
from planner.trace.learn import GpuModel
from planner.trace.memory import memory_line
from planner.trace.model_file import Learned, load_learned
from planner.trace.predict import StepTime

PREDICTED = "trace-prediction"
MAIN = "bf16"
PROFILED = ("bf16", "tf32")


def traces_of(machine: MachineResults) -> list[TracePayload]:
    return [d.payload for d in machine.documents.values() if d.kind == "trace"]


def is_traced(machine: MachineResults) -> bool:
    """A machine folder of traces only: nothing measured on a GPU (its plan is predicted from the traces)."""
    return bool(traces_of(machine)) and not machine.workloads


def is_prediction(machine: MachineResults) -> bool:
    """A machine this module made from a trace folder (its documents predicted, not measured)."""
    return any(d.collector.name == PREDICTED for d in machine.documents.values())


def _point(trace: TracePayload, run: TraceRun, step: StepTime, model: GpuModel, sweep: str,
           variant: str = "default", step_s: float | None = None) -> WorkloadPoint:
    seconds = step_s or step.step_s
    moved = sum(op.bytes for op in run.ops)
    peak = run.memory.peak_bytes + model.memory.offset_bytes if run.memory else None
    return WorkloadPoint(
        sweep, run.precision, run.batch, variant, "ok", step_s=Stat.single(seconds),
        throughput_per_s=run.batch / seconds,
        tokens_per_s=run.batch * trace.tokens_per_sample / seconds if trace.tokens_per_sample else None,
        memory=MemoryUse(int(peak)) if peak else None, flops_per_step=run.flops,
        traffic=TrafficEstimate(0, 0, 0, int(moved)), host_issue_s=Stat.single(step.host_s), gpu_busy_s=step.gpu_s,
        step_syncs=0)


def _boundaries(trace: TracePayload, model: GpuModel, card_bytes: int) -> list[OomBoundary]:
    out = []
    for precision in dict.fromkeys(r.precision for r in trace.ok_runs()):
        line = memory_line(trace, precision)
        if line:
            most = model.memory.max_batch(line, card_bytes)
            out.append(OomBoundary(precision, "ok" if most else "oom", most or None, most + 1, fresh_process=True))
    return out


def predicted_workload(trace: TracePayload, model: GpuModel, card_bytes: int) -> WorkloadPayload:
    runs = trace.ok_runs()
    steps = {(r.precision, r.batch): model.step(r) for r in runs}
    points = [_point(trace, r, steps[(r.precision, r.batch)], model, "batch" if r.precision == MAIN else "variant")
              for r in runs if r.precision == MAIN or r.batch == trace.main_batch]
    main = trace.run(MAIN, trace.main_batch)
    if main is not None and main.status == "ok":
        # The main precision's trial at the main batch, as a collection holds it beside its sweep point: the
        # precision choice compares every precision with it (planner/plan/choice.py `baseline`); without it the
        # choice fell back to the fastest trial however small its lead.
        points.append(_point(trace, main, steps[(MAIN, trace.main_batch)], model, "variant"))
    if main is not None and main.status == "ok" and trace.training:
        step = steps[(MAIN, trace.main_batch)]
        points.append(_point(trace, main, step, model, "variant", "compile",
                             model.compile.step_s(step, model.host.sharpness)))
    return WorkloadPayload(trace.workload, trace.source, trace.unit, trace.training, "cuda", TRACE_PROFILE,
                           trace.parameters, points, _boundaries(trace, model, card_bytes), 0.0,
                           trace.tokens_per_sample)


def _op(step: StepTime, index: int, model: GpuModel) -> OpRoofline:
    op = step.ops[index]
    bytes_ = op.memory_s * model.roofs.bytes_per_s
    return OpRoofline(f"aten::{op.kind}", float(op.calls), Stat.single(op.seconds), bytes_ / 2, bytes_ / 2, op.op_class,
                      math_s=op.math_s, memory_s=op.memory_s, expected_s=max(op.math_s, op.memory_s),
                      efficiency=max(op.math_s, op.memory_s) / op.seconds if op.seconds else None)


def _profile(run: TraceRun, model: GpuModel) -> RooflineAtBatch:
    step = model.step(run)
    return RooflineAtBatch(run.batch, "ok", steps=1, step_s=Stat.single(step.step_s),
                           ops=[_op(step, i, model) for i in range(len(step.ops)) if step.ops[i].seconds > 0])


def predicted_rooflines(trace: TracePayload, model: GpuModel, ceilings_source: str) -> list[RooflinePayload]:
    out = []
    roofs = RooflineRoofs(ceilings_source, dict(model.roofs.flops_per_s), model.roofs.bytes_per_s)
    for precision in PROFILED:
        profiles = [_profile(r, model) for r in trace.ok_runs(precision)]
        main = next((p for p in profiles if p.batch == trace.main_batch), profiles[-1] if profiles else None)
        if main is None:
            continue
        out.append(RooflinePayload(trace.workload, trace.source, "cuda", precision, main.batch, trace.training, "ok",
                                   roofs, 0.0, steps=1, step_s=main.step_s, ops=main.ops,
                                   batches=[p for p in profiles if p.batch != main.batch]))
    return out


@dataclass(frozen=True)
class TracedMachine:
    """The machine the plan reads, and the model it was predicted with."""

    machine: MachineResults
    model: GpuModel


def _doc(kind: str, machine: str, payload: object) -> Document:
    return build_document(kind, PREDICTED, "1", machine, payload)


def trace_machine(machine: MachineResults, learned: Learned | None = None) -> TracedMachine:
    """The trace folder `machine` as a machine of the reference GPU with every figure predicted."""
    learned = learned or load_learned()
    model = learned.model
    spec = match_gpu(model.gpu)
    assert spec is not None, f"the reference GPU {model.gpu} is not in the catalog"
    docs = dict(machine.documents)
    docs["ceilings"] = _doc("ceilings", machine.machine, learned.ceilings[learned.reference])
    for trace in traces_of(machine):
        if not trace.ok_runs():
            continue
        docs[f"workload-{trace.workload}"] = _doc("workload", machine.machine,
                                                  predicted_workload(trace, model, spec.memory_bytes))
        for r in predicted_rooflines(trace, model, f"{learned.reference} (measured)"):
            suffix = "" if r.precision == MAIN else f"-{r.precision}"
            docs[f"roofline-{trace.workload}{suffix}"] = _doc("roofline", machine.machine, r)
    return TracedMachine(MachineResults(machine.machine, machine.folder, docs), model)


def planned_machine(machine: MachineResults) -> MachineResults:
    """`machine` itself, or for a trace folder the machine predicted from its traces (what every planner stage
    reads)."""
    return trace_machine(machine).machine if is_traced(machine) else machine
