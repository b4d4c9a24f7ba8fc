"""Predictions checked against published tables in which no GPU we measure appears (planner/specs/published_pairs.json:
NVIDIA DeepLearningExamples' DGX A100 and DGX-1 V100 1-GPU training rows), by ratios between the table's own rows.

Each GPU of a table is predicted from our measured machine, as the cross-architecture check does
(planner/check/crossarch.py); a ratio of two predictions is then held against the same ratio of the published
rows, so that what the two data pipelines add to every row of a table cancels. Four ratios per table:

- `amp`: the newer GPU's mixed-precision rate over the older's (A100 / V100);
- `tf32/fp32`: the newer GPU's TF32 rate over the older's FP32 (an A100 in TF32 against a V100 in plain fp32, the
  speed-up DLE's tables print);
- `precision on <GPU>`: one GPU's TF32 or FP32 rate over its own mixed-precision rate.

DLE's "mixed precision" is fp16 autocast (or apex) with a loss scale on both GPUs, so our point is the fp16 one
(`AMP_PRECISION`), measured where our bf16 answer is (a machine without one: its bf16 point, `AMP_FALLBACK`); "TF32"
is our tf32 point; "FP32" on a GPU without TF32 is our tf32 step at that GPU's fp32 rate (performance.STAND_IN), as
the published fp32 run's convolutions and matmuls ran.
Our point: the nearest measured batch of a plain variant (crossarch.nearest_point), in our workload's layout; where
the machine has points timed in DLE's own configuration (planner/check/dle_points.py: the row's layout and batch,
with profiles of that precision and layout), the row's own. Error = predicted ratio ÷ published ratio − 1 (+: the
numerator predicted too fast against the denominator). A ratio is `same` where the table's model is our workload and
both of its points ran in their rows' layouts.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.payloads import RooflinePayload, WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.check.crossarch import MAX_TARGET, MEDIAN_TARGET, nearest_point
from planner.check.dle_points import DlePoints, load_dle_points
from planner.model import performance
from planner.model.performance import HostExposure, Prediction, measured_rates, run_precision, target_rates
from planner.model.split import machine_rooflines
from planner.specs import GpuSpec, match_gpu
from planner.specs.published_pairs import PairRow, PairTable, load_pairs

AMP_PRECISION = "fp16"
# A machine that timed no fp16 point (a new model's partial collection: its sweep is bf16 only) starts DLE's mixed
# precision from its bf16 point on both GPUs: still one measured step for both (the V100 runs it as fp16, STAND_IN).
AMP_FALLBACK = "bf16"
OURS = {"amp": AMP_PRECISION, "tf32": "tf32", "fp32": "tf32"}
KINDS = ("amp", "tf32/fp32", "precision")
LAYOUT_WORDS = {"channels_last": "NHWC", "nchw": "NCHW"}


@dataclass(frozen=True)
class Side:
    """One published row and our prediction of it."""

    row: PairRow
    precision: str        # the precision the GPU runs our point in
    batch: int            # our measured batch the prediction started from
    throughput_per_s: float
    bound: str
    host: HostExposure = HostExposure()   # how the predicted step depends on its host (its band's host part)
    layout: str = "n/a"   # the layout our point ran in (the row's is row.layout)
    dle: bool = False     # our point is one timed in DLE's configuration (planner/check/dle_points.py)

    @property
    def setting(self) -> str:
        return f"{self.row.gpu} {self.row.precision} ({self.precision}, {self.batch})"

    @property
    def ours(self) -> str:
        """Our point in words: precision, batch, and its layout where it has one (* : timed in DLE's configuration)."""
        layout = "" if self.layout == "n/a" else f" {LAYOUT_WORDS.get(self.layout, self.layout)}"
        return f"{self.precision}{layout}, {self.batch}" + ("*" if self.dle else "")


@dataclass(frozen=True)
class PairRatio:
    table: str
    model: str
    twin: str             # same: the published model and layout are our workload's; proxy: another configuration of
                          # it (PairTable.twin) or a row in another tensor layout than ours (PairRow.layout)
    kind: str             # amp, tf32/fp32 or precision
    top: Side
    bottom: Side

    @property
    def published(self) -> float:
        return self.top.row.throughput_per_s / self.bottom.row.throughput_per_s

    @property
    def predicted(self) -> float:
        return self.top.throughput_per_s / self.bottom.throughput_per_s

    @property
    def error(self) -> float:
        return self.predicted / self.published - 1

    @property
    def label(self) -> str:
        if self.kind == "precision":
            return f"{self.top.row.gpu}: {self.top.row.precision} / {self.bottom.row.precision}"
        return f"{self.top.row.gpu} {self.top.row.precision} / {self.bottom.row.gpu} {self.bottom.row.precision}"


@dataclass(frozen=True)
class PairCheck:
    source: str
    ratios: list[PairRatio]
    listed: list[str]     # tables not scored, with why
    dle_folder: Path | None = None  # the folder of points timed in DLE's configuration, where they were used
    dle_unused: str | None = None   # why such a folder was not used

    def errors(self, kind: str | None = None, twin: str = "same") -> list[float]:
        return [abs(r.error) for r in self.ratios if (kind is None or r.kind == kind) and r.twin == twin]

    def summary(self, kind: str | None = None, twin: str = "same") -> tuple[int, float, float]:
        """(rows, median |error|, largest |error|) of one kind of ratio (all kinds: None)."""
        e = self.errors(kind, twin)
        return len(e), statistics.median(e) if e else 0.0, max(e, default=0.0)

    def meets(self, kind: str) -> bool:
        n, median, largest = self.summary(kind)
        return n > 0 and median <= MEDIAN_TARGET and largest <= MAX_TARGET


Chosen = tuple[WorkloadPoint, WorkloadPayload, list[RooflinePayload], str, bool]


def our_point(source: MachineResults, table: PairTable, row: PairRow, dle: DlePoints | None) -> Chosen | None:
    """(point, its document, the profiles that split it, its layout, whether it was timed in DLE's configuration):
    the row's own configuration where `dle` has it, else our point nearest the published batch in our layout."""
    ours = OURS[row.precision]
    own = dle.point(table.model, ours, row.batch, row.layout) if dle else None
    if own is not None:
        point, payload, profiles = own
        # our layout's profiles stay where the row's is ours (BERT, GNMT: the machine's profile at another batch),
        # listed first: at a batch both profiled, the one timed with the point splits it (split.roofline_splits)
        same = [r for r in machine_rooflines(source) if r.workload == table.model] if row.layout == table.twin_layout \
            else []
        return point, payload, same + profiles, row.layout, True
    payload = next((w for w in source.workloads if w.workload == table.model), None)
    point = nearest_point(payload, ours, row.batch) if payload else None
    if payload is not None and point is None and row.precision == "amp":
        point = nearest_point(payload, AMP_FALLBACK, row.batch)
    if payload is None or point is None:
        return None
    return point, payload, machine_rooflines(source), table.twin_layout, False


def predict_row(source: MachineResults, source_spec: GpuSpec, table: PairTable, row: PairRow,
                dle: DlePoints | None = None) -> Side | None:
    """Our prediction of one published row from `source` (our_point: DLE's configuration where it was timed)."""
    gpu = match_gpu(row.gpu)
    chosen = our_point(source, table, row, dle)
    if gpu is None or chosen is None or source.ceilings is None:
        return None
    point, payload, profiles, layout, own = chosen
    if run_precision(point.precision, gpu.flops_per_s) is None:
        return None
    rates = measured_rates(source.ceilings)
    same = (gpu.compute_capability or "")[:1] == (source_spec.compute_capability or "")[:1]
    p: Prediction | None = performance.predict_point(point, payload, rates, target_rates(rates, source_spec, gpu),
                                                      same, profiles, gpu)
    if p is None:
        return None
    return Side(row, p.precision, point.batch, p.throughput_per_s, p.bound, p.host_there, layout, own)


def _ratios(table: PairTable, sides: dict[tuple[str, str], Side]) -> list[PairRatio]:
    """The table's four kinds of ratio, for each pair of its GPUs (the first listed is the newer) and each GPU."""
    out = []
    gpus = table.gpus

    def add(kind: str, top: tuple[str, str], bottom: tuple[str, str]) -> None:
        if top in sides and bottom in sides:
            same = table.twin == "same" and all(sides[k].row.layout == sides[k].layout for k in (top, bottom))
            out.append(PairRatio(table.id, table.model, "same" if same else "proxy", kind, sides[top], sides[bottom]))
    for i, new in enumerate(gpus):
        for old in gpus[i + 1:]:
            add("amp", (new, "amp"), (old, "amp"))
            top = next((p for p in ("tf32", "fp32") if (new, p) in sides), None)
            bottom = next((p for p in ("fp32", "tf32") if (old, p) in sides), None)
            if top and bottom:
                add("tf32/fp32", (new, top), (old, bottom))
    for gpu in gpus:
        for p in ("tf32", "fp32"):
            add("precision", (gpu, p), (gpu, "amp"))
    return out


def build_pair_check(source: MachineResults, tables: list[PairTable] | None = None) -> PairCheck | None:
    """Every scored table's ratios predicted from `source`; None where `source` has no catalog GPU or ceilings."""
    source_spec = match_gpu(source.gpu_name or "")
    if source_spec is None or source.ceilings is None:
        return None
    ratios, listed = [], []
    dle, why_not = load_dle_points(source)
    for table in load_pairs() if tables is None else tables:
        if table.twin == "none":
            listed.append(f"{table.id}: not gpuplan's {table.model} ({table.notes.split('. ')[-1]})")
            continue
        # a proxy table (pretraining against our SQuAD step) stays on our own points, whatever batch DLE's rows share
        own = dle if table.twin == "same" else None
        sides = {(r.gpu, r.precision): s for r in table.rows
                 if (s := predict_row(source, source_spec, table, r, own)) is not None}
        if not sides:
            listed.append(f"{table.id}: no measured {table.model} point to start from")
            continue
        ratios += _ratios(table, sides)
    return PairCheck(source.machine, ratios, listed, dle.folder if dle else None, why_not)
