"""The decision page: the report's first section. One block per measured workload answers what a person came
for: what bounds it (in words, with the deciding figures), the settings to copy (Python and YAML), the
throughput to expect with its band, and the instances for a default job of that workload (fastest, cheapest,
the time/cost Pareto front as a small chart), each with predicted hours and dollars.

Settings come through `decision_settings.settings_of` (the adapter to the `decide` branch's answers); the
rankings are computed by the caller once per workload (`planner.plan.default_jobs.rank_workload_jobs`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import altair as alt

from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.results import MachineResults
from planner.charts.ticks import log_ticks
from planner.charts.vega import finish, unvalidated
from planner.plan.default_jobs import DEFAULT_SAMPLES, JobRanking
from planner.plan.plan import Plan
from planner.plan.recommend import Recommendation
from planner.rank.ranking import RankedInstance
from planner.report.decision_settings import Settings, settings_of, snippet_python, snippet_yaml
from planner.report.sections import SectionBase
from planner.units import unit_label

RowNotes = Callable[[RankedInstance], tuple[str, str]]   # a ranking row → (its † note, its checked note)


@dataclass(frozen=True)
class Pick:
    """One instance for the job, with its predicted hours and dollars (and their band, where the ranking has one)."""

    role: str               # fastest, cheapest, Pareto
    instance: str
    provider: str
    gpus: str
    hours: float
    cost_usd: float
    hours_band: tuple[float, float] | None
    cost_band: tuple[float, float] | None
    unvalidated: bool
    unchecked_note: str = ""   # how the checked GPUs of its architecture fared (Plan.unchecked_notes)
    checked_note: str = ""     # a checked GPU's own published rows against the prediction (Plan.checked_notes)
    stand_in: str = ""         # 'runs fp16, no bf16' where the GPU runs the job's stand-in (RankedInstance.stand_in)

    @property
    def hours_text(self) -> str:
        return format_hours(self.hours)

    @property
    def cost_text(self) -> str:
        return format_usd(self.cost_usd)

    @property
    def band_text(self) -> str:
        """'(low–high h, $low–high)' where the ranking has a band; empty otherwise."""
        parts = []
        if self.hours_band:
            parts.append(f"{format_hours(self.hours_band[0])}–{format_hours(self.hours_band[1])}")
        if self.cost_band:
            parts.append(f"{format_usd(self.cost_band[0])}–{format_usd(self.cost_band[1])}")
        return f"({', '.join(parts)})" if parts else ""


def format_hours(hours: float) -> str:
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:,.1f} h" if hours < 100 else f"{hours:,.0f} h"


def format_usd(usd: float) -> str:
    return f"${usd:,.2f}" if usd < 10 else f"${usd:,.0f}"


@dataclass(frozen=True)
class Throughput:
    value: float
    low: float
    high: float
    unit: str
    basis: str              # where it was measured: precision, batch, variant

    @property
    def spread(self) -> float:
        """Half the IQR band, relative to the value."""
        return (self.high - self.low) / 2 / self.value


@dataclass(frozen=True)
class WorkloadDecision:
    workload: str
    bound: str
    settings_line: str      # the settings in one short line, for the table at a glance
    why: str                # the verdict's one sentence with its figures
    python: str | None
    yaml: str | None
    extra: list[str]        # learning-rate / accumulation advice, in words
    throughput: Throughput | None
    job: str | None
    job_note: str           # default or asked, and what the amount means
    picks: list[Pick]       # fastest, cheapest (one row when they are the same instance), then the rest of the front
    no_instance: str | None  # why no instance is ranked
    chart: dict | None

    @property
    def anchor(self) -> str:
        return f"decision-{self.workload}"

    @property
    def bound_short(self) -> str:
        return self.bound.removesuffix("-bound").replace("-", " ")


@dataclass(frozen=True)
class DecisionSection(SectionBase, kind="decision", title="The answer: settings and instances per workload"):
    blocks: list[WorkloadDecision]
    default_samples: str


def build_decision_sections(machine: MachineResults, plan: Plan | None,
                            rankings: dict[str, JobRanking]) -> list[DecisionSection]:
    if not machine.workloads:
        return []
    settings = settings_of(plan)
    notes = plan.row_notes if plan else no_notes
    blocks = [build_block(machine, w, settings.get(w.workload), rankings.get(w.workload), notes)
              for w in machine.workloads]
    return [DecisionSection(blocks, DEFAULT_SAMPLES)]


def no_notes(_: RankedInstance) -> tuple[str, str]:
    """A ranking without a plan's published check: no row carries a note."""
    return "", ""


def build_block(machine: MachineResults, payload: WorkloadPayload, settings: Settings | None,
                ranking: JobRanking | None, notes: RowNotes = no_notes) -> WorkloadDecision:
    expected = settings.answer.expected if settings else None
    bound = expected.judgement.label if expected else "undetermined"
    why = expected.judgement.sentence if expected else "the planner made no recommendation for this workload here"
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
        payload.workload, bound, settings_line(settings), why,
        snippet_python(settings) if settings else None, snippet_yaml(settings) if settings else None,
        [extra_line(r) for r in settings.extra] if settings else [],
        expected_throughput(payload, settings), ranking.job.spec if ranking else None, note, picks, no_instance,
        build_front_chart(ranking) if ranking and ranking.ok else None)


def extra_line(r: Recommendation) -> str:
    """Advice beside the settings, in words, with the measured gain behind it where there is one."""
    gain = f" (measured {1 + r.gain:.2f}× faster)" if r.gain else ""
    return f"{r.setting.replace('_', ' ')}: {r.value}{gain}"


def settings_line(s: Settings | None) -> str:
    if s is None:
        return "no recommendation"
    words = [s.precision, f"batch {s.batch}" if s.batch else "batch unmeasured"]
    words.append("torch.compile" if s.compile else "no compile" if s.compile is False else "compile unmeasured")
    if s.channels_last:
        words.append("channels_last")
    words.append(f"{s.num_workers} loader workers" if s.num_workers is not None else "workers unmeasured")
    if s.expandable_segments:
        words.append("expandable segments")
    return ", ".join(words)


def build_picks(ranking: JobRanking, notes: RowNotes = no_notes) -> list[Pick]:
    """The fastest, cheapest and up to three more Pareto picks, each with the notes its ranking row carries
    (Plan.row_notes: an unchecked GPU's kin, a checked GPU's own published rows)."""
    fastest, cheapest = ranking.fastest, ranking.cheapest
    if fastest is None or cheapest is None:
        return []
    picks = [("fastest and cheapest" if fastest is cheapest else "fastest", fastest)]
    if cheapest is not fastest:
        picks.append(("cheapest", cheapest))
    picks += [("Pareto front", r) for r in ranking.front if r is not fastest and r is not cheapest][:3]
    return [pick(role, r, notes) for role, r in picks]


def pick(role: str, r: RankedInstance, notes: RowNotes = no_notes) -> Pick:
    # The ranking's band and validation flag are the `predict` branch's additions: shown where present.
    hours = _band(r, "hours")
    cost = _band(r, "cost")
    unchecked, checked = notes(r)
    return Pick(role, r.instance, r.provider, f"{r.gpu_count} × {r.gpu}", r.hours or 0.0, r.cost_usd or 0.0,
                hours, cost, r.unchecked, unchecked, checked, r.stand_in)


def _band(r: RankedInstance, name: str) -> tuple[float, float] | None:
    low, high = getattr(r, f"{name}_low", None), getattr(r, f"{name}_high", None)
    return (low, high) if low is not None and high is not None else None


def expected_throughput(payload: WorkloadPayload, s: Settings | None) -> Throughput | None:
    """What the plan expects with its recommended settings (planner/plan/expect.py); none where it has none."""
    expected = s.answer.expected if s else None
    if expected is None:
        return None
    return Throughput(expected.throughput_per_s, expected.low_per_s, expected.high_per_s, unit_label(payload.unit),
                      expected.basis)


def _log_axis(values: list[float], title: str, money: bool) -> dict:
    low, high = min(values) / 1.3, max(values) * 1.3
    axis = alt.Axis(values=log_ticks(low, high), format="$~s" if money else "~s", grid=False, labelFlush=True)
    return dict(scale=alt.Scale(type="log", domain=[low, high], nice=False), title=title, axis=axis)


@unvalidated
def build_front_chart(ranking: JobRanking) -> dict | None:
    """Every instance that runs the job in grey, the Pareto front in colour and joined: the trade-off in one look."""
    data = [{"instance": r.instance, "hours": r.hours, "cost": r.cost_usd,
             "set": "Pareto front" if r.pareto else "other instances"} for r in ranking.ok]
    if len(data) < 2:
        return None
    base = alt.Chart(alt.NamedData("instances")).encode(
        x=alt.X("hours:Q", **_log_axis([d["hours"] for d in data], "Hours (predicted)", False)),
        y=alt.Y("cost:Q", **_log_axis([d["cost"] for d in data], "Cost (USD)", True)),
        tooltip=[alt.Tooltip("instance:N"), alt.Tooltip("hours:Q", format=".1f"),
                 alt.Tooltip("cost:Q", format="$,.0f")])
    colour = alt.Color("set:N", title=None, legend=alt.Legend(orient="top"),
                       scale=alt.Scale(domain=["Pareto front", "other instances"], range=["#1f5fbf", "#b8bec8"]))
    points = base.mark_point(filled=True, size=40).encode(color=colour)
    line = base.mark_line(color="#1f5fbf", strokeWidth=1).transform_filter(
        alt.datum.set == "Pareto front").encode(order="hours:Q")
    chart = (line + points).properties(width="container", height=130)
    return finish(chart, instances=data)
