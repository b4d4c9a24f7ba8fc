"""The accuracy page's chart: each comparison's error by workload, with the goal band."""

from __future__ import annotations

import altair as alt

from planner.charts.vega import finish, unvalidated
from planner.check.accuracy import TARGET_ERROR, AccuracyRow
from planner.units import format_number, format_percent


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
