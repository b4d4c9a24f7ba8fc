"""What a trace-only plan rests on, per workload, for the report and the site: the ops that take most of the predicted
step on the reference GPU, the share of it in op kinds no profile showed (timed with their family's figures or the
pooled ones: the unknown share), the bytes moved by ops without a FLOP formula, the memory at the peak, and every
traced run that failed. Computed once here; the report's section only formats it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuplan_schema.payloads import TracePayload
from gpuplan_schema.results import MachineResults
from planner.trace.learn import GpuModel
from planner.trace.machine import MAIN, traces_of

TOP_OPS = 6


@dataclass(frozen=True)
class OpShare:
    kind: str
    calls: int
    seconds: float
    share: float          # of the predicted GPU time
    learned: bool         # False: no profile showed this kind (its family's or the pooled figures)
    op_class: str


@dataclass(frozen=True)
class TraceSummary:
    workload: str
    precision: str
    batch: int
    step_s: float
    gpu_s: float
    host_s: float
    unknown_share: float
    unknown: list[str]                 # the kinds no profile showed
    no_formula_bytes_share: float      # of the bytes moved: ops without a FLOP formula (timed by their bytes)
    ops: list[OpShare]
    peak_bytes: int | None
    memory_parts: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)   # "fp32 batch 64: <reason>"

    def to_dict(self) -> dict:
        """The plan JSON's `trace` entry (docs/plan-json.md)."""
        return {**{k: v for k, v in self.__dict__.items() if k != "ops"}, "ops": [o.__dict__ for o in self.ops]}

    @property
    def words(self) -> str:
        """One line: the ops that dominate and the unknown share, for the plan text."""
        ops = ", ".join(f"{o.kind} {o.share:.0%}" for o in self.ops[:3])
        unknown = f" ({', '.join(self.unknown)})" if self.unknown else ""
        return f"{self.workload}: {ops}; unknown operations {self.unknown_share:.0%} of the GPU time{unknown}"


def summarise(trace: TracePayload, model: GpuModel) -> TraceSummary | None:
    runs = trace.ok_runs()
    run = trace.run(MAIN, trace.main_batch) or (runs[0] if runs else None)
    failed = [f"{r.precision} batch {r.batch}: {r.reason}" for r in trace.runs if r.status != "ok"]
    if run is None or run.status != "ok":
        return TraceSummary(trace.workload, MAIN, trace.main_batch, 0.0, 0.0, 0.0, 0.0, [], 0.0, [], None,
                            failed=failed) if failed else None
    step = model.step(run)
    ops = [OpShare(o.kind, o.calls, o.seconds, o.seconds / step.gpu_s if step.gpu_s else 0.0, o.learned, o.op_class)
           for o in step.ops[:TOP_OPS]]
    mem = run.memory
    parts = {"parameters": mem.parameters_bytes, "gradients": mem.gradients_bytes, "optimizer": mem.optimizer_bytes,
             "activations": mem.activations_bytes, "inputs": mem.inputs_bytes} if mem else {}
    return TraceSummary(trace.workload, run.precision, run.batch, step.step_s, step.gpu_s, step.host_s,
                        step.unknown_share, sorted({o.kind for o in step.ops if not o.learned}),
                        run.no_formula_bytes_share, ops, mem.peak_bytes if mem else None, parts, failed)


def trace_summaries(machine: MachineResults, model: GpuModel) -> list[TraceSummary]:
    return [s for t in traces_of(machine) if (s := summarise(t, model))]
