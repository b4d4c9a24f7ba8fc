"""The decision page's foot: the machine in one line and the plan's three changes worth most (Plan.changes,
planner/plan/changes.py), and the verdict of each workload (the site's index reads them).

It is built last, from the other sections: the verdicts come from the workload sections (the plan's, at its
recommended settings); the changes are the plan's, never computed here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.results import MachineResults
from gpuplan_schema.stats import Stat
from planner.model.workload_verdict import plain_point
from planner.plan.changes import CHANGES_SHOWN, Change
from planner.plan.plan import Plan
from planner.report.glossary import term_anchor
from planner.report.sections import SectionBase
from planner.report.workloads import WorkloadSection
from planner.trace.machine import is_prediction


@dataclass(frozen=True)
class VerdictRow:
    """One workload's verdict at its judged point (main batch, best precision), for the summary table."""

    workload: str
    anchor: str
    bound: str
    reason: str
    precision: str | None
    batch: int | None
    unit: str
    throughput: float | None
    tokens_per_s: float | None
    step: Stat | None
    tiny: bool

    @property
    def bound_anchor(self) -> str | None:
        return term_anchor(self.bound)


@dataclass(frozen=True)
class SummarySection(SectionBase, kind="summary", title="Summary", in_toc=False):
    device: str
    has_gpu: bool
    cpu: str | None
    cores: int | None
    ram_bytes: int | None
    torch: str | None
    cuda: str | None
    driver: str | None
    collected: str
    changes: list[Change]
    changes_note: str | None    # why fewer than three changes are shown
    verdicts: list[VerdictRow]
    known: str = "measured"     # 'predicted' on a machine predicted from a trace: the changes' gains are predictions


def build_verdict_row(section: WorkloadSection) -> VerdictRow:
    """The plan's verdict and expected figure at its recommended settings (a plan-less machine: the measured
    main-batch point)."""
    v, e, payload = section.verdict, section.expected, section.payload
    point = plain_point(payload, v.batch, v.precision) if v.batch and v.precision else None
    throughput = e.throughput_per_s if e else point.throughput_per_s if point else None
    tokens = throughput * payload.tokens_per_sample if throughput and payload.tokens_per_sample else None
    return VerdictRow(section.name, section.anchor, v.bound, v.reason, v.precision, v.batch, section.unit,
                      throughput, tokens, point.step_s if point else None, section.tiny)


def changes_note(workloads: list[WorkloadSection], shown: int) -> str | None:
    if shown >= CHANGES_SHOWN:
        return None
    if not workloads:
        return "No workload was measured, so no change can be proposed from measurements."
    if all(w.tiny for w in workloads):
        return ("The workloads ran at reduced sizes on a CPU (a test of the collection path), which says nothing "
                "about what to change on a GPU.")
    if all(w.payload.profile == "quick" for w in workloads):
        return ("The quick profile measures one point per workload; changes come from the precision and variant "
                "trials and the batch sweeps of the standard profile (gpuplan collect --profile standard).")
    if not any(w.expected for w in workloads):
        return "The planner made no recommendation here, so no change is proposed."
    return f"{'No other' if shown else 'No'} recommended setting gains 5% or more over PyTorch's default."


def build_summary(machine: MachineResults, collected: str, sections: list, plan: Plan | None = None) -> SummarySection:
    env = machine.environment
    cpu = env.cpu if env else None
    workloads = [s for s in sections if isinstance(s, WorkloadSection)]
    changes = plan.changes if plan and not all(w.tiny for w in workloads) else []
    return SummarySection(
        device=machine.device_label, has_gpu=bool(machine.gpu_name), cpu=cpu.label if cpu else None,
        cores=cpu.logical_cores if cpu else None, ram_bytes=cpu.ram_bytes if cpu else None,
        torch=env.torch if env else None, cuda=env.cuda_runtime if env else None,
        driver=env.driver if env else None, collected=collected, changes=changes,
        changes_note=changes_note(workloads, len(changes)), verdicts=[build_verdict_row(w) for w in workloads],
        known="predicted" if is_prediction(machine) else "measured",
    )
