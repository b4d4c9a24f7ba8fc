"""The site's accuracy page as a typed structure: the comparisons, a summary per source → target, the chart.
With no rows, the page says there is no accuracy data yet rather than showing an empty table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from planner.charts.accuracy import build_accuracy_chart
from planner.model.accuracy import TARGET_ERROR, WORST_ERROR, AccuracyRow, AccuracySummary, build_summaries, row_key


@dataclass(frozen=True)
class AccuracyPage:
    rows: list[AccuracyRow]
    summaries: list[AccuracySummary]
    chart: dict | None       # Vega-Lite; None without rows
    target_error: float = TARGET_ERROR
    worst_error: float = WORST_ERROR


def build_accuracy_page(rows: Iterable[AccuracyRow]) -> AccuracyPage:
    ordered = sorted(rows, key=row_key)
    return AccuracyPage(ordered, build_summaries(ordered), build_accuracy_chart(ordered))
