"""How good the planner's predictions are: one measured machine predicted from another, compared with what
was measured there. The table goes to the docs (`gpuplan accuracy SOURCE TARGET`) and to the site's accuracy page, whose
rows (`AccuracyRow`) carry their error as predicted / measured − 1, computed here so that it can never
disagree with its two figures: +10% means the prediction was 10% too high.

Targets (docs/accuracy.md): median absolute throughput error ≤ 5% over the configurations whose step takes
≥ 5 ms on the source (the step a prediction starts from), none over 15%; max batch within 3%. Each row
carries its regime (the source configuration's bound), so that the errors can be read, and the bands
built (planner/check/bands.py), per regime.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gpuplan_schema.payloads import Allocator, WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.check.gpu_types import one_per_gpu_type
from planner.model.host_speed import step_host_ratio
from planner.model.memory import fit_memory
from planner.model.performance import (
    HostExposure,
    iter_predictions,
    measured_rates,
    naive_step,
    on_host,
    target_rates,
)
from planner.model.split import machine_rooflines
from planner.specs import match_gpu

TARGET_ERROR = 0.05   # the planner's goal for the median absolute error (issue 18)
WORST_ERROR = 0.15    # and for the largest


@dataclass(frozen=True)
class AccuracyRow:
    workload: str
    precision: str
    batch: int | None
    source: str                         # the machine whose results the prediction started from
    target: str                         # the machine predicted, then measured
    predicted: float
    measured: float
    metric: str = "throughput_per_s"    # what was predicted, by its tidy-export metric name
    unit: str = "samples/s"
    regime: str | None = None           # the source configuration's bound (planner/model/bound.py)
    naive_flops: float | None = None    # one spec ratio's answer on the same row: datasheet TFLOPS
    naive_bandwidth: float | None = None  # … and datasheet bandwidth

    def __post_init__(self) -> None:
        for name in ("predicted", "measured"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise ValueError(f"accuracy row {self.workload} {self.precision} {self.source} → {self.target}: "
                                 f"{name} is {value!r}; it must be a positive number")

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1


@dataclass(frozen=True)
class AccuracySummary:
    """One source → target pair and metric: how many comparisons, and how far they landed."""

    source: str
    target: str
    metric: str
    n: int
    median_abs_error: float
    max_abs_error: float
    within_target: int       # rows with |error| ≤ TARGET_ERROR

    @property
    def meets_goal(self) -> bool:
        return self.median_abs_error <= TARGET_ERROR and self.max_abs_error <= WORST_ERROR


def row_key(row: AccuracyRow) -> tuple:
    return (row.source, row.target, row.metric, row.workload, row.precision, row.batch or 0)


def build_summaries(rows: list[AccuracyRow]) -> list[AccuracySummary]:
    groups: dict[tuple[str, str, str], list[float]] = {}
    for row in rows:
        groups.setdefault((row.source, row.target, row.metric), []).append(abs(row.error))
    return [AccuracySummary(source, target, metric, len(errors), statistics.median(errors), max(errors),
                            sum(e <= TARGET_ERROR for e in errors))
            for (source, target, metric), errors in sorted(groups.items())]


LONG_STEP_S = 0.005
ALLOCATORS: tuple[Allocator, ...] = ("default", "expandable_segments")
ALLOCATOR_LABEL = {"default": "default allocator", "expandable_segments": "expandable segments"}


@dataclass(frozen=True)
class Compared:
    workload: str
    precision: str
    batch: int
    variant: str
    seq_len: int | None
    source_step_s: float
    predicted: float        # samples/s
    measured: float
    naive_flops: float | None
    naive_bandwidth: float | None
    bound: str = "unattributed"     # the regime: the source configuration's bound
    host: HostExposure = HostExposure()  # how the predicted step depended on its host (Prediction.host_there)

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def counted(self) -> bool:
        return self.source_step_s >= LONG_STEP_S


@dataclass(frozen=True)
class CapacityCompared:
    workload: str
    precision: str
    predicted: int
    measured: int
    allocator: Allocator = "default"
    fresh_process: bool = False  # both boundaries searched each in a process of its own (workloads collector 5)
    # each side's probes: jobs (each on the workload built anew, workloads collector 8) or one model (before: what a
    # probe left pinned the next one's segments, Transformer-XL's fp32 ran 174 so and failed at 148 alone)
    probes: str = "one model"

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1


@dataclass(frozen=True)
class AccuracyTable:
    source: str
    target: str
    rows: list[Compared]
    capacity: list[CapacityCompared]

    def summary(self) -> dict[str, float | int]:
        counted = [r for r in self.rows if r.counted]
        out: dict[str, float | int] = {"configurations": len(counted), "all_rows": len(self.rows)}
        for name, errs in (("model", [abs(r.error) for r in counted]),
                           ("naive_flops", [abs(r.naive_flops / r.measured - 1) for r in counted if r.naive_flops]),
                           ("naive_bandwidth", [abs(r.naive_bandwidth / r.measured - 1) for r in counted
                                                if r.naive_bandwidth])):
            if errs:
                out[f"{name}_median"], out[f"{name}_max"] = statistics.median(errs), max(errs)
        for allocator in ALLOCATORS:
            errors = [abs(c.error) for c in self.capacity if c.allocator == allocator]
            if errors:
                out[f"capacity_max_{allocator}"] = max(errors)
        return out


def comparable(machine: MachineResults) -> bool:
    return bool(machine.ceilings and machine.workloads and machine.gpu_name and match_gpu(machine.gpu_name)
                and all(w.scale == "reference" for w in machine.workloads))


def build_accuracy(source: MachineResults, target: MachineResults) -> AccuracyTable:
    s_spec, t_spec = match_gpu(source.gpu_name or ""), match_gpu(target.gpu_name or "")
    assert s_spec and t_spec and source.ceilings
    s_rates = measured_rates(source.ceilings)
    # the target is a measured machine: its own host's dispatch speed carries the host's share of the step
    t_host = measured_rates(target.ceilings) if target.ceilings else None
    dispatch_rates = on_host(target_rates(s_rates, s_spec, t_spec), t_host)
    rows, capacity = [], []
    rooflines = machine_rooflines(source)
    for payload in source.workloads:
        other = next((w for w in target.workloads if w.workload == payload.workload), None)
        if other is None:
            continue
        # where both machines timed other workloads' host-set steps steadily, their ratio is the hosts'
        steps = step_host_ratio(source.workloads, target.workloads, exclude=payload.workload)
        t_rates = replace(dispatch_rates, host_time_ratio=steps.ratio) if steps else dispatch_rates
        measured = measured_configurations(other.points)
        points = {(p.precision, p.batch, p.variant, p.seq_len): p for p in payload.points if p.step_s}
        for pr in iter_predictions(payload, s_rates, t_rates, True, rooflines, t_spec):
            key = (pr.precision, pr.batch, pr.variant, pr.seq_len)
            if key in measured:
                src = points[key]
                flops, bw = (naive_step(src, s_spec, t_spec, by) for by in ("flops", "bandwidth"))
                rows.append(Compared(payload.workload, pr.precision, pr.batch, pr.variant, pr.seq_len,
                                     pr.source_step_s, pr.throughput_per_s,
                                     measured[key].throughput_per_s,  # type: ignore[arg-type]
                                     pr.batch / flops if flops else None, pr.batch / bw if bw else None,
                                     pr.bound, pr.host_there))
        capacity += _capacity(payload, other, s_spec.memory_bytes, t_spec.memory_bytes)
    return AccuracyTable(source.machine, target.machine, rows, capacity)


def measured_configurations(points: list[WorkloadPoint]) -> dict[tuple, WorkloadPoint]:
    """The target's measurement of each configuration, the one a prediction is checked against. Where the
    collection timed a configuration twice (the batch sweep's point and again as a variant, minutes apart), the
    later one, the variant's; where it was also timed at the knee (collector 6, on another lend), the collection's,
    as every other row is; a configuration timed only at the knee, the knee's. Probes and repeats never."""
    rank = {"knee": 0}   # timed later (another lend): read only where the collection has no such configuration
    ok = (p for p in points if p.status == "ok" and p.throughput_per_s and p.sweep not in ("probe", "repeat"))
    timed = sorted(ok, key=lambda p: rank.get(p.sweep or "", 1))  # stable: the collection's own order within a rank
    return {(p.precision, p.batch, p.variant, p.seq_len): p for p in timed}


def _capacity(payload, other, source_bytes: int, target_bytes: int) -> list[CapacityCompared]:  # noqa: ANN001
    """Each boundary the target measured, predicted from the source's boundary with the same allocator."""
    out = []
    for b in other.boundaries:
        fit = fit_memory(payload, b.precision, source_bytes, b.allocator)
        if fit and fit.usable_measured and b.status == "ok" and b.max_batch and not b.capped:
            mine = payload.boundary(b.precision, b.allocator)
            out.append(CapacityCompared(payload.workload, b.precision, fit.max_batch(target_bytes), b.max_batch,
                                        b.allocator, b.fresh_process and bool(mine and mine.fresh_process),
                                        _probes(bool(mine and mine.fresh_probes), b.fresh_probes)))
    return out


def _probes(source: bool, target: bool) -> str:
    """How the two searches probed: 'jobs', 'one model', or the source's → the target's where they differ."""
    name = {True: "jobs", False: "one model"}
    return name[source] if source == target else f"{name[source]} → {name[target]}"


def iter_accuracy_tables(machines: Iterable[MachineResults]) -> list[AccuracyTable]:
    """Every ordered pair of GPU types, each from one comparable machine of the type (planner/check/gpu_types.py)."""
    usable = one_per_gpu_type(machines, comparable)
    return [build_accuracy(a, b) for a in usable for b in usable if a is not b]


def site_rows(tables: Iterable[AccuracyTable]) -> list[AccuracyRow]:
    rows = []
    for t in tables:
        rows += [AccuracyRow(f"{r.workload} ({r.variant}{f', seq {r.seq_len}' if r.seq_len else ''})", r.precision,
                             r.batch, t.source, t.target, r.predicted, r.measured, regime=r.bound,
                             naive_flops=r.naive_flops, naive_bandwidth=r.naive_bandwidth) for r in t.rows]
        rows += [AccuracyRow(f"{c.workload} ({ALLOCATOR_LABEL[c.allocator]})", c.precision, None, t.source,
                             t.target, c.predicted, c.measured, metric="max_batch", unit="samples")
                 for c in t.capacity]
    return rows


@dataclass(frozen=True)
class RegimeSummary:
    """One source → target pair and regime, over the counted rows (source step ≥ LONG_STEP_S)."""

    source: str
    target: str
    regime: str
    n: int
    median_abs_error: float
    max_abs_error: float
    naive_flops_median: float | None
    naive_bandwidth_median: float | None


def regime_summaries(tables: Iterable[AccuracyTable]) -> list[RegimeSummary]:
    out = []
    for t in tables:
        for regime in sorted({r.bound for r in t.rows if r.counted}):
            rows = [r for r in t.rows if r.counted and r.bound == regime]
            flops = [abs(r.naive_flops / r.measured - 1) for r in rows if r.naive_flops]
            bw = [abs(r.naive_bandwidth / r.measured - 1) for r in rows if r.naive_bandwidth]
            errors = [abs(r.error) for r in rows]
            out.append(RegimeSummary(t.source, t.target, regime, len(rows), statistics.median(errors), max(errors),
                                     statistics.median(flops) if flops else None,
                                     statistics.median(bw) if bw else None))
    return out


def headline(table: AccuracyTable) -> str:
    """The direction's result in one sentence (the Markdown's and the terminal's)."""
    s = table.summary()
    return (f"median |error| {s.get('model_median', 0):.1%}, max {s.get('model_max', 0):.1%} over "
            f"{s['configurations']} configurations with a source step ≥ 5 ms (one spec ratio: TFLOPS "
            f"{s.get('naive_flops_median', 0):.1%} median, {s.get('naive_flops_max', 0):.1%} max; bandwidth "
            f"{s.get('naive_bandwidth_median', 0):.1%}, {s.get('naive_bandwidth_max', 0):.1%}); max batch within "
            f"{_capacity_summary(s)}.")


def render_markdown(table: AccuracyTable) -> str:
    lines = [f"**{table.source} → {table.target}**: {headline(table)}", "",
             "| workload | precision | batch | variant | regime | source step | predicted /s | measured /s | error "
             "| TFLOPS ratio error | bandwidth ratio error |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table.rows:
        mark = "" if r.counted else " (step < 5 ms)"
        variant = r.variant + (f", seq {r.seq_len}" if r.seq_len else "")
        lines.append(f"| {r.workload} | {r.precision} | {r.batch} | {variant} | {r.bound} "
                     f"| {r.source_step_s * 1e3:.1f} ms{mark} | {r.predicted:.4g} | {r.measured:.4g} | {r.error:+.1%} "
                     f"| {_naive(r.naive_flops, r.measured)} | {_naive(r.naive_bandwidth, r.measured)} |")
    lines += ["", "| workload | precision | allocator | searched in | probes | predicted max batch | measured "
              "| error |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {c.workload} | {c.precision} | {ALLOCATOR_LABEL[c.allocator]} "
              f"| {'fresh processes' if c.fresh_process else 'the collection'} | {c.probes} | {c.predicted} "
              f"| {c.measured} | {c.error:+.1%} |"
              for c in sorted(table.capacity, key=lambda c: (c.workload, c.precision))]
    return "\n".join(lines) + "\n"


def _naive(predicted: float | None, measured: float) -> str:
    return "–" if predicted is None else f"{predicted / measured - 1:+.1%}"


def _capacity_summary(summary: dict[str, float | int]) -> str:
    parts = [f"{summary[f'capacity_max_{a}']:.1%} ({ALLOCATOR_LABEL[a]})" for a in ALLOCATORS
             if f"capacity_max_{a}" in summary]
    return ", ".join(parts) or "– (no boundary measured on both)"
