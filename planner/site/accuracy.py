"""The site's accuracy page as a typed structure: the comparisons, a summary per source → target, the chart.
With no rows, the page says there is no accuracy data yet rather than showing an empty table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpuplan_schema.results import MachineResults
from planner.charts.accuracy import build_accuracy_chart
from planner.check.accuracy import TARGET_ERROR, WORST_ERROR, AccuracyRow, AccuracySummary, build_summaries, row_key
from planner.check.bands import published_checks
from planner.check.coverage import TARGET_COVERAGE, CoverageGroup, overall
from planner.check.crossarch import MAX_TARGET, MEDIAN_TARGET, CrossCheck
from planner.check.repeatability import RepeatPair, RepeatSummary, repeat_summaries
from planner.check.scaling_check import ScalingCheck, ScalingSummary, summarize_scaling


@dataclass(frozen=True)
class AccuracyPage:
    rows: list[AccuracyRow]
    summaries: list[AccuracySummary]
    chart: dict | None       # Vega-Lite; None without rows
    target_error: float = TARGET_ERROR
    worst_error: float = WORST_ERROR
    crosschecks: list[CrossCheck] = field(default_factory=list)  # published tables, across architectures
    cross_median_target: float = MEDIAN_TARGET
    cross_max_target: float = MAX_TARGET
    repeats: list[RepeatSummary] = field(default_factory=list)   # how far a second measurement moved, by regime
    coverage: list[CoverageGroup] = field(default_factory=list)  # the bands checked on held-out residuals
    target_coverage: float = TARGET_COVERAGE
    scaling: list[ScalingCheck] = field(default_factory=list)  # published multi-GPU rows against the model
    scaling_summary: ScalingSummary | None = None

    @property
    def coverage_overall(self) -> tuple[int, int]:
        return overall(self.coverage)


def build_crosschecks(machines: Sequence[MachineResults]) -> list[CrossCheck]:
    """The published cross-architecture check of one measured machine per GPU type, where a table has its GPU."""
    return [c for c in published_checks(machines) if c.rows]


def build_accuracy_page(rows: Iterable[AccuracyRow], crosschecks: Sequence[CrossCheck] = (),
                        repeats: Sequence[RepeatPair] = (), coverage: Sequence[CoverageGroup] = (),
                        scaling: Sequence[ScalingCheck] = ()) -> AccuracyPage:
    ordered = sorted(rows, key=row_key)
    return AccuracyPage(ordered, build_summaries(ordered), build_accuracy_chart(ordered),
                        crosschecks=list(crosschecks), repeats=repeat_summaries(list(repeats)),
                        coverage=list(coverage), scaling=list(scaling),
                        scaling_summary=summarize_scaling(list(scaling)))
