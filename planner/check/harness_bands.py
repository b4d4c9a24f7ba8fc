"""The bands held out, per harness (issue 39 item 5): how many measured or published truths fell inside the band the
plan would have given, built without that truth's own model, and how wide the bands were.

- H100 <-> H200: the measured pair both ways, each row against the band without its workload (eager and compiled);
- Lambda and GPT-2 (Any-Winter-4079's script): each published row on another architecture against the band without
  its model (a user's model is not published), centred on its GPU's other rows (planner/check/gpu_centred.py);
- NVIDIA DeepLearningExamples: a ratio of two predictions (A100 / V100, or two precisions of one GPU) against the
  range the two bands give it, each without the model: the truth ratio lies within (1 − low_a) / (1 + high_b) …
  (1 + high_a) / (1 − low_b) of the predicted one.
The half-width of a band is its larger side, as everywhere on the accuracy page.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpuplan_schema.results import MachineResults
from planner.check.bands import Band, BandTable
from planner.check.coverage import Check, check_bands
from planner.check.pairs import PairCheck, PairRatio, build_pair_check
from planner.specs.published_pairs import PairTable, load_pairs

GPT2_FAMILY = "nanogpt"


@dataclass(frozen=True)
class HarnessCoverage:
    harness: str
    n: int
    inside: int
    median_half_width: float

    @property
    def coverage(self) -> float:
        return self.inside / self.n if self.n else 0.0

    @classmethod
    def of(cls, harness: str, inside: Sequence[bool], widths: Sequence[float]) -> HarnessCoverage:
        return cls(harness, len(inside), sum(inside), statistics.median(widths) if widths else 0.0)


def _published(checks: list[Check], gpt2: bool) -> HarnessCoverage:
    rows = [c for c in checks if not c.residual.same_architecture and (c.residual.family == GPT2_FAMILY) == gpt2]
    name = "GPT-2 124M script (other architectures)" if gpt2 else "Lambda (other architectures)"
    return HarnessCoverage.of(name, [c.inside for c in rows], [c.half_width for c in rows])


def ratio_inside(table: BandTable, ratio: PairRatio) -> tuple[bool, float]:
    """Whether the published ratio lay inside the range the two predictions' bands give the predicted one (each
    band without the model), and that range's larger half-width."""
    held = table.without_family(ratio.model)
    a = held.band(False, ratio.top.host, gpu=ratio.top.row.gpu)
    b = held.band(False, ratio.bottom.host, gpu=ratio.bottom.row.gpu)
    return within_ratio_range(ratio.published / ratio.predicted, a, b)


def within_ratio_range(at: float, a: Band, b: Band) -> tuple[bool, float]:
    """Whether `at` (the published ratio over the predicted one) lies inside the range the numerator's band `a` and the
    denominator's band `b` give a ratio of two predictions: (1 − low_a) / (1 + high_b) … (1 + high_a) / (1 − low_b);
    and that range's larger half-width."""
    low, high = 1 - (1 - a.low) / (1 + b.high), (1 + a.high) / (1 - b.low) - 1 if b.low < 1 else float("inf")
    return 1 - low - 1e-12 <= at <= 1 + high + 1e-12, max(low, high)


def harness_coverage(table: BandTable, pairs: PairCheck | None) -> list[HarnessCoverage]:
    checks = check_bands(table)
    measured = [c for c in checks if c.residual.same_architecture and not c.residual.gpu]
    out = [HarnessCoverage.of("H100 <-> H200, measured (same architecture)", [c.inside for c in measured],
                              [c.half_width for c in measured]),
           _published(checks, gpt2=False), _published(checks, gpt2=True)]
    if pairs and pairs.ratios:
        judged = [ratio_inside(table, r) for r in pairs.ratios]
        out.append(HarnessCoverage.of("DeepLearningExamples ratios (A100, V100)", [j[0] for j in judged],
                                      [j[1] for j in judged]))
    return out


@dataclass(frozen=True)
class RatioCheck:
    """A DLE ratio of a held-out model (a machine folder the bands never saw) against the range its two bands give."""

    source: str         # the GPU it was predicted from
    ratio: PairRatio
    inside: bool
    half_width: float


def held_out_ratio_checks(table: BandTable, machines: Sequence[MachineResults]) -> list[RatioCheck]:
    """Across architectures, for the new models DLE publishes (efficientnet-b0, resnext101-32x4d: published_pairs.json):
    each ratio predicted from each new machine, inside the range its two bands give it or not, and that range's larger
    half-width (ratio_inside)."""
    out = []
    for m in machines:
        check = build_pair_check(m)
        for ratio in check.ratios if check else []:
            out.append(RatioCheck(m.gpu_name or m.machine, ratio, *ratio_inside(table, ratio)))
    return out


@dataclass(frozen=True)
class HeldOutFamilies:
    """The DLE ratios of held-out families, each from its own collection, and the tables not scored with why."""

    judged: list[RatioCheck]
    not_measured: list[str] = field(default_factory=list)   # '<table id> (why)'


def held_out_family_checks(table: BandTable, collections: Mapping[str, MachineResults | None],
                           tables: list[PairTable] | None = None, where: Mapping[str, str] | None = None
                           ) -> HeldOutFamilies:
    """Across architectures, for held-out families (models no reference workload is, measured in a collection of their
    own: examples/ncf.py, waveglow.py, tacotron2.py): each DLE table of a family in `collections` predicted from that
    family's collection only, each ratio against the range its two bands give it (ratio_inside: the bands without the
    family). A family whose collection is None (not committed yet) or holds no point of it is listed, not dropped, with
    where its collection is expected (`where`: the model's folder in words)."""
    out: list[RatioCheck] = []
    missing: list[str] = []
    for pair_table in load_pairs() if tables is None else tables:
        if pair_table.model not in collections:
            continue
        machine = collections[pair_table.model]
        check = build_pair_check(machine, [pair_table]) if machine is not None else None
        if machine is None or check is None or not check.ratios:
            at = f" at {where[pair_table.model]}" if where and pair_table.model in where else ""
            why = f"no collection{at} yet" if machine is None else \
                f"its collection{at} has no {pair_table.model} point to start from"
            missing.append(f"{pair_table.id} ({why})")
            continue
        out += [RatioCheck(machine.gpu_name or machine.machine, r, *ratio_inside(table, r)) for r in check.ratios]
    return HeldOutFamilies(out, missing)
