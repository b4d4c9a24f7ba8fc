"""Predictions across architectures, checked against published single-stack tables
(planner/specs/published_throughput.json): each published GPU predicted from our own measured machine,
the predicted ratio target / source GPU held against the published one.

Which tables compare: those whose model gpuplan defines the same way.
- ResNet-50 AMP → our `resnet50` at bf16 (fp16 where bf16 is missing on the target): NVIDIA's RN50 v1.5 is
  torchvision's ResNet-50 at 224×224×3, 1000 classes; the published runs use synthetic data like ours.
- ResNet-50 "fp32" → our tf32: the published stack (PyTorch 1.13, NGC) runs convolutions in TF32 by
  default on Ampere and later (cudnn.allow_tf32).
- BERT-base SQuAD AMP → our `bert-base-squad` (examples/bert_squad.py) at bf16 (fp16 where bf16 is missing):
  BERT-base uncased with the span head, sequence 384, AdamW, synthetic token ids. The published runs
  (DeepLearningExamples' run_squad.py, apex O2 fp16) read SQuAD's features and compute attention with
  separate matmul and softmax kernels; ours goes through `scaled_dot_product_attention`'s fused kernels.
  "fp32" → our tf32, as for ResNet-50: the published fp32 rates need TF32 matmuls (the A100 80GB's 224
  sequences/s × 0.21 TFLOP a sequence is 47 TFLOP/s, over its 19.5 of true fp32).
- SSD300 AMP / "fp32" → our `ssd300` (examples/ssd300.py) at bf16 / tf32: DeepLearningExamples' SSD300 v1.1 (ResNet-50
  to conv4_x, 8732 default boxes, hard negative mining) at 300×300; the published runs read COCO through DALI on 4
  CPU threads, ours synthetic images on the GPU, so a published GPU the input held back reads slower than ours.
- Transformer-XL base AMP / "fp32" → our `transformer-xl-base` (examples/transformer_xl.py) at bf16 / tf32: DLE's
  MemTransformerLM as Lambda ran it, a full softmax over 267,735 words (no --adaptive), 192 target and 192
  remembered tokens; the published fp16 is apex O2 (an fp16 model), ours autocast.
- GNMT v2 AMP / "fp32" → our `gnmt` (examples/gnmt.py) at bf16 / tf32: DLE's GNMT (eight 1024-wide LSTMs, normalized
  Bahdanau attention, a 31,800-word classifier, label smoothing 0.1) on Lambda's News Commentary en-de, tokens/s of
  source + target; ours is the step of the average length bucket, synthetic sentences. The published "fp32" ran
  cuDNN's LSTMs in TF32 (cudnn.allow_tf32, on by default); the published fp16 is apex O2, ours autocast.
- GPT-2 124M bf16 → our `nanogpt` (examples/nanogpt.py) at bf16: Any-Winter-4079's nanoGPT-style script (tied head,
  vocabulary 50,304, flash attention, fused AdamW), one micro-batch where theirs accumulates 2**19 tokens an optimizer
  step (the clip and the accumulation it adds: under 1 % of a step on an H100, the workload's docstring says how).
Our point is the published batch where we measured it, else the nearest measured batch, of the plain variants; of the
torch.compile trials where the table says `compiled` (its published step was compiled: ours starts from our compiled
step, its measured time and host share, though still split between the roofs as its eager twin, planner/model/split.py).
The ratio error is predicted ratio / published ratio − 1. Beside it, the naive answers on the same rows:
one datasheet ratio, dense TFLOPS of the precision or memory bandwidth.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.model import performance
from planner.model.performance import HostExposure, measured_rates, run_precision, target_rates
from planner.model.split import COMPILED, PLAIN_VARIANTS, machine_rooflines
from planner.specs import GpuSpec, match_gpu
from planner.specs.published import PublishedRow, PublishedTable, load_published

# Issue 25's goals over every published row used: the median |ratio error| and the largest one.
MEDIAN_TARGET = 0.08
MAX_TARGET = 0.20
PRECISIONS_OF = {"amp": ("bf16", "fp16"), "bf16": ("bf16", "fp16"), "tf32": ("tf32",), "fp32": ("tf32",)}


@dataclass(frozen=True)
class CrossRow:
    table: str
    gpu: str
    precision: str               # ours
    batch: int                   # our measured batch the prediction started from
    published_batch: int | None
    published_ratio: float       # target / reference GPU, as published
    predicted_ratio: float
    naive_flops_ratio: float | None
    naive_bandwidth_ratio: float
    same_stack: bool             # the row was measured with its table's own container build
    bound: str                   # the regime of the source configuration (planner/model/bound.py)
    host: HostExposure = HostExposure()  # how the predicted step depended on its host (Prediction.host_there)
    family: str = ""             # the published model (resnet50, bert-base-squad, …)
    informed: str | None = None  # what the row changed in the model (PublishedRow.informed); None: only checked
    variant: str = "default"     # our point's: a plain variant, or `compile` where the table ran compiled

    @property
    def error(self) -> float:
        return self.predicted_ratio / self.published_ratio - 1

    @property
    def setting(self) -> str:
        """Our point as the accuracy tables show it: 'bf16, 32', or 'bf16 compiled, 32' for a torch.compile trial."""
        return f"{self.precision}{' compiled' if self.variant == COMPILED else ''}, {self.batch}"

    def naive_error(self, by: str) -> float | None:
        ratio = self.naive_flops_ratio if by == "flops" else self.naive_bandwidth_ratio
        return None if ratio is None else ratio / self.published_ratio - 1


@dataclass(frozen=True)
class ErrorGroup:
    """The |ratio errors| of one family, GPU or role of the published rows, against issue 25's goals."""

    name: str
    n: int
    median: float
    largest: float

    @classmethod
    def of(cls, name: str, errors: list[float]) -> ErrorGroup:
        """The group of these |errors| (none: zeros)."""
        return cls(name, len(errors), statistics.median(errors) if errors else 0.0, max(errors, default=0.0))

    @property
    def meets(self) -> bool:
        return self.median <= MEDIAN_TARGET and self.largest <= MAX_TARGET


GroupBy = Literal["family", "gpu", "role"]


@dataclass(frozen=True)
class CrossCheck:
    source: str                  # our machine
    reference: str               # the catalog GPU both sides measured
    rows: list[CrossRow]
    not_comparable: list[str]    # tables without a gpuplan twin, with why
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (table, GPU, why) rows not predicted

    def median_abs_error(self, by: str = "model") -> float | None:
        errors = [abs(r.error if by == "model" else r.naive_error(by) or 0.0) for r in self.rows
                  if by == "model" or r.naive_error(by) is not None]
        return statistics.median(errors) if errors else None

    def groups(self, by: GroupBy) -> list[ErrorGroup]:
        """Median and largest |ratio error| per model family, per GPU, or for the rows that informed the model
        against those only checked; the largest group first. (The standard library, not pandas: `gpuplan plan`
        reads this and does not load pandas.)"""
        key = {"family": lambda r: r.family, "gpu": lambda r: r.gpu,
               "role": lambda r: "informed the model" if r.informed else "only checked"}[by]
        errors: dict[str, list[float]] = {}
        for r in self.rows:
            errors.setdefault(key(r), []).append(abs(r.error))
        groups = [ErrorGroup.of(name, e) for name, e in sorted(errors.items())]
        return sorted(groups, key=lambda g: -g.n)

    @property
    def overall(self) -> ErrorGroup:
        return ErrorGroup.of("all rows", [abs(r.error) for r in self.rows])

    def kin_words(self, gpu: GpuSpec) -> str | None:
        """For a GPU no published row covers: how the checked GPUs of its architecture (its compute capability)
        fared, the range of their errors each. A class whose printed rates its cards do not all reach (the RTX 6000
        Ada's) says so beside the unchecked card that shares it (the L40S). The catalog's indirect evidence for the
        GPU follows (the T4's: published measurements outside the check). None where neither exists, or the GPU was
        checked itself."""
        if gpu.name in self.validated_gpus():
            return None
        errors: dict[str, list[float]] = {}
        for r in self.rows:
            if gpu.compute_capability and self._capability_of.get(r.gpu) == gpu.compute_capability:
                errors.setdefault(r.gpu, []).append(r.error)
        evidence = gpu.indirect_evidence
        if not errors:
            return f"{gpu.name} is not checked itself; indirect evidence: {evidence}" if evidence else None
        checked = "; ".join(f"{name} {min(e):+.0%} … {max(e):+.0%}" for name, e in sorted(errors.items()))
        return (f"{gpu.name} is not checked itself; the published rows of its architecture (compute capability "
                f"{gpu.compute_capability}) lie at {checked} from the prediction (+: predicted too fast)"
                + (f". Indirect evidence: {evidence}" if evidence else ""))

    @cached_property
    def _capability_of(self) -> dict[str, str | None]:
        """Each checked GPU's compute capability, from the catalog (kin_words asks it of every row, per GPU)."""
        specs = {name: match_gpu(name) for name in {r.gpu for r in self.rows}}
        return {name: spec.compute_capability if spec else None for name, spec in specs.items()}

    def own_words(self, gpu: GpuSpec) -> str | None:
        """For a GPU published rows cover: the range of their errors, the check a user of that GPU can weigh the
        prediction by (the RTX 6000 Ada's lie far from its others); None where no row covers it."""
        rows = [r for r in self.rows if r.gpu == gpu.name]
        errors = [r.error for r in rows]
        if not errors:
            return None
        if len(rows) == 1:
            return (f"{gpu.name}: its one published row ({rows[0].family}) lies at {errors[0]:+.0%} from the "
                    "prediction (+: predicted too fast)")
        return (f"{gpu.name}: its {len(errors)} published rows lie at {min(errors):+.0%} … {max(errors):+.0%} from "
                f"the prediction (median |error| {statistics.median(abs(e) for e in errors):.0%}; +: predicted too "
                "fast)")

    @property
    def informed_reasons(self) -> list[str]:
        """What the rows that informed the model changed in it, each once (a row may carry several, "; "-joined),
        in the order the rows first give them."""
        return list(dict.fromkeys(part.strip() for r in self.rows if r.informed for part in r.informed.split("; ")))

    def validated_gpus(self) -> set[str]:
        return {r.gpu for r in self.rows} | {self.reference}

    def to_dict(self) -> dict:
        """The plan JSON's `crosscheck`: the summary; the rows are in benchmarks/prediction_accuracy.py."""
        return {"reference": self.reference, "median_abs_ratio_error": self.median_abs_error(),
                "naive_flops_median_abs_ratio_error": self.median_abs_error("flops"),
                "naive_bandwidth_median_abs_ratio_error": self.median_abs_error("bandwidth"),
                "largest_abs_ratio_error": self.overall.largest if self.rows else None,
                "by": {by: [g.__dict__ for g in self.groups(by)] for by in ("role", "family", "gpu")},
                "rows": len(self.rows), "validated_gpus": sorted(self.validated_gpus()),
                "not_comparable": self.not_comparable}


def nearest_point(payload: WorkloadPayload, precision: str, batch: int | None,
             compiled: bool = False) -> WorkloadPoint | None:
    """Our measured point nearest the published batch (the larger of two as near): a plain variant's, or a
    torch.compile trial's for a table that ran compiled (none: no point, never an eager one in its place)."""
    variants = (COMPILED,) if compiled else PLAIN_VARIANTS
    points = [p for p in payload.points if p.precision == precision and p.status == "ok" and p.step_s
              and p.variant in variants and p.seq_len is None and p.sweep not in ("probe", "repeat")]
    return min(points, key=lambda p: (abs(p.batch - (batch or p.batch)), -p.batch), default=None)


def predict_row(table: PublishedTable, gpu: GpuSpec, published: PublishedRow, ratio: float, source: MachineResults,
         source_spec: GpuSpec, payload: WorkloadPayload, precisions: tuple[str, ...] | None = None) -> CrossRow | None:
    # our measured precision of the table's (or the first of `precisions` a caller chose); a GPU without it runs the
    # measured step in its stand-in (STAND_IN: TF32 work as plain fp32 on a V100, as the published fp32 runs did there)
    ours = precisions or PRECISIONS_OF[table.precision]
    precision = next((p for p in ours if p in gpu.flops_per_s), None) \
        or next((p for p in ours if run_precision(p, gpu.flops_per_s)), None)
    point = nearest_point(payload, precision, published.batch, table.compiled) if precision else None
    if point is None:
        return None
    rates = measured_rates(source.ceilings)  # type: ignore[arg-type]
    same_arch = (gpu.compute_capability or "")[:1] == (source_spec.compute_capability or "")[:1]
    # with the whole document: a compiled point's memory share is its plain twin's (performance.count_fractions);
    # called through the module, where benchmarks/below_roof_candidates.py swaps in its candidates
    p = performance.predict_point(point, payload, rates, target_rates(rates, source_spec, gpu), same_arch,
                                  machine_rooflines(source), gpu)
    if p is None:
        return None
    run = run_precision(precision, gpu.flops_per_s)
    naive_f = gpu.flops_per_s[run] / source_spec.flops_per_s[precision] \
        if run in gpu.flops_per_s and precision in source_spec.flops_per_s else None
    naive_b = gpu.memory_bandwidth_bytes_per_s / source_spec.memory_bandwidth_bytes_per_s
    return CrossRow(table.id, gpu.name, precision, point.batch, published.batch, ratio, p.step_s and
                    point.step_s.median / p.step_s, naive_f, naive_b, published.same_stack,  # type: ignore[union-attr]
                    p.bound, p.host_there, table.model, published.informed, point.variant)


def build_crosscheck(source: MachineResults, tables: list[PublishedTable] | None = None) -> CrossCheck | None:
    """Every published GPU of every comparable table, predicted from `source`; None where `source` has no
    catalog GPU, ceilings or rows in any table."""
    source_spec = match_gpu(source.gpu_name or "")
    if source_spec is None or source.ceilings is None:
        return None
    rows, not_comparable, skipped = [], [], []
    for table in load_published() if tables is None else tables:
        # a table's `model` is the gpuplan workload defined the same way (published_throughput.json)
        payload = next((w for w in source.workloads if w.workload == table.model), None)
        ref = table.row(source_spec.name)
        if payload is None or table.precision not in PRECISIONS_OF:
            not_comparable.append(f"{table.id}: no gpuplan workload defined as {table.model}")
            continue
        if ref is None or not ref.same_stack:
            not_comparable.append(f"{table.id}: no {source_spec.name} row measured with the table's stack")
            continue
        for r in table.rows:
            gpu = match_gpu(r.gpu) if r.gpu else None
            if gpu is None or r is ref:
                continue
            row = predict_row(table, gpu, r, r.throughput_per_s / ref.throughput_per_s, source, source_spec, payload)
            if row:
                rows.append(row)
            else:
                start = "torch.compile point" if table.compiled else "point"
                skipped.append((table.id, gpu.name, f"no {'/'.join(PRECISIONS_OF[table.precision])} on {gpu.name} "
                                                    f"in the catalog, or no measured {start} to start from"))
    return CrossCheck(source.machine, source_spec.name, rows, not_comparable, skipped)
