"""Charts as pure functions: measured data in, a Vega-Lite spec (a JSON-ready dict) out.

Specs are built with Altair and hold only numbers and labels made here (dtype names,
formatted figures), never free text from the documents, so embedding them is safe. The HTML
report renders them interactively; the PDF gets SVG from `vl_convert.vegalite_to_svg`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import altair as alt

from collectors.payloads import BandwidthCeiling, CeilingsPayload, MatmulCeiling
from planner.formatting import format_bandwidth, format_flops, format_intensity

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
    ridges = [r.ridge_flop_per_byte for r in roofs if r.ridge_flop_per_byte] or [10.0]
    low = 10 ** math.floor(math.log10(min(ridges) / 8))
    high = 10 ** math.ceil(math.log10(max(ridges) * 8))
    return low, high


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
              scale=alt.Scale(type="log", domain=[x_low, x_high]))
    y = alt.Y("y:Q", title="Throughput (TFLOP/s)", scale=alt.Scale(type="log"))
    dtypes = [r.dtype for r in roofs]
    palette = alt.Scale(domain=[*dtypes, "memory (copy)"], range=[*_colors(dtypes), "#555555"])
    color = alt.Color("series:N", scale=palette, legend=alt.Legend(title="Roof", labelLimit=240))
    lines = _roof_rows(roofs, x_high, x_low) + (_slope_rows(copy, roofs, x_low) if copy else [])
    layers = [
        alt.Chart(alt.Data(values=lines)).mark_line(strokeWidth=2.5, interpolate="linear").encode(
            x=x, y=y, color=color, detail="series:N", tooltip=[alt.Tooltip("label:N", title="Roof")]),
    ]
    ridges = _ridge_rows(roofs)
    if ridges:
        layers.append(alt.Chart(alt.Data(values=ridges)).mark_point(filled=True, size=70).encode(
            x=x, y=y, color=color,
            tooltip=[alt.Tooltip("series:N", title="dtype"), alt.Tooltip("peak:N", title="Peak"),
                     alt.Tooltip("ridge:N", title="Ridge point")]))
    chart = alt.layer(*layers).properties(width=width, height=CHART_HEIGHT, title="Roofline (measured)")
    return chart.configure_view(stroke=None).to_dict()


def _colors(dtypes: list[str]) -> list[str]:
    return [DTYPE_COLORS.get(d, "#7f7f7f") for d in dtypes]


def with_width(spec: dict, width: int) -> dict:
    """A copy of `spec` at a fixed pixel width: SVG rendering has no container to fill."""
    return {**spec, "width": width}
