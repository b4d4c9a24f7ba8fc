"""The workloads part of the report: one typed section per workload document.

Each section holds a verdict in plain words (planner/model/workload_verdict.py), the batch, memory and
sequence charts, the precision × variant trials at the main batch (the batch of the `variant`
points, in the style of the first seed's trial table), the OOM boundaries, the repeatability check
and the achieved fraction of each ceiling at every batch point. Values stay SI; the templates format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults
from gpuplan_schema.stats import Stat
from planner.charts.base import DTYPE_ORDER, build_memory_chart, build_sequence_chart, build_throughput_chart
from planner.model.workload_verdict import (
    Verdict,
    evidence_lines,
    gpu_memory_bytes,
    judged_point,
    main_batch,
    plain_point,
)
from planner.plan.answer import WorkloadAnswer, measured_answers
from planner.plan.expect import Expected
from planner.plan.plan import Plan
from planner.report.sections import SectionBase
from planner.units import unit_label

REASON_CHARS = 120


@dataclass(frozen=True)
class TrialRow:
    """One precision × variant at the main batch; speed-ups are throughput ratios."""

    precision: str
    variant: str
    status: str
    reason: str | None
    step: Stat | None
    peak_bytes: int | None
    throughput: float | None
    tokens_per_s: float | None
    vs_fp32: float | None
    vs_default: float | None
    compile_s: float | None


@dataclass(frozen=True)
class PointRow:
    """One batch-sweep or sequence point with the achieved fraction of each ceiling."""

    precision: str
    batch: int
    seq_len: int | None
    status: str
    reason: str | None
    step: Stat | None
    throughput: float | None
    tokens_per_s: float | None
    peak_bytes: int | None
    flops_fraction: float | None
    bytes_fraction: float | None
    utilization: float | None


@dataclass(frozen=True)
class RepeatRow:
    """The `repeat` point against the first measurement of the same configuration (step time)."""

    precision: str
    batch: int
    variant: str
    first: Stat
    repeat: Stat

    @property
    def difference(self) -> float:
        return self.repeat.median / self.first.median - 1

    @property
    def within_spread(self) -> bool:
        """Whether the medians differ by no more than the larger relative IQR of the two."""
        return abs(self.difference) <= max(self.first.rel_iqr, self.repeat.rel_iqr)


@dataclass(frozen=True)
class WorkloadSection(SectionBase, kind="workload"):
    """Duck-typed to planner.report.sections.SectionBase (kind, title, in_toc), plus an anchor of its own:
    a machine has several workload sections, and each needs its own id in the page."""

    name: str
    anchor: str
    payload: WorkloadPayload
    unit: str
    main_batch: int | None
    gpu_memory_bytes: int | None
    verdict: Verdict
    expected: Expected | None         # the plan's figure at its recommended settings
    throughput_chart: dict | None
    memory_chart: dict | None
    sequence_chart: dict | None
    trials: list[TrialRow]
    boundaries: list[BoundaryRow]
    batches: list[PointRow]
    sequence: list[PointRow]
    repeats: list[RepeatRow]
    explains_rules: bool = True       # the verdict rules are spelled out under the first workload only

    @property
    def title(self) -> str:
        return f"Workload: {self.name}"

    @property
    def tiny(self) -> bool:
        return self.payload.scale == "tiny"


def build_workload_sections(machine: MachineResults, plan: Plan | None = None) -> list[WorkloadSection]:
    """One section per workload document, in the order of their files; the verdict is the plan's."""
    gpu_memory = gpu_memory_bytes(machine)
    answers = measured_answers(plan)
    sections, anchors = [], set()
    for payload in machine.workloads:
        section = build_workload_section(payload, gpu_memory, answers.get(payload.workload))
        if section.anchor in anchors:  # two names that sanitise alike still get an anchor each
            section = replace(section, anchor=f"{section.anchor}-{len(sections) + 1}")
        if sections:
            section = replace(section, explains_rules=False)
        anchors.add(section.anchor)
        sections.append(section)
    return sections


def verdict_of(payload: WorkloadPayload, gpu_memory: int | None, answer: WorkloadAnswer | None) -> Verdict:
    """The plan's judgement at the recommended settings in words, with the measured figures of the judged point;
    without a plan (a machine the planner cannot use), what is missing."""
    expected = answer.expected if answer else None
    if expected is None:
        main = main_batch(payload)
        point = judged_point(payload, main) if main else None
        lines = evidence_lines(payload, point, gpu_memory) if point else []
        return Verdict("undetermined", "the planner made no recommendation for this workload on this machine (no GPU "
                       "in the catalog, no ceilings, or no batch sweep), so no bound is judged", lines,
                       point.precision if point else None, main)
    j = expected.judgement
    point = plain_point(payload, j.batch, j.precision) if j.batch and j.precision else None
    lines = evidence_lines(payload, point, gpu_memory) if point else []
    return Verdict(j.label, j.sentence, lines, j.precision, j.batch)


def build_workload_section(payload: WorkloadPayload, gpu_memory: int | None,
                           answer: WorkloadAnswer | None = None) -> WorkloadSection:
    main = main_batch(payload)
    return WorkloadSection(
        name=payload.workload, anchor=f"workload-{sanitize_machine_id(payload.workload)}", payload=payload,
        unit=unit_label(payload.unit), main_batch=main, gpu_memory_bytes=gpu_memory,
        verdict=verdict_of(payload, gpu_memory, answer), expected=answer.expected if answer else None,
        throughput_chart=build_throughput_chart(payload),
        memory_chart=build_memory_chart(payload, gpu_memory), sequence_chart=build_sequence_chart(payload),
        trials=build_trial_rows(payload, main) if main else [], boundaries=boundary_rows(payload),
        batches=[point_row(p) for p in ordered([p for p in payload.points if p.sweep == "batch"])],
        sequence=[point_row(p) for p in payload.points if p.sweep == "sequence"],
        repeats=build_repeat_rows(payload),
    )


@dataclass(frozen=True)
class BoundaryRow:
    """One boundary of the table: which allocator it was searched with, and what expandable segments gained."""

    precision: str
    allocator: str               # as the table says it
    status: str
    max_batch: int | None
    first_oom_batch: int | None
    capped: bool
    reason: str | None
    gain: float | None = None    # over the default allocator's boundary, for an expandable-segments row


def boundary_rows(payload: WorkloadPayload) -> list[BoundaryRow]:
    """Each precision's boundary with the default allocator, then with expandable segments where searched."""
    rows = []
    for b in ordered(payload.boundaries):
        expandable = b.allocator == "expandable_segments"
        rows.append(BoundaryRow(b.precision, "expandable segments" if expandable else "default", b.status,
                                b.max_batch, b.first_oom_batch, b.capped, b.reason,
                                payload.expandable_gain(b.precision) if expandable else None))
    return rows


def precision_rank(precision: str) -> int:
    """Widest first (fp32, tf32, fp16, bf16, fp8), as the trial tables read; unknown names last."""
    order = list(reversed(DTYPE_ORDER))
    return order.index(precision) if precision in order else len(order)


def ordered(items: list) -> list:
    """Points or boundaries, stably sorted by precision."""
    return sorted(items, key=lambda item: precision_rank(item.precision))


def short_reason(reason: str | None, status: str = "error") -> str | None:
    """The first sentence or two of a reason; of an OOM message, what it tried to allocate (the status already
    says 'out of memory'), without the allocator's dump."""
    if not reason:
        return None
    sentences = re.split(r"(?<=\.)\s+", reason.strip())
    if status == "oom" and len(sentences) > 1 and "out of memory" in sentences[0].lower():
        sentences = sentences[1:]
    text = " ".join(sentences[:2] if status != "oom" else sentences[:1])
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def point_row(p: WorkloadPoint) -> PointRow:
    util = p.device_samples.utilization if p.device_samples else None
    return PointRow(p.precision, p.batch, p.seq_len, p.status, short_reason(p.reason, p.status), p.step_s,
                    p.throughput_per_s, p.tokens_per_s, p.memory.peak_allocated_bytes if p.memory else None,
                    p.achieved_flops_fraction, p.achieved_bytes_fraction, util.median if util else None)


def main_batch_points(payload: WorkloadPayload, main: int) -> dict[str, list[WorkloadPoint]]:
    """Per precision, the points at the main batch: the variant trials where there are some, otherwise the
    batch-sweep point (which also carries a skipped precision's reason)."""
    by_precision: dict[str, list[WorkloadPoint]] = {}
    for sweep in ("variant", "batch"):
        for p in payload.points:
            if p.sweep == sweep and p.batch == main and p.seq_len is None:
                if sweep == "variant" or p.precision not in by_precision:
                    by_precision.setdefault(p.precision, []).append(p)
    return {precision: sorted(points, key=lambda p: p.variant != "default")
            for precision, points in sorted(by_precision.items(), key=lambda item: precision_rank(item[0]))}


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value and base else None


def build_trial_rows(payload: WorkloadPayload, main: int) -> list[TrialRow]:
    by_precision = main_batch_points(payload, main)
    fp32 = by_precision.get("fp32", [])
    rows = []
    for points in by_precision.values():
        default = next((p.throughput_per_s for p in points if p.variant == "default"), None)
        for p in points:
            base = fp32_reference(fp32, p.variant)
            rows.append(TrialRow(
                p.precision, p.variant.replace("_", " "), p.status, short_reason(p.reason, p.status), p.step_s,
                p.memory.peak_allocated_bytes if p.memory else None, p.throughput_per_s, p.tokens_per_s,
                None if p is base else _ratio(p.throughput_per_s, base.throughput_per_s if base else None),
                None if p.variant == "default" else _ratio(p.throughput_per_s, default), p.compile_s))
    return rows


def fp32_reference(fp32: list[WorkloadPoint], variant: str) -> WorkloadPoint | None:
    """The fp32 point a speed-up is taken against: the same variant where fp32 ran it (like for like), else
    fp32's plain run (outside the `full` profile, a convolution network's fp32 runs without autotuning)."""
    ran = [p for p in fp32 if p.throughput_per_s]
    return next((p for p in ran if p.variant == variant), None) or \
        next((p for p in ran if p.variant in ("default", "no_cudnn_benchmark")), None)


def build_repeat_rows(payload: WorkloadPayload) -> list[RepeatRow]:
    """Each `repeat` point beside the first `variant` point of the same precision, batch and variant."""
    rows = []
    for again in payload.points:
        if again.sweep != "repeat" or again.step_s is None:
            continue
        first = next((p for p in payload.points if p.sweep == "variant" and p.step_s is not None
                      and (p.precision, p.batch, p.variant) == (again.precision, again.batch, again.variant)), None)
        if first is not None:
            rows.append(RepeatRow(again.precision, again.batch, again.variant, first.step_s, again.step_s))
    return rows
