"""The report's first word on a machine predicted from a trace: "predicted from a trace: no GPU measured", the GPU
whose measurements the prediction was learned from, and per workload the ops that dominate the predicted step and
the unknown share (planner/trace/summary.py computes them; this only arranges them)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.results import MachineResults
from planner.plan.plan import Plan
from planner.report.sections import SectionBase
from planner.trace.machine import is_prediction
from planner.trace.model_file import load_learned
from planner.trace.summary import TraceSummary, trace_summaries


@dataclass(frozen=True)
class TraceSection(SectionBase, kind="trace", title="Predicted from a trace: no GPU measured", in_toc=False):
    reference: str                 # the GPU the model was learned on
    learned_from: list[str]        # its reference workloads
    summaries: list[TraceSummary]
    median_error: float | None     # the held-out steps' median |error| (benchmarks/trace_leave_one_out.py)


def build_trace_sections(machine: MachineResults, plan: Plan | None = None) -> list[TraceSection]:
    """One section for a machine predicted from a trace (planner/trace/machine.py), none for a measured one; the
    summaries are the plan's (computed once there), or computed here for a report without a plan."""
    if not is_prediction(machine):
        return []
    learned = load_learned()
    errors = sorted(abs(e) for e in learned.residuals.eager)
    summaries = plan.trace if plan is not None and plan.traced else trace_summaries(machine, learned.model)
    return [TraceSection(learned.model.gpu, list(learned.model.efficiency.workloads), summaries,
                         errors[len(errors) // 2] if errors else None)]
