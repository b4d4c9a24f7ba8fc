"""Prediction accuracy: how far the planner's predictions land from measurements, as the site publishes it.

The planner predicts a machine it has measured (the target) from another machine's results (the
source) and hands the comparisons here as `AccuracyRow`s (`build_site(..., accuracy=rows)`). The
error is computed here, predicted / measured − 1, so that it can never disagree with its two
figures: +10% means the prediction was 10% too high. With no rows, the page says there is no
accuracy data yet rather than showing an empty table.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

import altair as alt

from planner.formatting import format_number, format_percent
from planner.vega_spec import finish, unvalidated

TARGET_ERROR = 0.08   # the planner's goal for the median absolute error (issue 6)
WORST_ERROR = 0.20    # and for the largest


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


@dataclass(frozen=True)
class AccuracyPage:
    rows: list[AccuracyRow]
    summaries: list[AccuracySummary]
    chart: dict | None       # Vega-Lite; None without rows
    target_error: float = TARGET_ERROR
    worst_error: float = WORST_ERROR


def _row_key(row: AccuracyRow) -> tuple:
    return (row.source, row.target, row.metric, row.workload, row.precision, row.batch or 0)


def build_summaries(rows: list[AccuracyRow]) -> list[AccuracySummary]:
    groups: dict[tuple[str, str, str], list[float]] = {}
    for row in rows:
        groups.setdefault((row.source, row.target, row.metric), []).append(abs(row.error))
    return [AccuracySummary(source, target, metric, len(errors), statistics.median(errors), max(errors),
                            sum(e <= TARGET_ERROR for e in errors))
            for (source, target, metric), errors in sorted(groups.items())]


@unvalidated
def build_accuracy_chart(rows: list[AccuracyRow], width: int | str = "container") -> dict | None:
    """Each comparison's error (x) by workload (y), coloured by source → target, with the goal band."""
    if not rows:
        return None
    values = [{"workload": r.workload, "error": 100 * r.error, "pair": f"{r.source} → {r.target}",
               "config": f"{r.precision}, batch {r.batch}" if r.batch else r.precision,
               "metric": r.metric, "predicted": f"{format_number(r.predicted)} {r.unit}",
               "measured": f"{format_number(r.measured)} {r.unit}", "error_text": format_percent(r.error)}
              for r in rows]
    x = alt.X("error:Q", title="Error: predicted ÷ measured − 1 (%)")
    band = alt.Chart(alt.Data(name="band")).mark_rect(color="#2ca02c", opacity=0.12).encode(
        x=alt.X("low:Q"), x2=alt.X2("high:Q"))
    zero = alt.Chart(alt.Data(name="zero")).mark_rule(color="#555555").encode(x=x)
    points = alt.Chart(alt.Data(name="points")).mark_point(filled=True, size=60).encode(
        x=x, y=alt.Y("workload:N", title=None),
        color=alt.Color("pair:N", title="Source → target", legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("pair:N", title="Source → target"), alt.Tooltip("workload:N", title="Workload"),
                 alt.Tooltip("config:N", title="Configuration"), alt.Tooltip("metric:N", title="Metric"),
                 alt.Tooltip("predicted:N", title="Predicted"), alt.Tooltip("measured:N", title="Measured"),
                 alt.Tooltip("error_text:N", title="Error")])
    height = max(160, 36 * len({r.workload for r in rows}))
    title = f"Prediction error by workload (shaded: within ±{100 * TARGET_ERROR:g}%)"
    chart = alt.layer(band, zero, points).properties(width=width, height=height, title=title)
    return finish(chart, band=[{"low": -100 * TARGET_ERROR, "high": 100 * TARGET_ERROR}], zero=[{"error": 0}],
                  points=values)


def build_accuracy_page(rows: Iterable[AccuracyRow]) -> AccuracyPage:
    ordered = sorted(rows, key=_row_key)
    return AccuracyPage(ordered, build_summaries(ordered), build_accuracy_chart(ordered))
