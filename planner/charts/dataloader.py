"""Input pipeline charts as pure functions: a DataLoader payload in, a Vega-Lite spec out.

- a heatmap of samples/s over workers × prefetch, one per pin_memory setting, on one shared colour scale;
- samples/s against the worker count (best prefetch per count, one line per pin setting), with a rule at
  each image workload's measured GPU appetite.
Labels are made here from numbers; no free text from the documents reaches a spec.
"""

from __future__ import annotations

import altair as alt

from gpuplan_schema.payloads import DataloaderPayload, LoaderPoint
from planner.charts.base import CHART_HEIGHT, _legend
from planner.charts.vega import templated
from planner.units import format_duration, format_number

NO_PREFETCH = "none"     # the x label of 0 workers: the main process loads, nothing is prefetched
PIN_LABELS = {True: "pinned", False: "not pinned"}
PIN_COLORS = {"pinned": "#1f77b4", "not pinned": "#ff7f0e"}
CELL_HEIGHT = 26


def ok_points(payload: DataloaderPayload) -> list[LoaderPoint]:
    return [p for p in payload.points if p.status == "ok" and p.samples_per_s]


def prefetch_label(p: LoaderPoint) -> str:
    return NO_PREFETCH if p.prefetch is None else str(p.prefetch)


def _cell(p: LoaderPoint) -> dict:
    rate = p.samples_per_s.median
    return {"workers": str(p.workers), "prefetch": prefetch_label(p), "rate": rate, "text": format_number(rate),
            "ttfb": format_duration(p.time_to_first_batch_s),
            "cpu": "—" if p.cpu_cores_busy is None else format_number(p.cpu_cores_busy)}


def build_loader_heatmap(payload: DataloaderPayload, pinned: bool, width: int | str = "container") -> dict | None:
    """Samples/s for every measured workers × prefetch cell at one pin setting; None when it has no point.
    The colour scale spans every point of the payload, so the pinned and unpinned maps compare by colour."""
    everything = ok_points(payload)
    points = [p for p in everything if p.pin_memory == pinned]
    if not points:
        return None
    top = max(p.samples_per_s.median for p in everything)
    workers = tuple(str(w) for w in sorted({p.workers for p in points}, reverse=True))
    prefetch = tuple(sorted({prefetch_label(p) for p in points}, key=lambda s: -1 if s == NO_PREFETCH else int(s)))
    spec = _heatmap_spec(workers, prefetch, pinned, payload.batch, width, cells=[_cell(p) for p in points])
    # the scale's top and the label colour's threshold are the host's figures: set in the copy, not in the key
    rects, text = spec["layer"]
    rects["encoding"]["color"]["scale"]["domain"] = [0, top]
    text["encoding"]["color"]["condition"]["test"] = f"datum.rate > {top * 0.6}"
    return spec


@templated
def _heatmap_spec(workers: tuple[str, ...], prefetch: tuple[str, ...], pinned: bool, batch: int,
                  width: int | str) -> alt.LayerChart:
    """The map of the cells (dataset "cells"), its colour scale and label threshold at a placeholder top."""
    base = alt.Chart(alt.Data(name="cells")).encode(
        x=alt.X("prefetch:O", sort=list(prefetch), title="prefetch_factor", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("workers:O", sort=list(workers), title="num_workers"))
    tooltip = [alt.Tooltip("workers:N", title="Workers"), alt.Tooltip("prefetch:N", title="Prefetch"),
               alt.Tooltip("text:N", title="Samples/s"), alt.Tooltip("ttfb:N", title="First batch"),
               alt.Tooltip("cpu:N", title="CPU cores busy")]
    rects = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color("rate:Q", title="samples/s", scale=alt.Scale(scheme="blues", domain=[0, 1]),
                        legend=_legend("samples/s")), tooltip=tooltip)
    text = base.mark_text(fontSize=11).encode(
        text="text:N", color=alt.condition("datum.rate > 0.6", alt.value("white"), alt.value("black")))
    title = f"Samples/s delivered, {PIN_LABELS[pinned]} (batch {batch})"
    return alt.layer(rects, text).properties(width=width, height=CELL_HEIGHT * len(workers), title=title)


def _best_rows(payload: DataloaderPayload) -> list[dict]:
    best: dict[tuple[bool, int], LoaderPoint] = {}
    for p in ok_points(payload):
        key = (p.pin_memory, p.workers)
        if key not in best or p.samples_per_s.median > best[key].samples_per_s.median:
            best[key] = p
    return [{"workers": w, "rate": p.samples_per_s.median, "series": PIN_LABELS[pin],
             "text": f"{format_number(p.samples_per_s.median)} samples/s", "prefetch": prefetch_label(p)}
            for (pin, w), p in sorted(best.items())]


def build_worker_scaling_chart(payload: DataloaderPayload, appetites: list[tuple[str, float]],
                               width: int | str = "container") -> dict | None:
    """Best samples/s at each worker count, per pin setting, with a dashed rule at each (label, samples/s)
    appetite: where a line crosses a rule, that many workers keep that GPU fed. None without points."""
    rows = _best_rows(payload)
    if not rows:
        return None
    rules = [{"rate": rate, "text": f"{label}: {format_number(rate)}/s"} for label, rate in appetites]
    return _worker_scaling_spec(tuple(sorted({r["workers"] for r in rows})),
                                tuple(sorted({r["series"] for r in rows}, reverse=True)), bool(rules), payload.batch,
                                width, best=rows, appetites=rules)


@templated
def _worker_scaling_spec(counts: tuple[int, ...], series: tuple[str, ...], rules: bool, batch: int,
                         width: int | str) -> alt.LayerChart:
    """The best rate per worker count (dataset "best") and, with `rules`, the appetites' rules ("appetites")."""
    x = alt.X("workers:Q", title="num_workers", scale=alt.Scale(domain=[0, max(counts)]),
              axis=alt.Axis(values=list(counts), format="d"))
    y = alt.Y("rate:Q", title="samples/s delivered")
    color = alt.Color("series:N", scale=alt.Scale(domain=list(series), range=[PIN_COLORS[s] for s in series]),
                      legend=_legend(None))
    tooltip = [alt.Tooltip("workers:Q", title="Workers"), alt.Tooltip("series:N", title="Memory"),
               alt.Tooltip("text:N", title="Best"), alt.Tooltip("prefetch:N", title="At prefetch")]
    layers = [alt.Chart(alt.Data(name="best")).mark_line(point=True, strokeWidth=2).encode(
        x=x, y=y, color=color, tooltip=tooltip)]
    if rules:
        chart = alt.Chart(alt.Data(name="appetites"))
        layers.append(chart.mark_rule(strokeDash=[6, 4], color="#555555").encode(
            y=y, tooltip=[alt.Tooltip("text:N", title="GPU appetite")]))
        layers.append(chart.mark_text(align="left", baseline="bottom", dx=4, dy=-2, fontSize=10,
                                      color="#333333").encode(y=y, x=alt.value(0), text="text:N"))
    return alt.layer(*layers).properties(width=width, height=CHART_HEIGHT,
                                         title=f"Samples/s against workers (best prefetch; batch {batch})")
