"""The decision page and the page of each workload: what a person came for, formatted from the plan's answers.

Per measured workload: the plan's answer on the measured GPU (settings, expected range, bound: `WorkloadAnswer`,
planner/plan/answer.py, the one source the plan text and JSON read too), the Python and YAML to copy, and the
instances for a default job of that workload (fastest, cheapest, the rest of the time/cost Pareto front), each
with the batch, precision and rate the plan predicts on *its* GPU and what its vCPUs' loader feeds. Nothing here
decides: the rankings are the plan's (`Plan.jobs`), the notes its `row_notes`, the changes its `changes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import altair as alt

from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.results import MachineResults
from planner.charts.ticks import log_ticks
from planner.charts.vega import templated
from planner.plan.answer import WorkloadAnswer, build_answers, measured_answers
from planner.plan.default_jobs import DEFAULT_SAMPLES, JobRanking
from planner.plan.plan import Plan
from planner.plan.recommend import Recommendation
from planner.rank.ranking import RankedInstance
from planner.report.glossary import term_anchor
from planner.report.sections import SectionBase
from planner.report.snippets import build_snippet_python, build_snippet_yaml
from planner.report.workloads import WorkloadSection
from planner.units import unit_label

RowNotes = Callable[[RankedInstance], tuple[str, str]]   # a ranking row → (its † note, its checked note)
EXTRA_SETTINGS = ("learning_rate", "gradient_accumulation", "gemm_shapes")   # said in words under the snippet


@dataclass(frozen=True)
class Pick:
    """One instance for the job: its predicted hours and dollars (with their band), and what the plan predicts on its
    GPU: the batch and precision it runs, one GPU's rate, the instance's, and what its vCPUs' loader feeds."""

    role: str               # fastest, cheapest, Pareto
    row: RankedInstance     # the ranking's row, as the plan ranked it
    unchecked_note: str = ""   # how the checked GPUs of its architecture fared (Plan.unchecked_notes)
    checked_note: str = ""     # a checked GPU's own published rows against the prediction (Plan.checked_notes)

    @property
    def instance(self) -> str:
        return self.row.instance

    @property
    def gpus(self) -> str:
        return f"{self.row.gpu_count} × {self.row.gpu}"

    @property
    def unvalidated(self) -> bool:
        return self.row.unchecked

    @property
    def stand_in(self) -> str:
        return self.row.stand_in

    @property
    def hours_band(self) -> tuple[float, float] | None:
        r = self.row
        return (r.hours_low, r.hours_high) if r.hours_low is not None and r.hours_high is not None else None

    @property
    def cost_band(self) -> tuple[float, float] | None:
        r = self.row
        return (r.cost_low, r.cost_high) if r.cost_low is not None and r.cost_high is not None else None


@dataclass(frozen=True)
class WorkloadDecision:
    workload: str
    answer: WorkloadAnswer | None   # the plan's answer on the measured GPU (None: the plan has none)
    unit: str
    python: str | None
    yaml: str | None
    extra: list[Recommendation]     # learning-rate / accumulation advice, in words
    job: str | None
    job_note: str           # default or asked, and what the amount means
    picks: list[Pick]       # fastest, cheapest (one row when they are the same instance), then the rest of the front
    no_instance: str | None  # why no instance is ranked
    chart: dict | None
    elsewhere: list[WorkloadAnswer] = field(default_factory=list)   # the plan's answers on its other targets

    @property
    def anchor(self) -> str:
        return f"decision-{self.workload}"

    @property
    def bound(self) -> str:
        expected = self.answer.expected if self.answer else None
        return expected.judgement.label if expected else "undetermined"

    @property
    def bound_anchor(self) -> str | None:
        """The glossary's entry for the bound (the appendix), where it has one."""
        return term_anchor(self.bound)

    @property
    def bound_short(self) -> str:
        return self.bound.removesuffix("-bound").replace("-", " ")


@dataclass(frozen=True)
class DecisionSection(SectionBase, kind="decision", title="The answer: settings and instances per workload"):
    blocks: list[WorkloadDecision]
    default_samples: str
    machines: list[str]         # the machines the plan read: the one given first, then those named


@dataclass(frozen=True)
class WorkloadPageSection(SectionBase, kind="workload_page", in_toc=False):
    """One workload on one page, as the seed analyses give a question a page: the plan's answer (the decision
    block: settings to copy, expected range, bound, where to run it) and the evidence that decides it (the
    verdict, the batch sweep, the trials at the recommended batch). Every other table is in the appendix."""

    anchor: str                      # the block's (decision-<workload>): the decision table links to it
    block: WorkloadDecision
    detail: WorkloadSection | None   # the measurements (None: no workload section, a document the report skips)

    @property
    def title(self) -> str:
        return self.block.workload


def build_decision_sections(machine: MachineResults, plan: Plan | None,
                            rankings: dict[str, JobRanking]) -> list[DecisionSection]:
    if not machine.workloads:
        return []
    answers = measured_answers(plan)
    extra = [r for r in plan.targets[0].recommendations if r.setting in EXTRA_SETTINGS] if plan else []
    elsewhere = [a for a in build_answers(plan) if not a.measured] if plan else []
    notes = plan.row_notes if plan else no_notes
    blocks = [replace(build_block(w, answers.get(w.workload), [r for r in extra if r.workload == w.workload],
                                  rankings.get(w.workload), notes),
                      elsewhere=[a for a in elsewhere if a.workload == w.workload]) for w in machine.workloads]
    return [DecisionSection(blocks, DEFAULT_SAMPLES, list(plan.machines_used) if plan else [machine.machine])]


def no_notes(_: RankedInstance) -> tuple[str, str]:
    """A ranking without a plan's published check: no row carries a note."""
    return "", ""


def build_block(payload: WorkloadPayload, answer: WorkloadAnswer | None, extra: list[Recommendation],
                ranking: JobRanking | None, notes: RowNotes = no_notes) -> WorkloadDecision:
    picks = build_picks(ranking, notes) if ranking else []
    no_instance = None
    if ranking is None:
        no_instance = "not ranked: the planner cannot use this machine (no GPU in the catalog, or no ceilings)"
    elif not picks:
        no_instance = "no catalog instance runs this job: " + (ranking.rows[0].reason if ranking.rows else "none")
    note = ""
    if ranking:
        note = "the job asked for (--job)" if ranking.asked else "default job"
    return WorkloadDecision(
        payload.workload, answer, unit_label(payload.unit),
        build_snippet_python(answer) if answer else None, build_snippet_yaml(answer) if answer else None, extra,
        ranking.job.spec if ranking else None, note, picks, no_instance,
        build_front_chart(ranking) if ranking and ranking.ok else None)


def build_picks(ranking: JobRanking, notes: RowNotes = no_notes) -> list[Pick]:
    """The ranking's picks (JobRanking.picks), each with the notes its row carries (Plan.row_notes: an unchecked
    GPU's kin, a checked GPU's own published rows)."""
    return [Pick(role, r, *notes(r)) for role, r in ranking.picks]


def _log_range(values: list[float]) -> tuple[float, float]:
    return min(values) / 1.3, max(values) * 1.3


def _log_axis(title: str, money: bool) -> dict:
    """A log axis over (1, 10): each chart sets its own range (`_set_log_range`)."""
    axis = alt.Axis(values=log_ticks(1, 10), format="$~s" if money else "~s", grid=False, labelFlush=True)
    return dict(scale=alt.Scale(type="log", domain=[1, 10], nice=False), title=title, axis=axis)


def _set_log_range(encoding: dict, values: list[float]) -> None:
    low, high = _log_range(values)
    encoding["scale"]["domain"], encoding["axis"]["values"] = [low, high], log_ticks(low, high)


def build_front_chart(ranking: JobRanking) -> dict | None:
    """Every instance that runs the job in grey, the Pareto front in colour and joined: the trade-off in one look."""
    data = [{"instance": r.instance, "hours": r.hours, "cost": r.cost_usd,
             "set": "Pareto front" if r.pareto else "other instances"} for r in ranking.ok]
    if len(data) < 2:
        return None
    spec = _front_spec(instances=data)
    for layer in spec["layer"]:
        _set_log_range(layer["encoding"]["x"], [d["hours"] for d in data])
        _set_log_range(layer["encoding"]["y"], [d["cost"] for d in data])
    return spec


@templated
def _front_spec() -> alt.LayerChart:
    """The chart of every ranking, Altair-built once: only its axes' ranges and its data differ."""
    base = alt.Chart(alt.NamedData("instances")).encode(
        x=alt.X("hours:Q", **_log_axis("Hours (predicted)", False)),
        y=alt.Y("cost:Q", **_log_axis("Cost (USD)", True)),
        tooltip=[alt.Tooltip("instance:N"), alt.Tooltip("hours:Q", format=".1f"),
                 alt.Tooltip("cost:Q", format="$,.0f")])
    colour = alt.Color("set:N", title=None, legend=alt.Legend(orient="top"),
                       scale=alt.Scale(domain=["Pareto front", "other instances"], range=["#1f5fbf", "#b8bec8"]))
    points = base.mark_point(filled=True, size=40).encode(color=colour)
    line = base.mark_line(color="#1f5fbf", strokeWidth=1).transform_filter(
        alt.datum.set == "Pareto front").encode(order="hours:Q")
    return (line + points).properties(width="container", height=130)
