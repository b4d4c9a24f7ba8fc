"""Charts as pure functions: measured data in, a Vega-Lite spec (a JSON-ready dict) out.

Specs are built with Altair and hold only numbers and labels made here (dtype names,
formatted figures), never free text from the documents, so embedding them is safe. The HTML
report renders them interactively; the PDF gets SVG from `vl_convert.vegalite_to_svg`. Each
builder is `@unvalidated` and returns `finish(chart, **datasets)` (planner/charts/vega.py): the
data sits in named top-level datasets, so that a site of many machines builds its charts quickly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import altair as alt

from gpuplan_schema.payloads import (
    BandwidthCeiling,
    CeilingsPayload,
    MatmulCeiling,
    OomBoundary,
    WorkloadPayload,
    WorkloadPoint,
)
from planner.charts.ticks import log10_axis, pow2_ticks
from planner.charts.vega import finish, templated, unvalidated
from planner.units import (
    format_bandwidth,
    format_bytes,
    format_duration,
    format_flops,
    format_intensity,
    format_number,
    format_percent,
    unit_label,
)

DTYPE_COLORS = {"fp8": "#d62728", "bf16": "#1f77b4", "fp16": "#2ca02c", "tf32": "#9467bd", "fp32": "#ff7f0e"}
DTYPE_ORDER = tuple(DTYPE_COLORS)
CHART_HEIGHT = 320
TERA = 1e12


@dataclass(frozen=True)
class Roof:
    """One compute roof: a dtype's peak, meeting the memory slope at its ridge point."""

    dtype: str
    flops_per_s: float
    ridge_flop_per_byte: float | None  # None when there is no memory slope to meet


def build_roofs(ceilings: CeilingsPayload) -> tuple[list[Roof], BandwidthCeiling | None]:
    """The measured roofs (peak per dtype that ran) and the copy bandwidth that slopes up to them."""
    copy = next((m for m in ceilings.memory if m.name == "copy" and m.bytes_per_s is not None), None)
    bandwidth = copy.bytes_per_s.median if copy and copy.bytes_per_s else None
    roofs = []
    for ceiling in _ordered(ceilings.matmul):
        if ceiling.flops_per_s is None:
            continue
        peak = ceiling.flops_per_s.median
        roofs.append(Roof(ceiling.dtype, peak, peak / bandwidth if bandwidth else None))
    return roofs, copy


def _ordered(matmul: list[MatmulCeiling]) -> list[MatmulCeiling]:
    rank = {d: i for i, d in enumerate(DTYPE_ORDER)}
    return sorted(matmul, key=lambda c: (rank.get(c.dtype, len(rank)), c.dtype))


def _x_domain(roofs: list[Roof]) -> tuple[float, float]:
    """Powers of ten with room on both sides of the ridge points."""
    return log_domain([r.ridge_flop_per_byte for r in roofs if r.ridge_flop_per_byte] or [10.0], 8.0)


def log_domain(values: list[float], pad: float) -> tuple[float, float]:
    """The powers of ten around `values` with a factor `pad` of room, for a log axis. Values a log axis
    cannot place (zero, infinite: a document may hold any) are left out; the exponents stay within
    what a float holds."""
    usable = [v for v in values if 0 < v < math.inf] or [1.0]
    low = math.floor(math.log10(min(usable)) - math.log10(pad))
    high = math.ceil(math.log10(max(usable)) + math.log10(pad))
    return 10.0 ** max(low, -300), 10.0 ** min(max(high, low + 1), 300)


def _roof_rows(roofs: list[Roof], x_high: float, x_low: float) -> list[dict]:
    rows = []
    for roof in roofs:
        label = f"{roof.dtype} peak: {format_flops(roof.flops_per_s)}"
        start = roof.ridge_flop_per_byte or x_low
        for x in (start, x_high):
            rows.append({"series": roof.dtype, "x": x, "y": roof.flops_per_s / TERA, "label": label})
    return rows


def _slope_rows(copy: BandwidthCeiling, roofs: list[Roof], x_low: float) -> list[dict]:
    assert copy.bytes_per_s is not None
    bandwidth = copy.bytes_per_s.median
    top = max(r.ridge_flop_per_byte or x_low for r in roofs)
    label = f"memory copy: {format_bandwidth(bandwidth)}"
    return [{"series": "memory (copy)", "x": x, "y": bandwidth * x / TERA, "label": label} for x in (x_low, top)]


def _ridge_rows(roofs: list[Roof]) -> list[dict]:
    return [
        {"series": r.dtype, "x": r.ridge_flop_per_byte, "y": r.flops_per_s / TERA,
         "peak": format_flops(r.flops_per_s), "ridge": format_intensity(r.ridge_flop_per_byte)}
        for r in roofs if r.ridge_flop_per_byte
    ]


@unvalidated
def build_roofline_chart(ceilings: CeilingsPayload, width: int | str = "container") -> dict | None:
    """Log-log roofline: a flat roof per measured dtype, the copy-bandwidth slope, ridge points.

    None when no matmul ceiling was measured (there is nothing to draw a roof from).
    `width` is "container" for the responsive HTML page and a number of pixels for SVG.
    """
    roofs, copy = build_roofs(ceilings)
    if not roofs:
        return None
    x_low, x_high = _x_domain(roofs)
    x = alt.X("x:Q", title="Arithmetic intensity (FLOP/byte)",
              scale=alt.Scale(type="log", domain=[x_low, x_high]), axis=log10_axis(x_low, x_high))
    y = alt.Y("y:Q", title="Throughput (TFLOP/s)", scale=alt.Scale(type="log"))
    dtypes = [r.dtype for r in roofs]
    palette = alt.Scale(domain=[*dtypes, "memory (copy)"], range=[*_colors(dtypes), "#555555"])
    color = alt.Color("series:N", scale=palette, legend=_legend("Roof"))
    lines = _roof_rows(roofs, x_high, x_low) + (_slope_rows(copy, roofs, x_low) if copy else [])
    layers = [
        alt.Chart(alt.Data(name="roofs")).mark_line(strokeWidth=2.5, interpolate="linear").encode(
            x=x, y=y, color=color, detail=alt.Detail("series:N"), tooltip=[alt.Tooltip("label:N", title="Roof")]),
    ]
    ridges = _ridge_rows(roofs)
    if ridges:
        layers.append(alt.Chart(alt.Data(name="ridges")).mark_point(filled=True, size=70).encode(
            x=x, y=y, color=color,
            tooltip=[alt.Tooltip("series:N", title="dtype"), alt.Tooltip("peak:N", title="Peak"),
                     alt.Tooltip("ridge:N", title="Ridge point")]))
    chart = alt.layer(*layers).properties(width=width, height=CHART_HEIGHT, title="Roofline (measured)")
    return finish(chart, roofs=lines, ridges=ridges)


def _colors(dtypes: list[str]) -> list[str]:
    return [DTYPE_COLORS.get(d, "#7f7f7f") for d in dtypes]


def with_width(spec: dict, width: int) -> dict:
    """A copy of `spec` at a fixed pixel width: SVG rendering has no container to fill."""
    return {**spec, "width": width}


# ---- Workload charts: batch scaling, memory against the OOM boundary, sequence scaling ----

GIB = float(1 << 30)


# Runs whose memory is the workload's own (compile and memory-format variants change it).
PLAIN_VARIANTS = ("default", "no_cudnn_benchmark")


def _ok_points(payload: WorkloadPayload, sweep: str) -> list[WorkloadPoint]:
    return [p for p in payload.points if p.sweep == sweep and p.status == "ok" and p.step_s is not None]


def _memory_points(payload: WorkloadPayload) -> list[WorkloadPoint]:
    """Every plain run's peak memory by precision and batch: timed sweep points, main-batch points and the
    boundary's untimed probes (the highest reading where a batch ran more than once)."""
    best: dict[tuple[str, int], WorkloadPoint] = {}
    for p in payload.points:
        if p.status != "ok" or p.seq_len is not None or not (p.memory and p.memory.peak_allocated_bytes) \
                or p.variant not in PLAIN_VARIANTS:
            continue
        seen = best.get((p.precision, p.batch))
        if seen is None or p.memory.peak_allocated_bytes > seen.memory.peak_allocated_bytes:  # type: ignore[union-attr]
            best[(p.precision, p.batch)] = p
    return sorted(best.values(), key=lambda p: p.batch)


def _precisions(points: list[WorkloadPoint]) -> list[str]:
    rank = {d: i for i, d in enumerate(DTYPE_ORDER)}
    return sorted({p.precision for p in points}, key=lambda d: (rank.get(d, len(rank)), d))


def _point_tooltip(p: WorkloadPoint, unit: str) -> dict:
    memory = p.memory.peak_allocated_bytes if p.memory else None
    return {"precision": p.precision, "batch": p.batch,
            "throughput_text": f"{format_number(p.throughput_per_s)} {unit}/s" if p.throughput_per_s is not None
            else "untimed (boundary probe)",
            "step": format_duration(p.step_s.median) if p.step_s else "untimed (boundary probe)",
            "memory_text": format_bytes(memory),
            "flops_pct": format_percent(p.achieved_flops_fraction),
            "bytes_pct": format_percent(p.achieved_bytes_fraction)}


POINT_TOOLTIP = [alt.Tooltip("precision:N", title="Precision"), alt.Tooltip("batch:Q", title="Batch"),
                 alt.Tooltip("throughput_text:N", title="Throughput"), alt.Tooltip("step:N", title="Step time"),
                 alt.Tooltip("memory_text:N", title="Peak allocated"),
                 alt.Tooltip("flops_pct:N", title="Of FLOP/s ceiling"),
                 alt.Tooltip("bytes_pct:N", title="Of copy bandwidth (est.)")]


def _log2_x(field: str, title: str, ticks: list[int], extra: list[int] = ()) -> alt.X:
    """A log-2 axis ticked at round values (powers of two, pow2_ticks) over the measured values and `extra`
    ones (rules), padded so that rules at the ends stay off the frame."""
    values = [*ticks, *extra]
    low, high = min(values) / 1.15, max(values) * 1.15
    return alt.X(f"{field}:Q", title=f"{title} (log scale, base 2)",
                 scale=alt.Scale(type="log", base=2, domain=[low, high], nice=False),
                 axis=alt.Axis(values=pow2_ticks(low, high, ticks), format="d", labelOverlap=True))


def _batch_x(batches: list[int], extra: list[int] = ()) -> alt.X:
    return _log2_x("batch", "Batch size", batches, extra)


def _legend(title: str | None) -> alt.Legend:
    """Legends go under the plot, which then has the page's whole width (in the PDF too, where the chart is
    laid out in the PDF's font so that no label runs past the SVG's edge)."""
    return alt.Legend(title=title, orient="bottom", direction="horizontal")


def _rule_label_rows(rows: list[dict]) -> list[dict]:
    """Rule labels one line down per rule, so that close rules do not print over each other."""
    return [{**row, "offset": 16 + 14 * i} for i, row in enumerate(rows)]


def _rule_labels(field: str, data: str) -> alt.Chart:
    """The label of each vertical rule (dataset `data`, from _rule_label_rows) written beside it near the top
    of the plot, for readers of the PDF, who have no tooltips."""
    return alt.Chart(alt.Data(name=data)).mark_text(align="right", baseline="top", dx=-4, fontSize=10,
                                                    color="#333333").encode(
        x=alt.X(f"{field}:Q"), y=alt.Y("offset:Q", scale=None), text=alt.Text("text:N"))


def _precision_color(precisions: list[str]) -> alt.Color:
    return alt.Color("precision:N", scale=alt.Scale(domain=precisions, range=_colors(precisions)),
                     legend=_legend("Precision"))


def build_throughput_chart(payload: WorkloadPayload, width: int | str = "container") -> dict | None:
    """Throughput against batch size, one line per precision (x on a log₂ scale); None without a sweep."""
    points = _ok_points(payload, "batch")
    if not points:
        return None
    unit = unit_label(payload.unit)
    rows = [{**_point_tooltip(p, unit), "y": p.throughput_per_s} for p in points]
    return _throughput_spec(tuple(p.batch for p in points), tuple(_precisions(points)), unit, width, points=rows)


@templated
def _throughput_spec(batches: tuple[int, ...], precisions: tuple[str, ...], unit: str,
                     width: int | str) -> alt.Chart:
    chart = alt.Chart(alt.Data(name="points")).mark_line(point=True, strokeWidth=2).encode(
        x=_batch_x(list(batches)), y=alt.Y("y:Q", title=f"Throughput ({unit}/s)"),
        color=_precision_color(list(precisions)), tooltip=POINT_TOOLTIP)
    return chart.properties(width=width, height=CHART_HEIGHT, title="Throughput against batch size")


def _boundary_rules(boundaries: list[OomBoundary]) -> list[dict]:
    return [{"precision": b.precision, "batch": b.max_batch,
             "label": f"{b.precision}: max batch {b.max_batch}, out of memory at {b.first_oom_batch}"}
            for b in boundaries if b.status == "ok" and b.max_batch and b.first_oom_batch and not b.capped]


def _boundary_labels(rules: list[dict]) -> list[dict]:
    """One label per distinct boundary: 'max 77: fp16, bf16'."""
    by_batch: dict[int, list[str]] = {}
    for rule in rules:
        by_batch.setdefault(rule["batch"], []).append(rule["precision"])
    return [{"batch": b, "text": f"max {b}: {', '.join(names)}"} for b, names in sorted(by_batch.items())]


def build_memory_chart(payload: WorkloadPayload, gpu_memory_bytes: int | None = None,
                       width: int | str = "container") -> dict | None:
    """Peak allocated memory against batch size, per precision, with a dashed rule at each precision's
    largest batch that fits (the OOM boundary) and a grey one at the GPU's memory. None without figures."""
    points = _memory_points(payload)
    if not points:
        return None
    unit = unit_label(payload.unit)
    rows = [{**_point_tooltip(p, unit), "y": p.memory.peak_allocated_bytes / GIB} for p in points]
    rules = _boundary_rules(payload.default_boundaries)  # the table lists the expandable-segments ones
    capacity_rows = []
    if gpu_memory_bytes:
        capacity_rows = [{"y": gpu_memory_bytes / GIB, "label": f"GPU memory: {format_bytes(gpu_memory_bytes)}"}]
    # The boundaries are named in the subtitle, not beside their rules: close boundaries (fp32 6542, bf16 6543)
    # would print their labels over each other and over the lines.
    subtitle = ("Dashed, in each precision's colour: the largest batch that fits",
                " · ".join(row["text"] for row in _boundary_labels(rules))) if rules \
        else ("No out-of-memory boundary was reached.",)
    return _memory_spec(tuple(p.batch for p in points), tuple(r["batch"] for r in rules),
                        tuple(_precisions(points)), bool(capacity_rows), subtitle, width,
                        points=rows, boundaries=rules, capacity=capacity_rows)


@templated
def _memory_spec(batches: tuple[int, ...], rules: tuple[int, ...], precisions: tuple[str, ...], capacity: bool,
                 subtitle: tuple[str, ...], width: int | str) -> alt.LayerChart:
    """The points' lines, a rule at each boundary in `rules` and, with `capacity`, the GPU's memory."""
    x = _batch_x(list(batches), list(rules))
    color = _precision_color(list(precisions))
    y = alt.Y("y:Q", title="Peak allocated (GiB)")
    layers = [alt.Chart(alt.Data(name="points")).mark_line(point=True, strokeWidth=2).encode(
        x=x, y=y, color=color, tooltip=POINT_TOOLTIP)]
    if rules:
        layers.append(alt.Chart(alt.Data(name="boundaries")).mark_rule(strokeDash=[6, 4], strokeWidth=1.5).encode(
            x=x, color=color, tooltip=[alt.Tooltip("label:N", title="OOM boundary")]))
    if capacity:
        source = alt.Chart(alt.Data(name="capacity"))
        layers.append(source.mark_rule(color="#555555", strokeWidth=1.5).encode(
            y=y, tooltip=[alt.Tooltip("label:N", title="Capacity")]))
        layers.append(source.mark_text(align="left", baseline="bottom", dx=4, dy=-2, fontSize=10,
                                         color="#333333").encode(y=y, x=alt.value(0), text=alt.Text("label:N")))
    return alt.layer(*layers).properties(width=width, height=CHART_HEIGHT, title=alt.TitleParams(
        "Peak memory against batch size", subtitle=list(subtitle)))


def _sequence_rows(points: list[WorkloadPoint]) -> list[dict]:
    rows = []
    for p in points:
        memory = p.memory.peak_allocated_bytes if p.memory else None
        common = {"seq_len": p.seq_len, "tokens_text": f"{format_number(p.tokens_per_s)} tokens/s",
                  "memory_text": format_bytes(memory), "step": format_duration(p.step_s.median)}
        rows.append({**common, "series": "tokens/s", "y": p.tokens_per_s})
        if memory:
            rows.append({**common, "series": "peak allocated", "y": memory / GIB})
    return rows


def build_sequence_chart(payload: WorkloadPayload, width: int | str = "container") -> dict | None:
    """Tokens/s (left axis) and peak allocated memory (right axis) against sequence length (log₂), with a
    dashed rule at the first length that ran out of memory. None when there are no sequence points."""
    points = [p for p in _ok_points(payload, "sequence") if p.seq_len and p.tokens_per_s]
    if not points:
        return None
    rows = _sequence_rows(points)
    ooms = [{"seq_len": p.seq_len, "label": f"out of memory at sequence {p.seq_len}, batch {p.batch}",
             "text": "out of memory"}
            for p in payload.points if p.sweep == "sequence" and p.status == "oom" and p.seq_len]
    return _sequence_spec(tuple(p.seq_len for p in points), tuple(o["seq_len"] for o in ooms), points[0].batch,
                          width, points=rows, ooms=ooms, oom_labels=_rule_label_rows(ooms))


@templated
def _sequence_spec(lengths: tuple[int, ...], ooms: tuple[int, ...], batch: int, width: int | str) -> alt.LayerChart:
    """Tokens/s and memory (dataset "points") at the `lengths`; a rule at each length in `ooms`."""
    x = _log2_x("seq_len", "Sequence length (tokens)", [*lengths, *ooms])
    color = alt.Color("series:N", scale=alt.Scale(domain=["tokens/s", "peak allocated"],
                                                   range=["#1f77b4", "#d62728"]), legend=_legend(None))
    tooltip = [alt.Tooltip("seq_len:Q", title="Sequence length"), alt.Tooltip("tokens_text:N", title="Throughput"),
               alt.Tooltip("memory_text:N", title="Peak allocated"), alt.Tooltip("step:N", title="Step time")]
    base = alt.Chart(alt.Data(name="points")).mark_line(point=True, strokeWidth=2)
    tokens = base.encode(x=x, y=alt.Y("y:Q", title="Tokens/s", axis=alt.Axis(orient="left")),
                         color=color, tooltip=tooltip).transform_filter("datum.series == 'tokens/s'")
    memory = base.encode(x=x, y=alt.Y("y:Q", title="Peak allocated (GiB)", axis=alt.Axis(orient="right")),
                         color=color, tooltip=tooltip).transform_filter("datum.series == 'peak allocated'")
    layers = [tokens, memory]
    if ooms:
        layers.append(alt.Chart(alt.Data(name="ooms")).mark_rule(strokeDash=[6, 4], color="#555555").encode(
            x=x, tooltip=[alt.Tooltip("label:N", title="Capacity")]))
        layers.append(_rule_labels("seq_len", "oom_labels"))
    return alt.layer(*layers).resolve_scale(y="independent").properties(
        width=width, height=CHART_HEIGHT, title=f"Sequence scaling at batch {batch}")
