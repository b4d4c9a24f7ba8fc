"""The report as a typed structure: a list of sections, built from a machine's results, in one fixed order.

Rendering comes second (planner/render/report.py, one template partial per section `kind`). Values stay
in SI units here; the templates' filters (planner/render/filters.py) turn them into human units.

A report is read by people, as the seed analyses are: the decision page first (per workload, the settings and
where to run its default job, then the plan's three changes worth most), then one page per workload (its answer
and the evidence that decides it), then the measured ceilings; every table of measurements follows in the
appendix, which the HTML keeps collapsed and the PDF prints only with `--full`.

The appendix's order is REPORT_ORDER below, and only there (its "ceilings" slot is the last page before it). A
slot's builder returns the sections it has for the machine;
when it returns none, the slot still shows its heading and one line saying what is missing, so a
collector that did not run never makes its part of the report vanish. To add a part, write its
builder (`MachineResults -> list of sections`; the planner's parts take the machine's plan, built once by
the caller and passed in) in a module of its own and put it in its slot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import PAYLOADS
from gpuplan_schema.results import MachineResults, load_machine
from planner.plan.default_jobs import JobRanking
from planner.plan.plan import Plan, report_plan
from planner.rank.jobs import Job
from planner.report.ceilings import CeilingsSection, RooflineSection, build_ceilings_section, build_roofline_section
from planner.report.dataloader import DataloaderSection, build_dataloader_sections
from planner.report.decision import DecisionSection, WorkloadPageSection, build_decision_sections
from planner.report.glossary import GlossarySection, build_glossary_section
from planner.report.method import (
    EnvironmentSection,
    MethodSection,
    WorkloadMethodSection,
    build_environment_section,
    build_method_section,
    build_workload_method_section,
)
from planner.report.multigpu import MultiGpuSection, build_multigpu_section
from planner.report.plan import (
    InstancesSection,
    PredictionsSection,
    RecommendationsSection,
    build_instance_sections,
    build_prediction_sections,
    build_recommendation_sections,
)
from planner.report.roofline import OpRooflineSection, build_op_roofline_sections
from planner.report.sections import NotCollectedSection, PlaceholderSection
from planner.report.summary import SummarySection, build_summary
from planner.report.trace import TraceSection, build_trace_sections
from planner.report.workloads import WorkloadSection, build_workload_sections
from planner.specs import match_gpu
from planner.trace.machine import is_prediction, planned_machine

__all__ = ["REPORT_ORDER", "CeilingsSection", "NotCollectedSection", "PlaceholderSection", "Report", "Section",
           "Slot", "SummarySection", "WorkloadPageSection", "build_report"]

Section = (DecisionSection | WorkloadPageSection | SummarySection | NotCollectedSection | PlaceholderSection
           | CeilingsSection | RooflineSection | WorkloadSection | OpRooflineSection | DataloaderSection
           | MultiGpuSection | MethodSection
           | RecommendationsSection | InstancesSection | PredictionsSection
           | WorkloadMethodSection | EnvironmentSection | GlossarySection | TraceSection)


@dataclass(frozen=True)
class ReportInput:
    """What a report is built from: a machine's results and the plan made from them (None: not plannable)."""

    machine: MachineResults
    plan: Plan | None = None


SlotBuilder = Callable[[ReportInput], Sequence[Section]]
PAGE_ANCHORS = ("ceilings",)   # the slots printed after the workloads' pages (the rest is the appendix)


@dataclass(frozen=True)
class Slot:
    key: str             # the placeholder's anchor
    title: str           # the placeholder's heading
    build: SlotBuilder   # the slot's sections for this machine; none when there is nothing to show
    missing: str         # the one line shown instead, then

    def sections(self, given: ReportInput) -> list[Section]:
        return list(self.build(given)) or [PlaceholderSection(self.key, self.title, self.missing)]


def build_ceilings_sections(machine: MachineResults) -> list[Section]:
    if machine.ceilings is None:
        return []
    spec = match_gpu(machine.gpu_name) if machine.gpu_name else None
    return [build_ceilings_section(machine.ceilings, spec, machine.environment)]


def build_roofline_sections(machine: MachineResults) -> list[Section]:
    return [build_roofline_section(machine.ceilings)] if machine.ceilings else []


def build_method_sections(machine: MachineResults) -> list[Section]:
    """How each figure was measured (ceilings, workloads), then on what (the environment)."""
    spec = match_gpu(machine.gpu_name) if machine.gpu_name else None
    sections: list[Section] = []
    if machine.ceilings:
        sections.append(build_method_section(machine.ceilings, spec))
    if machine.workloads:
        sections.append(build_workload_method_section(machine.workloads))
    if machine.environment:
        sections.append(build_environment_section(machine.environment))
    return sections


REPORT_ORDER: tuple[Slot, ...] = (
    Slot("ceilings", "Measured ceilings", lambda r: build_ceilings_sections(r.machine),
         "Not collected: the ceilings collector has not run on this machine (gpuplan collect --only ceilings)."),
    Slot("roofline", "Roofline", lambda r: build_roofline_sections(r.machine),
         "No roofline: it is drawn from the measured ceilings, which were not collected."),
    Slot("workloads", "Workloads", lambda r: build_workload_sections(r.machine, r.plan),
         "Not collected: no workload was measured on this machine (gpuplan collect --only workloads)."),
    Slot("op-roofline", "Per-operation roofline", lambda r: build_op_roofline_sections(r.machine),
         "Not collected: no per-operation profile (a roofline document) is in this machine's results."),
    Slot("input-pipeline", "Input pipeline", lambda r: build_dataloader_sections(r.machine, r.plan),
         "Not collected: no data-loader measurements (a dataloader document) are in this machine's results."),
    Slot("recommendations", "Recommendations and presets", lambda r: build_recommendation_sections(r.plan),
         "Not computed: the planner has made no recommendations for this machine."),
    Slot("instances", "Instance ranking", lambda r: build_instance_sections(r.plan),
         "Not computed: the planner has ranked no cloud instances for this machine's workloads."),
    Slot("predictions", "Predictions for other GPUs", lambda r: build_prediction_sections(r.machine, r.plan),
         "Not computed: the planner has made no predictions for other GPUs from this machine's results."),
    Slot("multi-gpu", "Multi-GPU", lambda r: [s] if (s := build_multigpu_section(r.machine)) else [],
         "Not collected: no collective or data-parallel measurements (collectives, ddp documents) are in this "
         "machine's results."),
    Slot("method", "Method and environment", lambda r: build_method_sections(r.machine),
         "Not collected: neither the environment, the ceilings nor any workload was collected."),
    Slot("glossary", "Glossary", lambda r: [build_glossary_section()], ""),
)


@dataclass(frozen=True)
class Report:
    """`head` (the decision page), `pages` (a page per workload, then the ceilings) and `appendix` (every table of
    measurements: the HTML keeps it collapsed, the PDF prints it only when asked, `gpuplan report --full`)."""

    machine: str        # as the documents spell it: display only, always escaped
    machine_id: str     # sanitised: the only form that may become part of a path
    device: str
    gpu_name: str | None
    collected: str      # UTC date of the newest document
    head: list[Section]
    pages: list[Section]
    appendix: list[Section]

    @property
    def sections(self) -> list[Section]:
        return [*self.head, *self.pages, *self.appendix]


def build_report_for(folder: Path, job: Job | None = None, others: Sequence[MachineResults] = ()) -> Report:
    """The report of the machine folder `folder`, with its plan; `others` (already loaded) join it only when given:
    their accuracy residuals set the bands, their multi-GPU runs the scaling. `job` is ranked (default: DEFAULT_JOB).
    A trace folder is reported as the machine predicted from its traces (planner/trace/machine.py)."""
    machine = planned_machine(load_machine(folder))
    measured = [machine, *(m for m in others if m.machine != machine.machine)]
    return build_report(machine, report_plan(machine, job, measured), measured)


def workload_rankings(plan: Plan | None) -> dict[str, JobRanking]:
    """Each workload's default job (or the one asked for) as the plan ranked it; none without a plan."""
    return plan.jobs if plan else {}


def build_report(machine: MachineResults, plan: Plan | None = None, measured: Sequence[MachineResults] = ()) -> Report:
    """The report of `machine`; its planner parts show `plan` (None: each says it was not computed). The decision
    page, first, ranks instances for each workload's job; `measured` supplies the multi-GPU measurements."""
    collected = max(doc.created for doc in machine.documents.values())[:10]
    given = ReportInput(machine, plan)
    body = [section for slot in REPORT_ORDER for section in slot.sections(given)]
    decision = build_decision_sections(machine, plan, workload_rankings(plan))
    # the answer first; on a machine predicted from a trace, what the prediction rests on follows it (the title
    # already says "predicted from a trace: no GPU measured")
    head: list[Section] = [*decision, build_summary(machine, collected, body, plan),
                           *build_trace_sections(machine, plan)]
    present = {doc.kind for doc in machine.documents.values()}
    missing = [kind for kind in PAYLOADS if kind not in present]
    if missing:
        head.append(NotCollectedSection(missing))
    details = {s.name: s for s in body if isinstance(s, WorkloadSection)}
    pages: list[Section] = [WorkloadPageSection(b.anchor, b, details.get(b.workload))
                            for d in decision for b in d.blocks]
    pages += [s for s in body if s.anchor in PAGE_ANCHORS]
    appendix = [s for s in body if s.anchor not in PAGE_ANCHORS]
    device = f"Predicted from a trace: no GPU measured ({machine.gpu_name} model)" if is_prediction(machine) \
        else machine.device_label
    return Report(machine.machine, sanitize_machine_id(machine.machine), device, machine.gpu_name, collected,
                  head, pages, appendix)
