"""The report's first section: the machine in one line, the three changes with the largest expected
gain, and the verdict of each workload.

It is built last, from the other sections: the verdicts come from the workload sections, and the
changes from the workload measurements plus any section that proposes changes of its own by
exposing a `changes: list[Change]` attribute (the planner's recommendations, for instance).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.results import MachineResults
from gpuplan_schema.stats import Stat
from planner.model.workload_verdict import plain_point
from planner.report.changes import Change, build_workload_changes, top_changes
from planner.report.glossary import term_anchor
from planner.report.sections import SectionBase
from planner.report.workloads import WorkloadSection

CHANGES_SHOWN = 3


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
class SummarySection(SectionBase, kind="summary", title="Summary"):
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


def build_verdict_row(section: WorkloadSection) -> VerdictRow:
    """The plan's verdict and expected figure at its recommended settings (a plan-less machine: the measured
    main-batch point)."""
    v, e, payload = section.verdict, section.expected, section.payload
    point = plain_point(payload, v.batch, v.precision) if v.batch and v.precision else None
    throughput = e.throughput_per_s if e else point.throughput_per_s if point else None
    tokens = throughput * payload.tokens_per_sample if throughput and payload.tokens_per_sample else None
    return VerdictRow(section.name, section.anchor, v.bound, v.reason, v.precision, v.batch, section.unit,
                      throughput, tokens, point.step_s if point else None, section.tiny)


def proposed_changes(sections: list) -> list[Change]:
    """Changes from the workload measurements and from every section that proposes its own."""
    changes: list[Change] = []
    for section in sections:
        if isinstance(section, WorkloadSection):
            changes += build_workload_changes(section)
        changes += getattr(section, "changes", None) or []
    return changes


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
    return f"{'No other' if shown else 'No'} measured change gains 5% or more."


def build_summary(machine: MachineResults, collected: str, sections: list) -> SummarySection:
    env = machine.environment
    cpu = env.cpu if env else None
    workloads = [s for s in sections if isinstance(s, WorkloadSection)]
    # every measured workload counts once, reference and the user's own alike (changes.py: top_changes)
    measured = sum(1 for w in workloads if not w.tiny)
    changes = top_changes(proposed_changes(sections), CHANGES_SHOWN, measured or None)
    return SummarySection(
        device=machine.device_label, has_gpu=bool(machine.gpu_name), cpu=cpu.label if cpu else None,
        cores=cpu.logical_cores if cpu else None, ram_bytes=cpu.ram_bytes if cpu else None,
        torch=env.torch if env else None, cuda=env.cuda_runtime if env else None,
        driver=env.driver if env else None, collected=collected, changes=changes,
        changes_note=changes_note(workloads, len(changes)), verdicts=[build_verdict_row(w) for w in workloads],
    )
