"""Published many-models-on-one-GPU tables (timm's RTX 3090 training benchmark, planner/specs/published_models.py)
against gpuplan's predictions for that GPU, two ways (issues 39 and 41), with nothing chosen or fitted on these rows:

(a) Measured: each model predicted on the table's GPU from our own collection of it (an H200's, an H100's;
    MEASURED_FOLDERS), through the published check's own step (crossarch.predict_row), banded as the Lambda held-out
    rows are (the GPU's band, centred on its published rows of other models, built without the model's family).
(b) Trace-only: the plan's answer for the GPU from the models' CPU traces (`gpuplan plan TRACE_DIR --json --target
    GPU`), its own band.

Each row is scored twice: absolutely (predicted / published − 1, inside the band or not: it carries the published
host and clocks, which no band models), and as the ratio of its rate to the table's reference model's (ResNet-50) on
the same GPU and host, predicted the same way (the host and clocks cancel), inside the range the two bands give it.

Our point: the fp16 point at the table's batch where we timed one (the published step is fp16 autocast), else the
bf16 point nearest it (the dense sweeps are bf16; the RTX 3090's fp16 and bf16 tensor rates are the same 71 TFLOP/s).
A row is scored in the table whose memory layout our workload's step has (OUR_LAYOUT); the other table's row of it is
shown, unscored.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.results import MachineResults, load_machine
from planner.check.bands import Band, BandTable
from planner.check.crossarch import CrossRow, nearest_point, predict_row
from planner.check.harness_bands import HarnessCoverage, within_ratio_range
from planner.model.split import PLAIN_VARIANTS
from planner.specs import match_gpu
from planner.specs.published import PublishedRow, PublishedTable
from planner.specs.published_models import ModelRow, ModelTable, reference_row

MEASURED = Band(0.0, 0.0, "measured")
# Our workloads' memory layout: the reference ResNet-50 converts to channels-last; the CNN examples are written as a
# user leaves them (NCHW); the transformers have one convolution (the patch embedding), their rows in timm's NHWC and
# NCHW files lie within 0.5 % of each other, so they are scored once, in the NHWC table.
OUR_LAYOUT = {"resnet50": "channels_last", "vit-b16": "channels_last", "vit-tiny": "channels_last",
              "swin-tiny": "channels_last", "resnet18": "nchw", "efficientnet-b0": "nchw", "mobilenet-v3": "nchw",
              "convnext-tiny": "nchw", "resnext101-32x4d": "nchw"}
# Our collections of each model, relative to the results root, per GPU type (the first folder holding it is used)
MEASURED_FOLDERS = {
    "H200 SXM": ("h200", "h200/diagnostics/resnet18-2026-11-28/runs/new-models",
                 "h200/diagnostics/new-models-2026-11-27/collect/runs/new-models",
                 "h200/diagnostics/mobilenet-v3-2026-11-28/runs/new-models",
                 "h200/diagnostics/heldout-2026-11-28/gpu1/runs/new-models",
                 "h200/diagnostics/newex4-2026-11-28/runs/new-models"),
    "H100 SXM": ("h100-80gb", "h100-80gb/diagnostics/new-models-2026-11-27/no-budget/runs/new-models",
                 "h100-80gb/diagnostics/heldout-2026-11-28/runs/new-models"),
}


@dataclass(frozen=True)
class ModelCheck:
    table: str
    workload: str
    source: str               # the GPU measured, or 'trace'
    setting: str              # our point: 'fp16, 512'
    published: float          # the row's rate
    published_batch: int
    predicted: float          # ours on the table's GPU
    half_width: float         # the absolute band's larger half
    inside: bool
    published_ratio: float | None   # published / the reference model's published (None: the reference row)
    predicted_ratio: float | None
    ratio_inside: bool | None
    ratio_half_width: float | None
    bound: str = ""           # the source point's regime (measured), or the plan's

    @property
    def error(self) -> float:
        return self.predicted / self.published - 1

    @property
    def ratio_error(self) -> float | None:
        if self.published_ratio is None or self.predicted_ratio is None:
            return None
        return self.predicted_ratio / self.published_ratio - 1


def scored_rows(tables: list[ModelTable]) -> list[tuple[ModelTable, ModelRow]]:
    """Each table's rows whose model runs in the table's layout in our workload (OUR_LAYOUT)."""
    return [(t, r) for t in tables for r in t.rows if OUR_LAYOUT.get(r.workload) == t.layout]


def choose_point(candidates: set[tuple[str, int]], batch: int) -> tuple[str, int] | None:
    """(precision, batch) of our point for a published fp16-autocast row at `batch`: fp16 at that batch where we have
    it, else the bf16 batch nearest (the larger of two as near)."""
    if ("fp16", batch) in candidates:
        return "fp16", batch
    bf16 = [b for p, b in candidates if p == "bf16"]
    return ("bf16", min(bf16, key=lambda b: (abs(b - batch), -b))) if bf16 else None


def _as_published(table: ModelTable, row: ModelRow) -> tuple[PublishedTable, PublishedRow]:
    """The row in the per-GPU tables' shape, which crossarch.predict_row takes."""
    published = PublishedRow(table.gpu, table.gpu_label, row.throughput_per_s, row.batch, row.cite)
    return PublishedTable(table.id, table.source, table.url, table.retrieved, table.stack, row.workload, table.task,
                          table.precision, table.unit, None, table.notes, (published,)), published


@dataclass(frozen=True)
class _Measured:
    rate: float
    band: Band
    row: CrossRow


def _predict_measured(table: ModelTable, row: ModelRow, machine: MachineResults, payload: WorkloadPayload,
                      bands: BandTable) -> _Measured | None:
    source, gpu = match_gpu(machine.gpu_name or ""), match_gpu(table.gpu)
    if source is None or gpu is None or machine.ceilings is None:
        return None
    candidates = {(p.precision, p.batch) for p in payload.points if p.precision in ("fp16", "bf16") and p.status == "ok"
                  and p.step_s and p.variant in PLAIN_VARIANTS and p.seq_len is None
                  and p.sweep not in ("probe", "repeat")}
    chosen = choose_point(candidates, row.batch)
    if chosen is None:
        return None
    published_table, published = _as_published(table, row)
    predicted = predict_row(published_table, gpu, published, 1.0, machine, source, payload, (chosen[0],))
    if predicted is None or not predicted.predicted_ratio:
        return None
    point = nearest_point(payload, predicted.precision, row.batch)
    assert point is not None and point.step_s is not None  # predict_row started from it
    same_arch = (gpu.compute_capability or "")[:1] == (source.compute_capability or "")[:1]
    band = bands.without_family(row.workload).band(same_arch, predicted.host, False, gpu.name)
    return _Measured(point.batch / point.step_s.median * predicted.predicted_ratio, band, predicted)


def _loaded(root: Path, folders: tuple[str, ...]) -> list[MachineResults]:
    return [load_machine(root / f) for f in folders if (root / f).is_dir()]


def _predict_from(machines: list[MachineResults], table: ModelTable, row: ModelRow,
                  bands: BandTable) -> _Measured | None:
    """The row predicted from the first of `machines` that collected its model."""
    for machine in machines:
        payload = next((w for w in machine.workloads if w.workload == row.workload), None)
        if payload is not None:
            return _predict_measured(table, row, machine, payload, bands)
    return None


def measured_checks(bands: BandTable, tables: list[ModelTable], root: Path,
                    folders: dict[str, tuple[str, ...]] | None = None) -> list[ModelCheck]:
    """(a): every scored row predicted from each GPU type's collection of its model (MEASURED_FOLDERS under `root`,
    the results root), its ratio to the reference model's row predicted from the same GPU type."""
    out = []
    for source, names in (MEASURED_FOLDERS if folders is None else folders).items():
        machines = _loaded(root, names)
        for table, row in scored_rows(tables):
            ours = _predict_from(machines, table, row, bands)
            if ours is None:
                continue
            ref_row = reference_row(table, tables)
            ref = ours if ref_row.workload == row.workload else _predict_from(machines, table, ref_row, bands)
            inside, width = within_ratio_range(row.throughput_per_s / ours.rate, ours.band, MEASURED)
            ratio = _ratio(row, ref_row, ours.rate, ref.rate if ref else None, ours.band, ref.band if ref else None)
            out.append(ModelCheck(table.id, row.workload, source, ours.row.setting, row.throughput_per_s, row.batch,
                                  ours.rate, width, inside, *ratio, bound=ours.row.bound))
    return out


def _ratio(row: ModelRow, ref_row: ModelRow, rate: float, ref_rate: float | None, band: Band,
           ref_band: Band | None) -> tuple[float | None, float | None, bool | None, float | None]:
    """(published ratio, predicted ratio, inside, half-width) of a row to its reference; Nones for the reference
    model's own row, or where the reference was not predicted."""
    if row is ref_row or row.workload == ref_row.workload or ref_rate is None or ref_band is None:
        return None, None, None, None
    published, predicted = row.throughput_per_s / ref_row.throughput_per_s, rate / ref_rate
    inside, width = within_ratio_range(published / predicted, band, ref_band)
    return published, predicted, inside, width


def trace_checks(plan: dict, tables: list[ModelTable]) -> list[ModelCheck]:
    """(b): every scored row against a trace-only plan's answer for the table's GPU (`gpuplan plan TRACE_DIR --json
    --target GPU`), its band the plan's; ratios to the reference model's answer in the same plan."""

    def answer(table: ModelTable, row: ModelRow) -> dict | None:
        target = next((t for t in plan["targets"] if t["gpu"] == table.gpu), None)
        found = {(p["precision"], p["batch"]): p for p in (target or {"predictions": []})["predictions"]
                 if p["workload"] == row.workload and p["variant"] == "default" and p.get("seq_len") is None
                 and p.get("throughput_per_s")}
        chosen = choose_point(set(found), row.batch)
        return found[chosen] if chosen else None

    def band(p: dict) -> Band:
        rate = p["throughput_per_s"]
        return Band(1 - p["throughput_low"] / rate, p["throughput_high"] / rate - 1, "plan")

    out = []
    for table, row in scored_rows(tables):
        p = answer(table, row)
        if p is None:
            continue
        ref_row = reference_row(table, tables)
        ref = answer(table, ref_row)
        rate = p["throughput_per_s"]
        inside, width = within_ratio_range(row.throughput_per_s / rate, band(p), MEASURED)
        ref_rate, ref_band = (ref["throughput_per_s"], band(ref)) if ref else (None, None)
        ratio = _ratio(row, ref_row, rate, ref_rate, band(p), ref_band)
        out.append(ModelCheck(table.id, row.workload, "trace", f"{p['precision']}, {p['batch']}", row.throughput_per_s,
                              row.batch, rate, width, inside, *ratio, bound=p.get("bound") or ""))
    return out


def coverage(checks: list[ModelCheck], name: str) -> tuple[HarnessCoverage, HarnessCoverage]:
    """The absolute rows' coverage and the ratios' (the reference rows have none)."""
    ratios = [c for c in checks if c.ratio_inside is not None]
    return (HarnessCoverage.of(f"{name}, absolute", [c.inside for c in checks], [c.half_width for c in checks]),
            HarnessCoverage.of(f"{name}, ratio to ResNet-50", [bool(c.ratio_inside) for c in ratios],
                               [c.ratio_half_width or 0.0 for c in ratios]))


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1%}" if values else "n/a"


def render(checks: list[ModelCheck], title: str) -> str:
    """One scoring as markdown: its summary line, then each row."""
    if not checks:
        return f"{title}: no row predicted.\n"
    absolute, ratios = coverage(checks, title)
    errors = [abs(c.error) for c in checks]
    ratio_errors = [abs(c.ratio_error) for c in checks if c.ratio_error is not None]
    lines = [f"{title}: absolute median |error| {_median(errors)}, {absolute.inside} of {absolute.n} inside the band "
             f"(median half-width ±{absolute.median_half_width:.1%}); ratio to ResNet-50 median |error| "
             f"{_median(ratio_errors)}, largest {max(ratio_errors, default=0):.1%}, {ratios.inside} of {ratios.n} "
             f"inside (median half-width ±{ratios.median_half_width:.1%})", "",
             "| table | model | from | our point | published (batch) | predicted | error | inside | ratio published / "
             "predicted | ratio error | inside |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in checks:
        ratio = ("reference", "", "") if c.ratio_error is None else (
            f"{c.published_ratio:.3f} / {c.predicted_ratio:.3f}", f"{c.ratio_error:+.1%}",
            f"{'yes' if c.ratio_inside else 'no'} (±{c.ratio_half_width:.0%})")
        lines.append(f"| {c.table.removeprefix('timm-train-amp-').removesuffix('-rtx3090-pt112')} | {c.workload} | "
                     f"{c.source} | {c.setting} | {c.published:,.0f} ({c.published_batch}) | {c.predicted:,.0f} | "
                     f"{c.error:+.1%} | {'yes' if c.inside else 'no'} (±{c.half_width:.0%}) | " + " | ".join(ratio)
                     + " |")
    return "\n".join(lines) + "\n"
