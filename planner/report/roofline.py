"""The per-op roofline part of the report: one typed section per roofline document.

Each section holds the roofline chart (one point per op), the time-share bar, the share table, the
advice per class and the top ops ranked by time lost against their roof. It is placed right after
the workload section of the same workload. Values stay SI; the templates format.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import OpRoofline, RooflinePayload
from gpuplan_schema.results import MachineResults
from planner.charts.roofline import build_op_roofline_chart, build_time_share_chart, plotted_ops, safe_name
from planner.model.bound import Bound, bound_of
from planner.model.roofline import Advice, ClassShare, build_advice, class_shares, rank_by_time_lost
from planner.model.split import split_from_roofline
from planner.report.sections import SectionBase

TOP_OPS = 12


@dataclass(frozen=True)
class OpRow:
    """One op of the top-ops table; the op's figures are per step."""

    rank: int
    op: OpRoofline
    share: float                 # of the ops' total time
    kernel: str | None           # the op's longest kernel, shortened
    kernel_share: float | None   # of the op's time

    @property
    def achieved_flops_per_s(self) -> float | None:
        return self.op.flops / self.op.time_s.median if self.op.flops and self.op.time_s.median else None

    @property
    def achieved_bytes_per_s(self) -> float | None:
        return self.op.bytes / self.op.time_s.median if self.op.time_s.median else None


@dataclass(frozen=True)
class OpRooflineSection(SectionBase, kind="op_roofline"):
    name: str
    anchor: str
    payload: RooflinePayload
    chart: dict | None
    share_chart: dict | None
    shares: list[ClassShare]
    advice: list[Advice]
    top: list[OpRow]
    unplotted: list[OpRow]       # ops with time but no FLOP count: off the log-log chart
    op_time_s: float
    explains_rules: bool = True  # the classification rule is spelled out under the first section only
    bound: Bound | None = None   # the split's bound (planner/model/bound.py): the plan and the verdict say the same

    @property
    def title(self) -> str:
        return f"Roofline per op: {self.name}"

    @property
    def tiny(self) -> bool:
        return self.payload.scale == "tiny"


def _row(rank: int, op: OpRoofline, total: float) -> OpRow:
    kernel = op.kernels[0] if op.kernels else None
    time_s = op.time_s.median
    return OpRow(rank, op, time_s / total if total else 0.0, safe_name(kernel.name, 80) if kernel else None,
                 kernel.time_s / time_s if kernel and time_s else None)


def build_op_roofline_section(payload: RooflinePayload) -> OpRooflineSection:
    total = payload.op_time_s
    shares = class_shares(payload) if payload.status == "ok" else []
    plotted = {id(op) for op in plotted_ops(payload)}
    ranked = rank_by_time_lost(payload.ops)[:TOP_OPS]
    unplotted = [op for op in payload.ops if id(op) not in plotted]
    extra = payload.extra_precision
    return OpRooflineSection(
        name=f"{payload.workload} ({extra})" if extra else payload.workload,
        anchor=f"roofline-{sanitize_machine_id(payload.workload)}" + (f"-{extra}" if extra else ""), payload=payload,
        chart=build_op_roofline_chart(payload), share_chart=build_time_share_chart(shares), shares=shares,
        advice=build_advice(payload, shares), top=[_row(i + 1, op, total) for i, op in enumerate(ranked)],
        unplotted=[_row(i + 1, op, total) for i, op in enumerate(unplotted)], op_time_s=total,
        bound=bound_of(split) if (split := split_from_roofline(payload)) else None)


def build_op_roofline_sections(machine: MachineResults) -> list[OpRooflineSection]:
    """One section per roofline document, in the order of their files."""
    sections: list[OpRooflineSection] = []
    anchors: set[str] = set()
    docs = [d for d in machine.documents.values() if d.kind == "roofline"]
    # each workload's profile at the collector's precision first, then one at another (a tf32 profile)
    for doc in sorted(docs, key=lambda d: (d.payload.workload, d.payload.extra_precision)):
        section = build_op_roofline_section(doc.payload)
        if section.anchor in anchors:  # two names that sanitise alike still get an anchor each
            section = replace(section, anchor=f"{section.anchor}-{len(sections) + 1}")
        if sections:
            section = replace(section, explains_rules=False)
        anchors.add(section.anchor)
        sections.append(section)
    return sections
