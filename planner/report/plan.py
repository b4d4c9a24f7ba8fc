"""The planner's parts of a machine's report: recommendations and presets, the instance ranking for the
default job (ResNet-50, 100 ImageNet epochs), and predictions for other GPUs with their error band.
Built from the plan the caller made once (`report_plan`, the same `build_plan` as `gpuplan plan`); a machine
the planner cannot use (no GPU in the catalog, no ceilings, no workloads) has none, and the report says so
in each part's one line."""

from __future__ import annotations

from dataclasses import dataclass, field

import altair as alt

from gpuplan_schema.results import MachineResults
from planner.charts.vega import finish, unvalidated
from planner.plan.answer import WorkloadAnswer, answers_of_target
from planner.plan.plan import MAIN_PRECISION, Capacity, Plan
from planner.plan.recommend import Recommendation
from planner.rank.ranking import RankedInstance
from planner.report.sections import SectionBase


@dataclass(frozen=True)
class RecommendationsSection(SectionBase, kind="recommendations", title="Recommendations and presets"):
    by_workload: dict[str, list[Recommendation]]
    presets: dict[str, str]


@dataclass(frozen=True)
class InstancesSection(SectionBase, kind="instances", title="Instance ranking"):
    job: str
    samples: float
    rows: list[RankedInstance]
    chart: dict | None
    unchecked_notes: list[str] = field(default_factory=list)  # the † GPUs ranked: how their architecture was checked
    checked_notes: list[str] = field(default_factory=list)  # the ★ checked GPUs: their own published rows' errors


@dataclass(frozen=True)
class TargetSummary:
    name: str
    answers: list[WorkloadAnswer]   # each workload's settings there and the throughput expected with them
    capacity: list[Capacity]
    validated: bool = True          # False: no published cross-architecture check covers this GPU
    check_note: str = ""            # how its published rows (or its architecture's) lay from the prediction


@dataclass(frozen=True)
class PredictionsSection(SectionBase, kind="predictions", title="Predictions for other GPUs"):
    source: str
    targets: list[TargetSummary]


def build_recommendation_sections(plan: Plan | None) -> list[RecommendationsSection]:
    source = next((t for t in plan.targets if t.is_source), None) if plan else None
    if source is None or not source.recommendations:
        return []
    by: dict[str, list[Recommendation]] = {}
    for r in source.recommendations:
        by.setdefault(r.workload, []).append(r)
    return [RecommendationsSection(by, source.presets)]


def build_instance_sections(plan: Plan | None) -> list[InstancesSection]:
    if plan is None or plan.job is None or not plan.ranking:
        return []
    unchecked, checked = plan.ranking_notes(plan.ranking)
    return [InstancesSection(plan.job.spec, plan.job.samples, plan.ranking, build_time_cost_chart(plan.ranking),
                             unchecked, checked)]


def build_prediction_sections(machine: MachineResults, plan: Plan | None) -> list[PredictionsSection]:
    if plan is None:
        return []
    notes = {**plan.unchecked_notes, **plan.checked_notes}
    targets = [TargetSummary(t.name, answers_of_target(plan, t),
                             [c for c in t.capacity if c.precision == MAIN_PRECISION], t.validated,
                             notes.get(t.gpu.name, ""))
               for t in plan.targets if not t.is_source]
    return [PredictionsSection(plan.machine, targets)] if targets else []


@unvalidated
def build_time_cost_chart(rows: list[RankedInstance], width: int | str = "container") -> dict | None:
    """Hours against dollars, one point per instance that runs the job; the Pareto front ringed."""
    ok = [r for r in rows if r.status == "ok" and r.hours and r.cost_usd]
    if not ok:
        return None
    data = [{"instance": r.instance, "provider": r.provider,
             "gpus": f"{r.gpu_count} × {r.gpu}" + (f" ({r.stand_in})" if r.stand_in else ""),
             "hours": r.hours, "cost": r.cost_usd, "front": "Pareto front" if r.pareto else "dominated"} for r in ok]
    chart = alt.Chart(alt.NamedData("instances")).mark_point(filled=True, size=60).encode(
        x=alt.X("hours:Q", scale=alt.Scale(type="log"), title="Hours (predicted)"),
        y=alt.Y("cost:Q", scale=alt.Scale(type="log"), title="On-demand cost (USD)"),
        color=alt.Color("provider:N", title="Provider", legend=alt.Legend(orient="bottom")),
        shape=alt.Shape("front:N", title="", legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("instance:N"), alt.Tooltip("gpus:N", title="GPUs"),
                 alt.Tooltip("hours:Q", format=".1f"), alt.Tooltip("cost:Q", format="$,.0f")],
    ).properties(width=width, height=300, title="Time against cost for the job")
    return finish(chart, instances=data)
