"""Charts of the per-op roofline, pure functions from a roofline payload to a Vega-Lite spec.

The roofline: log-log, the measured copy-bandwidth slope and one flat roof per measured dtype (the
ceilings the collector classified with), one point per op at (arithmetic intensity, achieved
FLOP/s), its area proportional to the op's time per step, its colour its class. The time-share
bar: one stacked bar of the step by class. Op and kernel names come from documents, so they are
reduced to a plain character set before they enter a spec.
"""

from __future__ import annotations

import re

import altair as alt

from gpuplan_schema.payloads import OpRoofline, RooflinePayload
from planner.charts.base import CHART_HEIGHT, DTYPE_COLORS, DTYPE_ORDER, TERA, log_domain
from planner.charts.ticks import log10_axis
from planner.charts.vega import templated
from planner.model.roofline import CLASSES, OUTSIDE, ClassShare
from planner.units import (
    format_bandwidth,
    format_bytes,
    format_duration,
    format_flop_count,
    format_flops,
    format_intensity,
    format_number,
    format_percent,
)

CLASS_COLORS = {"math-bound": "#1f77b4", "memory-bound": "#d62728", "latency-bound": "#ff7f0e",
                "unclassified": "#7f7f7f", OUTSIDE: "#c7c7c7"}
SLOPE = "memory (copy)"
UNSAFE = re.compile(r"[^A-Za-z0-9_:.<>,()\[\] *&+-]")
NAME_CHARS = 90


def safe_name(name: str, limit: int = NAME_CHARS) -> str:
    """An op or kernel name as a chart may show it: plain characters only, cut to `limit`."""
    text = UNSAFE.sub("?", name)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plotted_ops(payload: RooflinePayload) -> list[OpRoofline]:
    """Ops that can sit on a log-log roofline: counted FLOPs, bytes and time all above zero."""
    return [op for op in payload.ops if op.flops and op.bytes and op.time_s.median > 0]


def _roofs(payload: RooflinePayload) -> list[tuple[str, float]]:
    rank = {d: i for i, d in enumerate(DTYPE_ORDER)}
    return sorted(payload.roofs.flops_per_s.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def _x_domain(intensities: list[float]) -> tuple[float, float]:
    return log_domain(intensities, 2.0)


def _line_rows(payload: RooflinePayload, x_low: float, x_high: float) -> list[dict]:
    bandwidth = payload.roofs.memory_bytes_per_s
    rows = []
    for dtype, peak in _roofs(payload):
        start = peak / bandwidth if bandwidth else x_low
        label = f"{dtype} peak: {format_flops(peak)}"
        rows += [{"series": dtype, "x": x, "y": peak / TERA, "label": label} for x in (start, x_high)]
    if bandwidth:
        top = max((peak / bandwidth for _, peak in _roofs(payload)), default=x_high)
        label = f"memory copy: {format_bandwidth(bandwidth)}"
        rows += [{"series": SLOPE, "x": x, "y": bandwidth * x / TERA, "label": label} for x in (x_low, top)]
    return rows


def _point_row(op: OpRoofline, total_s: float) -> dict:
    time_s = op.time_s.median
    kernel = op.kernels[0].name if op.kernels else None
    return {"op": safe_name(op.name), "class": op.op_class, "x": op.intensity, "y": op.flops / time_s / TERA,
            "time_ms": time_s * 1e3, "time": format_duration(time_s), "share": format_percent(time_s / total_s),
            "calls": format_number(op.calls), "dtype": op.dtype or "—", "flops": format_flop_count(op.flops),
            "bytes": format_bytes(op.bytes), "intensity": format_intensity(op.intensity),
            "achieved": format_flops(op.flops / time_s), "expected": format_duration(op.expected_s),
            "efficiency": format_percent(op.efficiency), "kernel": safe_name(kernel, 70) if kernel else "—"}


POINT_TOOLTIP = [alt.Tooltip(f"{field}:N", title=title) for field, title in (
    ("op", "Op"), ("class", "Class"), ("dtype", "dtype"), ("calls", "Calls per step"), ("time", "Time per step"),
    ("share", "Of op time"), ("flops", "FLOPs"), ("bytes", "Bytes read + written"), ("intensity", "Intensity"),
    ("achieved", "Achieved"), ("expected", "Expected at the roofs"), ("efficiency", "Efficiency"),
    ("kernel", "Main kernel"))]


def _legend(title: str) -> alt.Legend:
    """Under the plot, as the other charts: the PDF's font is wider than the one vl-convert measures."""
    return alt.Legend(title=title, orient="bottom", direction="horizontal", labelLimit=200)


def build_op_roofline_chart(payload: RooflinePayload, width: int | str = "container") -> dict | None:
    """The roofline with one point per op; None when no op has counted FLOPs (nothing to place)."""
    ops = plotted_ops(payload)
    if not ops:
        return None
    bandwidth = payload.roofs.memory_bytes_per_s
    ridges = [peak / bandwidth for _, peak in _roofs(payload)] if bandwidth else []
    x_low, x_high = _x_domain([op.intensity for op in ops] + ridges)
    lines = _line_rows(payload, x_low, x_high)
    series = tuple(dtype for dtype, _ in _roofs(payload)) + ((SLOPE,) if bandwidth else ()) if lines else ()
    present = tuple(c for c in CLASSES if any(op.op_class == c for op in ops))
    total = sum(op.time_s.median for op in payload.ops)
    return _op_roofline_spec(x_low, x_high, series, present, width, safe_name(payload.workload, 40),
                             roofs=lines, ops=[_point_row(op, total) for op in ops])


@templated
def _op_roofline_spec(x_low: float, x_high: float, series: tuple[str, ...], present: tuple[str, ...],
                      width: int | str, workload: str) -> alt.LayerChart:
    """The roofs' lines (dataset "roofs": `series` in order) and the ops' points (dataset "ops": the classes
    `present`)."""
    x = alt.X("x:Q", title="Arithmetic intensity (FLOP/byte)", scale=alt.Scale(type="log", domain=[x_low, x_high]),
              axis=log10_axis(x_low, x_high))
    y = alt.Y("y:Q", title="Throughput (TFLOP/s)", scale=alt.Scale(type="log"))
    layers = []
    if series:
        palette = alt.Scale(domain=list(series), range=[DTYPE_COLORS.get(s, "#555555") for s in series])
        layers.append(alt.Chart(alt.Data(name="roofs")).mark_line(strokeWidth=2).encode(
            x=x, y=y, color=alt.Color("series:N", scale=palette, legend=_legend("Roof")), detail="series:N",
            tooltip=[alt.Tooltip("label:N", title="Roof")]))
    classes = alt.Scale(domain=list(present), range=[CLASS_COLORS[c] for c in present])
    layers.append(alt.Chart(alt.Data(name="ops")).mark_circle(
        opacity=0.75, stroke="#222222", strokeWidth=0.5).encode(
        x=x, y=y, color=alt.Color("class:N", scale=classes, legend=_legend("Op class")),
        size=alt.Size("time_ms:Q", scale=alt.Scale(range=[25, 1200]), legend=None), tooltip=POINT_TOOLTIP))
    return alt.layer(*layers).resolve_scale(color="independent").properties(
        width=width, height=CHART_HEIGHT, title=f"Roofline per op: {workload}")


def build_time_share_chart(shares: list[ClassShare], width: int | str = "container") -> dict | None:
    """One stacked bar: the step's time by op class, then time outside any op."""
    if not shares:
        return None
    order = {name: i for i, name in enumerate([*CLASSES, OUTSIDE])}
    rows = [{"class": s.name, "fraction": s.fraction, "order": order[s.name], "time": format_duration(s.time_s),
             "percent": format_percent(s.fraction), "ops": s.ops} for s in shares]
    names = tuple(s.name for s in sorted(shares, key=lambda s: order[s.name]))
    return _time_share_spec(names, width, shares=rows)


@templated
def _time_share_spec(names: tuple[str, ...], width: int | str) -> alt.Chart:
    """The bar of the classes `names` (dataset "shares")."""
    color = alt.Color("class:N", scale=alt.Scale(domain=list(names), range=[CLASS_COLORS[n] for n in names]),
                      legend=_legend("Time in"))
    chart = alt.Chart(alt.Data(name="shares")).mark_bar(height=28).encode(
        x=alt.X("fraction:Q", stack="zero", title="Share of the step", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")),
        color=color, order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("class:N", title="Time in"), alt.Tooltip("percent:N", title="Share"),
                 alt.Tooltip("time:N", title="Per step"), alt.Tooltip("ops:Q", title="Ops")])
    return chart.properties(width=width, height=50, title="Where the step's time goes")
