"""The bus-bandwidth chart of the `collectives` document: a pure function from data to a Vega-Lite spec."""

from __future__ import annotations

import altair as alt

from gpuplan_schema.payloads import CollectivesPayload
from planner.charts.base import CHART_HEIGHT
from planner.charts.vega import unvalidated
from planner.units import format_bandwidth, format_bytes, format_duration

OP_COLORS = {"all_reduce": "#1f77b4", "all_gather": "#2ca02c", "reduce_scatter": "#ff7f0e", "broadcast": "#9467bd"}
GB = 1e9


@unvalidated
def build_busbw_chart(payload: CollectivesPayload, width: int | str = "container") -> dict | None:
    """Bus bandwidth (GB/s, nccl-tests' definition) against message size on a log₂ axis, one line per
    operation. None when no point was measured."""
    points = [p for p in payload.points if p.status == "ok" and p.busbw_bytes_per_s and p.algbw_bytes_per_s
              and p.time_s]
    if not points:
        return None
    rows = [{"op": p.op, "size": p.size_bytes, "y": p.busbw_bytes_per_s.median / GB,
             "size_text": format_bytes(p.size_bytes), "busbw_text": format_bandwidth(p.busbw_bytes_per_s.median),
             "algbw_text": format_bandwidth(p.algbw_bytes_per_s.median), "time_text": format_duration(p.time_s.median)}
            for p in points]
    ops = [op for op in OP_COLORS if any(p.op == op for p in points)]
    sizes = sorted({p.size_bytes for p in points})
    x = alt.X("size:Q", title="Message size (log scale, base 2; nccl-tests' size)",
              scale=alt.Scale(type="log", base=2, domain=[sizes[0] / 1.2, sizes[-1] * 1.2], nice=False),
              axis=alt.Axis(values=sizes, labelExpr=_size_label_expr(), labelOverlap=True))
    y = alt.Y("y:Q", title="Bus bandwidth (GB/s)")
    color = alt.Color("op:N", scale=alt.Scale(domain=ops, range=[OP_COLORS[o] for o in ops]),
                      legend=alt.Legend(title="Operation", orient="bottom", direction="horizontal"))
    tooltip = [alt.Tooltip("op:N", title="Operation"), alt.Tooltip("size_text:N", title="Message size"),
               alt.Tooltip("busbw_text:N", title="Bus bandwidth"), alt.Tooltip("algbw_text:N", title="Algorithm bw"),
               alt.Tooltip("time_text:N", title="Time per operation")]
    chart = alt.Chart(alt.Data(values=rows)).mark_line(point=True, strokeWidth=2).encode(
        x=x, y=y, color=color, tooltip=tooltip)
    ranks = "GPUs" if payload.device == "cuda" else "CPU ranks"
    title = f"Bus bandwidth on {payload.world_size} {ranks} ({payload.dtype})"
    chart = chart.properties(width=width, height=CHART_HEIGHT, title=title)
    return chart.configure_view(stroke=None).to_dict(validate=False)


def _size_label_expr() -> str:
    """Axis labels in binary units (8K, 1M, 1G) computed by Vega from the value."""
    return ("datum.value >= 1073741824 ? format(datum.value / 1073741824, '~g') + 'G' : "
            "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + 'M' : "
            "format(datum.value / 1024, '~g') + 'K'")
