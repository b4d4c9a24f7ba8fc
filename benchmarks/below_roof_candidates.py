"""How should the below-roof part of a step change on another GPU? Each candidate model, evaluated on the
committed results: the published cross-architecture rows predicted from the H100 (planner/check/crossarch.py)
and the measured H100 ↔ H200 pair both ways (planner/check/accuracy.py). docs/prediction-model.md quotes the
table (generated block `below-roof-candidates`). Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/below_roof_candidates.py [RESULTS_ROOT]

    a  held at the source's speed (the model before SM clocks were catalogued)
    b  each class's below-roof time × its own roof's ratio (the op keeps the source's efficiency)
    c  × source SM·clock / target SM·clock (the model: planner/model/performance.py, with its per-op roof floor)
    d  per op, the slower of its roof on the target and its whole time × the SM·clock ratio (a roofline max)

A candidate replaces performance.scale_factor for the evaluation only (patched, then restored).
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from gpuplan_schema.payloads import RooflinePayload, WorkloadPoint
from gpuplan_schema.payloads.roofline import RooflineAtBatch
from gpuplan_schema.results import MachineResults, load_results_root
from planner.check.accuracy import build_accuracy
from planner.check.crossarch import build_crosscheck
from planner.model import performance
from planner.model.performance import Rates, host_ratio
from planner.model.split import COMPILED, PLAIN_VARIANTS, StepSplit

SOURCE, TARGET = "h100-80gb", "h200"
ScaleFactor = Callable[[StepSplit, Rates, Rates], float | None]
_point: dict[str, object] = {}   # the point being predicted and its rooflines (candidate d reads its ops)


def _roofs(split: StepSplit, source: Rates, target: Rates) -> tuple[float, float, float]:
    """Time of the math and memory roof parts on the target, and the mean math ratio (time target / source)."""
    math = sum(s * source.flops_per_s[d] / target.flops_per_s[d] for d, s in split.math_roof.items() if s)
    total = sum(split.math_roof.values())
    memory = split.memory_roof * source.bytes_per_s / target.bytes_per_s
    return math, memory, math / total if total else 1.0


def _rest(split: StepSplit, source: Rates, target: Rates) -> float:
    return split.host * host_ratio(source, target) + split.latency


def held(split: StepSplit, source: Rates, target: Rates) -> float:
    math, memory, _ = _roofs(split, source, target)
    return _rest(split, source, target) + math + memory + split.below_roof


def class_roof(split: StepSplit, source: Rates, target: Rates) -> float:
    math, memory, math_ratio = _roofs(split, source, target)
    memory_ratio = source.bytes_per_s / target.bytes_per_s
    roof = sum(split.math_roof.values()) + split.memory_roof
    if split.basis == "FLOP/byte counts":  # the class of the rest is unknown: the roofs' mix
        below = split.below_roof * (math + memory) / roof if roof else split.below_roof
    else:
        math_below = max(0.0, split.math_class - sum(split.math_roof.values()))
        memory_below = max(0.0, split.memory_class - split.memory_roof)
        other = max(0.0, split.below_roof - math_below - memory_below)
        below = math_below * math_ratio + memory_below * memory_ratio + other
    return _rest(split, source, target) + math + memory + below


def sm_clock(split: StepSplit, source: Rates, target: Rates) -> float:
    """The model: with, since issue 39, no op faster than its roofs at the target's datasheet (op_floor)."""
    math, memory, _ = _roofs(split, source, target)
    floor = sum(performance.op_floor(split, source, target))
    return _rest(split, source, target) + math + memory + split.below_roof * target.sm_time_ratio + floor


def _op_ratio(profile: RooflineAtBatch, precision: str, source: Rates, target: Rates) -> float:
    """The profile's op time on the target / on the source, each op the slower of its roof and its SM time."""
    before = after = 0.0
    for op in profile.ops:
        t = op.time_s.median
        if op.op_class == "math-bound":
            dtype = op.dtype or precision
            roof = min(t, op.math_s or 0.0) * source.flops_per_s[dtype] / target.flops_per_s[dtype]
        elif op.op_class == "memory-bound":
            roof = min(t, op.memory_s or 0.0) * source.bytes_per_s / target.bytes_per_s
        else:
            roof = t if op.op_class == "latency-bound" else 0.0   # a launch each: unchanged, as in the model
        before, after = before + t, after + max(roof, t * target.sm_time_ratio)
    return after / before if before else 1.0


def _profiles(point: WorkloadPoint, rooflines: list[RooflinePayload], workload: str) -> dict[int, RooflineAtBatch]:
    if point.variant not in (*PLAIN_VARIANTS, COMPILED) or point.seq_len is not None:
        return {}
    return {p.batch: p for r in rooflines if r.workload == workload and r.precision == point.precision
            and r.device == "cuda" for p in r.profiled() if p.status == "ok" and p.ops}


def per_op_max(split: StepSplit, source: Rates, target: Rates) -> float:
    point, rooflines, workload = _point["point"], _point["rooflines"], _point["workload"]
    profiles = _profiles(point, rooflines, workload) if split.basis != "FLOP/byte counts" else {}  # type: ignore[arg-type]
    if not profiles:  # no ops: the step as one op, its roof parts against its whole GPU time
        math, memory, _ = _roofs(split, source, target)
        gpu = 1 - split.host - split.latency
        return _rest(split, source, target) + max(math + memory, gpu * target.sm_time_ratio)
    batch = point.batch  # type: ignore[attr-defined]
    ratios = {b: _op_ratio(p, point.precision, source, target) for b, p in profiles.items()}  # type: ignore[attr-defined]
    below, above = [b for b in ratios if b <= batch], [b for b in ratios if b >= batch]
    lo, hi = (max(below) if below else min(above)), (min(above) if above else max(below))
    w = 0.0 if lo == hi else (batch - lo) / (hi - lo)
    gpu_ratio = (1 - w) * ratios[lo] + w * ratios[hi]
    return split.host * host_ratio(source, target) + (1 - split.host) * gpu_ratio


CANDIDATES: dict[str, tuple[str, ScaleFactor]] = {
    "a": ("held at the source's speed (before)", held),
    "b": ("× its class's roof ratio (same efficiency)", class_roof),
    "c": ("× SM·clock ratio (the model)", sm_clock),
    "d": ("per op: max(roof on target, op time × SM·clock ratio)", per_op_max),
}


@contextmanager
def candidate(scale: ScaleFactor) -> Iterator[None]:
    """Predictions made inside use `scale` for performance.scale_factor; the point is kept for candidate d."""
    predict = performance.predict_point

    def remember(point, payload, source, target, same, rooflines=None, spec=None):  # noqa: ANN001, ANN202
        _point.update(point=point, rooflines=rooflines or [], workload=payload.workload)
        return predict(point, payload, source, target, same, rooflines, spec)

    with mock.patch.object(performance, "scale_factor", scale), \
            mock.patch.object(performance, "predict_point", remember):
        yield


@dataclass(frozen=True)
class CandidateResult:
    key: str
    name: str
    cross_median: float
    cross_max: float
    pair: list[tuple[float, float]]   # (median, max) |error|: source → target, then target → source


def evaluate(machines: list[MachineResults]) -> list[CandidateResult]:
    by = {m.machine: m for m in machines}
    out = []
    for key, (name, scale) in CANDIDATES.items():
        with candidate(scale):
            check = build_crosscheck(by[SOURCE])
            pair = [build_accuracy(s, t).summary() for s, t in ((by[SOURCE], by[TARGET]), (by[TARGET], by[SOURCE]))]
        errors = [abs(r.error) for r in check.rows]  # type: ignore[union-attr]
        out.append(CandidateResult(key, name, statistics.median(errors), max(errors),
                                   [(s["model_median"], s["model_max"]) for s in pair]))
    return out


def render_candidates(machines: list[MachineResults]) -> str:
    """The Markdown table of docs/prediction-model.md."""
    lines = [f"| candidate | below-roof time on the target | cross-arch median | max | {SOURCE} → {TARGET} median "
             f"| max | {TARGET} → {SOURCE} median | max |", "|---|---|---|---|---|---|---|---|"]
    for r in evaluate(machines):
        cells = [f"{x:.1%}" for x in (r.cross_median, r.cross_max, *r.pair[0], *r.pair[1])]
        lines.append(f"| {r.key} | {r.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("results")
    print(render_candidates(list(load_results_root(root))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
