"""Leave one workload out: each reference workload's measured steps and boundaries, predicted from its trace by a
model learned from the other workloads' measurements only (learn.py with `leave_out`). The residuals are the
accuracy the docs publish (benchmarks/trace_leave_one_out.py, docs/accuracy.md) and what the bands of a trace-only
plan are made from (bands.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpuplan_schema.payloads import TracePayload
from gpuplan_schema.results import MachineResults
from planner.specs import match_gpu
from planner.trace.boundary import others_during
from planner.trace.learn import GpuModel, Measured, learn_gpu, measured_points
from planner.trace.memory import memory_line

MIN_STEP_S = 0.020   # the acceptance's steps: 20 ms and longer (shorter ones are the host's, reported apart)


@dataclass(frozen=True)
class StepResidual:
    machine: str
    workload: str
    precision: str
    batch: int
    variant: str           # "eager" or "compile"
    measured_s: float
    predicted_s: float
    host_bound: bool       # the prediction's host issue time exceeds its GPU time
    unknown_share: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1

    def to_dict(self) -> dict:
        return {**self.__dict__, "error": self.error}


@dataclass(frozen=True)
class BatchResidual:
    machine: str
    workload: str
    precision: str
    measured: int
    predicted: int

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    def to_dict(self) -> dict:
        return {**self.__dict__, "error": self.error}


def model_steps(model: GpuModel, points: list[Measured], variant: str) -> Iterator[StepResidual]:
    """The residual of each measured point predicted by `model` ("eager", or "compile": its compiled prediction)."""
    for m in points:
        step = model.step(m.run)
        predicted = step.step_s if variant == "eager" else model.compile.step_s(step, model.host.sharpness)
        yield StepResidual(model.machine, m.workload.workload, m.point.precision, m.point.batch, variant,
                           m.point.step_s.median, predicted, step.host_s > step.gpu_s,  # type: ignore[union-attr]
                           step.unknown_share)


def held_out(machine: MachineResults, traces: dict[str, TracePayload], workload: str
             ) -> tuple[list[StepResidual], list[BatchResidual]]:
    """The residuals of one workload, predicted by a model that never saw its measurements."""
    model = learn_gpu(machine, traces, leave_out=workload)
    mine = {workload: traces[workload]}
    steps = [*model_steps(model, measured_points(machine, mine), "eager"),
             *model_steps(model, measured_points(machine, mine, variants=("compile",)), "compile")]
    spec = match_gpu(machine.gpu_name or "")
    batches = []
    payload = next(w for w in machine.workloads if w.workload == workload)
    for b in payload.default_boundaries:
        line = memory_line(traces[workload], b.precision)
        if spec and line and b.status == "ok" and b.max_batch and not b.capped:
            # the card less what other processes held while it was searched (boundary.py)
            predicted = model.memory.max_batch(line, spec.memory_bytes, others_during(payload, b))
            batches.append(BatchResidual(machine.machine, workload, b.precision, b.max_batch, predicted))
    return steps, batches


def leave_one_out(machine: MachineResults, traces: dict[str, TracePayload]
                  ) -> tuple[list[StepResidual], list[BatchResidual]]:
    steps: list[StepResidual] = []
    batches: list[BatchResidual] = []
    for w in machine.workloads:
        if w.workload in traces:
            s, b = held_out(machine, traces, w.workload)
            steps += s
            batches += b
    return steps, batches
