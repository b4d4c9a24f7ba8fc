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
(`AMP_PRECISION`), measured where our bf16 answer is; "TF32" is our tf32 point; "FP32" on a GPU without TF32 is our
tf32 step at that GPU's fp32 rate (performance.STAND_IN), as the published fp32 run's convolutions and matmuls ran.
Our point: the nearest measured batch of a plain variant (crossarch.nearest_point). Error = predicted ratio ÷ published
ratio − 1 (+: the numerator predicted too fast against the denominator).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gpuplan_schema.results import MachineResults
from planner.check.crossarch import MAX_TARGET, MEDIAN_TARGET, nearest_point
from planner.model import performance
from planner.model.performance import HostExposure, Prediction, measured_rates, run_precision, target_rates
from planner.model.split import machine_rooflines
from planner.specs import GpuSpec, match_gpu
from planner.specs.published_pairs import PairRow, PairTable, load_pairs

AMP_PRECISION = "fp16"
OURS = {"amp": AMP_PRECISION, "tf32": "tf32", "fp32": "tf32"}
KINDS = ("amp", "tf32/fp32", "precision")


@dataclass(frozen=True)
class Side:
    """One published row and our prediction of it."""

    row: PairRow
    precision: str        # the precision the GPU runs our point in
    batch: int            # our measured batch the prediction started from
    throughput_per_s: float
    bound: str
    host: HostExposure = HostExposure()   # how the predicted step depends on its host (its band's host part)

    @property
    def setting(self) -> str:
        return f"{self.row.gpu} {self.row.precision} ({self.precision}, {self.batch})"


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

    def errors(self, kind: str | None = None, twin: str = "same") -> list[float]:
        return [abs(r.error) for r in self.ratios if (kind is None or r.kind == kind) and r.twin == twin]

    def summary(self, kind: str | None = None, twin: str = "same") -> tuple[int, float, float]:
        """(rows, median |error|, largest |error|) of one kind of ratio (all kinds: None)."""
        e = self.errors(kind, twin)
        return len(e), statistics.median(e) if e else 0.0, max(e, default=0.0)

    def meets(self, kind: str) -> bool:
        n, median, largest = self.summary(kind)
        return n > 0 and median <= MEDIAN_TARGET and largest <= MAX_TARGET


def predict_row(source: MachineResults, source_spec: GpuSpec, table: PairTable, row: PairRow) -> Side | None:
    """Our prediction of one published row from `source`: its precision's point nearest the published batch."""
    gpu = match_gpu(row.gpu)
    payload = next((w for w in source.workloads if w.workload == table.model), None)
    if gpu is None or payload is None or source.ceilings is None:
        return None
    ours = OURS[row.precision]
    point = nearest_point(payload, ours, row.batch)
    if point is None or run_precision(ours, gpu.flops_per_s) is None:
        return None
    rates = measured_rates(source.ceilings)
    same = (gpu.compute_capability or "")[:1] == (source_spec.compute_capability or "")[:1]
    p: Prediction | None = performance.predict_point(point, payload, rates, target_rates(rates, source_spec, gpu),
                                                      same, machine_rooflines(source), gpu)
    if p is None:
        return None
    return Side(row, p.precision, point.batch, p.throughput_per_s, p.bound, p.host_there)


def _ratios(table: PairTable, sides: dict[tuple[str, str], Side]) -> list[PairRatio]:
    """The table's four kinds of ratio, for each pair of its GPUs (the first listed is the newer) and each GPU."""
    out = []
    gpus = table.gpus

    def add(kind: str, top: tuple[str, str], bottom: tuple[str, str]) -> None:
        if top in sides and bottom in sides:
            same = table.twin == "same" and all(sides[k].row.layout == table.twin_layout for k in (top, bottom))
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
    for table in load_pairs() if tables is None else tables:
        if table.twin == "none":
            listed.append(f"{table.id}: not gpuplan's {table.model} ({table.notes.split('. ')[-1]})")
            continue
        sides = {(r.gpu, r.precision): s for r in table.rows
                 if (s := predict_row(source, source_spec, table, r)) is not None}
        if not sides:
            listed.append(f"{table.id}: no measured {table.model} point to start from")
            continue
        ratios += _ratios(table, sides)
    return PairCheck(source.machine, ratios, listed)
