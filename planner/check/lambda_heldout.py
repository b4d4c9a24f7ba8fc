"""Held-out model families on Lambda's tables, across architectures (issues 39 and 41): a model the planner never
learned from, measured on one of our GPUs, predicted on every GPU of its Lambda table and held against it as ratios.

Lambda's v1 tables (planner/specs/published_throughput.json) time each family on twelve GPUs with one stack; the only
GPU we measure among them is the H100 SXM, and a held-out family may be collected on an H200 alone. So each published
GPU of a table, the H100 SXM included, is predicted from the measured machine (crossarch.predict_row: our point
nearest the row's batch, in our precision for the table's), and predicted(GPU) / predicted(H100 SXM) is held against
published(GPU) / published(H100 SXM), as the DLE check holds A100 / V100; where the machine measured is the H100 SXM,
its own point is the denominator. Each ratio is judged against the range its two bands give it
(harness_bands.within_ratio_range), both built without the family: the GPU's band (another architecture: centred on
its published rows of other models), the H100's (the same architecture as an H200; none where it was measured).
Reported as the DLE held-out block is: coverage and the median half-width.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.results import MachineResults
from planner.check.bands import Band, BandTable
from planner.check.crossarch import PRECISIONS_OF, CrossRow, nearest_point, predict_row
from planner.check.harness_bands import HarnessCoverage, within_ratio_range
from planner.model.split import COMPILED
from planner.specs import GpuSpec, match_gpu
from planner.specs.published import PublishedRow, PublishedTable, load_published

REFERENCE = "H100 SXM"   # the table's GPU every ratio is taken to (a row of every Lambda table)
# the models no reference workload is, each written (and its trace-only predictions frozen) before a GPU ran it: three
# families of their own (examples/ncf.py, examples/waveglow.py, examples/tacotron2.py) and one size of a measured family
# (examples/transformer_xl_large.py: its base is a reference workload, whose published rows stay in the bands)
HELD_OUT_FAMILIES = ("ncf", "waveglow", "tacotron2", "transformer-xl-large")
MEASURED = Band(0.0, 0.0, "measured")


@dataclass(frozen=True)
class LambdaRatio:
    table: str
    family: str
    gpu: str
    setting: str            # our point the GPU was predicted from: 'tf32, 32'
    published_rate: float   # the row's figure, in the table's unit
    predicted_rate: float   # ours on that GPU, in our workload's unit (samples, segments …) a second
    published: float        # published(GPU) / published(H100 SXM)
    predicted: float        # predicted(GPU) / predicted (or measured) H100 SXM
    inside: bool
    half_width: float

    @property
    def error(self) -> float:
        return self.predicted / self.published - 1


def _rate(row: CrossRow, payload: WorkloadPayload, published: PublishedRow, compiled: bool) -> float:
    """The predicted rate on the row's GPU: the measured point's rate × the predicted speed-up over it."""
    point = nearest_point(payload, row.precision, published.batch, compiled)
    assert point is not None and point.step_s is not None  # predict_row started from this point
    return point.batch / point.step_s.median * row.predicted_ratio


def _same_architecture(a: GpuSpec, b: GpuSpec) -> bool:
    return (a.compute_capability or "")[:1] == (b.compute_capability or "")[:1]


def held_out_lambda_ratios(bands: BandTable, machine: MachineResults,
                           tables: list[PublishedTable] | None = None) -> list[LambdaRatio]:
    """Every same-stack row of every table whose model `machine` measured, as a ratio to the table's H100 SXM row,
    against the range its two bands (without the family) give it. Empty where the machine has no catalog GPU or
    ceilings, or no table's model."""
    source = match_gpu(machine.gpu_name or "")
    reference = match_gpu(REFERENCE)
    if source is None or reference is None or machine.ceilings is None:
        return []
    out = []
    for table in load_published() if tables is None else tables:
        payload = next((w for w in machine.workloads if w.workload == table.model), None)
        ref = table.row(REFERENCE)
        if payload is None or ref is None or not ref.same_stack or table.precision not in PRECISIONS_OF:
            continue
        held = bands.without_family(table.model)
        if source.name == reference.name:   # the H100 measured: its own point, no band
            point = nearest_point(payload, PRECISIONS_OF[table.precision][0], ref.batch, table.compiled)
            if point is None or point.step_s is None:
                continue
            ref_rate, ref_band = point.batch / point.step_s.median, MEASURED
        else:
            d = predict_row(table, reference, ref, 1.0, machine, source, payload)
            if d is None:
                continue
            ref_rate = _rate(d, payload, ref, table.compiled)
            ref_band = held.band(_same_architecture(reference, source), d.host, d.variant == COMPILED, reference.name)
        for row in table.rows:
            gpu = match_gpu(row.gpu) if row.gpu else None
            if gpu is None or row is ref or not row.same_stack or gpu.name == source.name:
                continue
            n = predict_row(table, gpu, row, 1.0, machine, source, payload)
            if n is None:
                continue
            rate = _rate(n, payload, row, table.compiled)
            band = held.band(_same_architecture(gpu, source), n.host, n.variant == COMPILED, gpu.name)
            published = row.throughput_per_s / ref.throughput_per_s
            inside, width = within_ratio_range(published / (rate / ref_rate), band, ref_band)
            out.append(LambdaRatio(table.id, table.model, gpu.name, n.setting, row.throughput_per_s, rate,
                                   published, rate / ref_rate, inside, width))
    return out


def coverage(ratios: list[LambdaRatio]) -> HarnessCoverage:
    return HarnessCoverage.of("Lambda held-out families (other GPUs / H100 SXM)", [r.inside for r in ratios],
                              [r.half_width for r in ratios])


def render(ratios: list[LambdaRatio], source: str) -> str:
    """The held-out block as markdown: its coverage line, then each ratio."""
    if not ratios:
        return f"Lambda held-out families from {source}: no table's model was measured.\n"
    c = coverage(ratios)
    errors = sorted(abs(r.error) for r in ratios)
    lines = [f"Lambda held-out families from {source}, ratios to the H100 SXM: {c.inside} of {c.n} inside the range "
             f"their two bands give ({c.coverage:.1%}), median half-width ±{c.median_half_width:.1%}; median |ratio "
             f"error| {errors[len(errors) // 2]:.1%}, largest {errors[-1]:.1%}", "",
             "| table | GPU | our point | published / H100 | predicted / H100 | error | inside |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.table} | {r.gpu} | {r.setting} | {r.published:.3f} | {r.predicted:.3f} | {r.error:+.1%} | "
              f"{'yes' if r.inside else 'no'} (±{r.half_width:.0%}) |" for r in ratios]
    return "\n".join(lines) + "\n"
