"""Performance model: a step measured on one GPU (the source), predicted on another (the target).

Each measured point is split by what it achieved against the source's measured ceilings:

    math share     s_f = FLOPs / (step × F_src)       the point's achieved_flops_fraction
    memory share   s_b = bytes / (step × B_src)       achieved_bytes_fraction (traffic model estimate)
    the rest       s_o = 1 − s_f − s_b                kernels below both roofs, launches, host work

and each part is scaled by its own ratio (DESIGN.md: not one spec ratio):

    step_tgt = step_src × (s_f · F_src / F_tgt  +  s_b · B_src / B_tgt  +  s_o · C_src / C_tgt)

F is the matmul rate of the point's precision and B the copy bandwidth. The source's are measured
(`ceilings.json`); the target's are its datasheet's dense figures × the source's measured-to-datasheet
efficiency, so that both sides are rates a program reaches, not brochure ones. The rest (latency and
kernels that reach neither roof: elementwise work, reductions, small kernels) scales with C, the CUDA
cores' rate (the fp32 matmul rate: SMs × clock), not with either roof: the H100 → H200 table shows it
(same SMs and clocks, 1.42× the bandwidth, steps only 1.06–1.24× faster).
A compiled point has no byte estimate of its own; it takes its plain twin's memory share.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import CeilingsPayload, WorkloadPayload, WorkloadPoint
from planner.specs import GpuSpec

# Relative error band of a prediction (half-width), from the published H100 ↔ H200 table
# (README "Prediction accuracy"): most errors there are within 10% for steps of 20 ms or more.
ERROR_BAND = 0.10
SHORT_STEP_S = 0.020          # below this, launches dominate and the band widens
SHORT_STEP_ERROR = 0.25
OTHER_ARCHITECTURE_ERROR = 0.15  # added where the target's compute capability major differs
PLAIN_VARIANTS = ("default", "no_cudnn_benchmark")


@dataclass(frozen=True)
class Rates:
    """One GPU's achievable matmul rate per precision and copy bandwidth, and where they come from."""

    flops_per_s: dict[str, float]
    bytes_per_s: float
    basis: str


@dataclass(frozen=True)
class Shares:
    math: float
    memory: float
    other: float

    @property
    def bound(self) -> str:
        """The part that takes the largest share of the step: compute, memory (bandwidth) or overhead
        (kernels below both roofs, launches)."""
        named = {"compute": self.math, "memory": self.memory, "overhead": self.other}
        return max(named, key=named.__getitem__)


@dataclass(frozen=True)
class Prediction:
    workload: str
    precision: str
    batch: int
    variant: str
    seq_len: int | None
    source_step_s: float
    step_s: float
    throughput_per_s: float
    bound: str
    error: float              # relative half-width of the band
    shares: Shares

    def to_dict(self) -> dict:
        return {"workload": self.workload, "precision": self.precision, "batch": self.batch,
                "variant": self.variant, "seq_len": self.seq_len, "step_s": self.step_s,
                "throughput_per_s": self.throughput_per_s, "bound": self.bound, "error": self.error}


def measured_rates(ceilings: CeilingsPayload) -> Rates:
    flops = {m.dtype: m.flops_per_s.median for m in ceilings.matmul if m.flops_per_s}
    copy = next((b.bytes_per_s.median for b in ceilings.memory if b.name == "copy" and b.bytes_per_s), 0.0)
    return Rates(flops, copy, "measured ceilings")


def datasheet_efficiency(source: Rates, spec: GpuSpec) -> tuple[dict[str, float], float]:
    """What the source reached of its own datasheet, per precision and for bandwidth."""
    flops = {d: source.flops_per_s[d] / spec.flops_per_s[d] for d in source.flops_per_s if d in spec.flops_per_s}
    return flops, source.bytes_per_s / spec.memory_bandwidth_bytes_per_s


def target_rates(source: Rates, source_spec: GpuSpec, target: GpuSpec) -> Rates:
    """The target's datasheet × the source's measured-to-datasheet efficiency."""
    flops_eff, bw_eff = datasheet_efficiency(source, source_spec)
    flops = {d: target.flops_per_s[d] * e for d, e in flops_eff.items() if d in target.flops_per_s}
    return Rates(flops, target.memory_bandwidth_bytes_per_s * bw_eff,
                 f"{target.name} datasheet × {source_spec.name}'s measured efficiency")


def shares_of(point: WorkloadPoint, payload: WorkloadPayload, source: Rates) -> Shares | None:
    if point.step_s is None or point.flops_per_step is None or point.precision not in source.flops_per_s:
        return None
    step = point.step_s.median
    math_share = point.flops_per_step / (step * source.flops_per_s[point.precision])
    if point.traffic:
        memory = point.traffic.total_bytes / (step * source.bytes_per_s) if source.bytes_per_s else 0.0
    else:
        memory = _plain_twin_memory_share(point, payload, source)
    total = math_share + memory
    if total > 1:  # the byte model is an estimate: never let the parts exceed the step
        math_share, memory = math_share / total, memory / total
    return Shares(math_share, memory, max(0.0, 1 - math_share - memory))


def _plain_twin_memory_share(point: WorkloadPoint, payload: WorkloadPayload, source: Rates) -> float:
    """A compiled point's memory share: its plain twin's (fusion removes bytes the traffic model cannot
    see, so the twin's bytes over the compiled step would overstate it: conv-rollout's by 2.5×)."""
    twin = next((p for p in payload.points if p.traffic and p.step_s and p.precision == point.precision
                 and p.batch == point.batch and p.seq_len == point.seq_len and p.variant in PLAIN_VARIANTS), None)
    if twin is None or not source.bytes_per_s:
        return 0.0
    return twin.traffic.total_bytes / (twin.step_s.median * source.bytes_per_s)  # type: ignore[union-attr]


def predict_point(point: WorkloadPoint, payload: WorkloadPayload, source: Rates, target: Rates,
                  same_architecture: bool) -> Prediction | None:
    """The point's step on the target; None where a ratio is missing (e.g. no bf16 on the target)."""
    shares = shares_of(point, payload, source)
    if shares is None or point.precision not in target.flops_per_s or not target.bytes_per_s:
        return None
    p = point.precision
    cores = source.flops_per_s.get("fp32", 1.0) / target.flops_per_s.get("fp32", source.flops_per_s.get("fp32", 1.0))
    scale = (shares.math * source.flops_per_s[p] / target.flops_per_s[p]
             + shares.memory * source.bytes_per_s / target.bytes_per_s + shares.other * cores)
    step = point.step_s.median * scale  # type: ignore[union-attr]
    error = ERROR_BAND if point.step_s.median >= SHORT_STEP_S else SHORT_STEP_ERROR  # type: ignore[union-attr]
    error += 0 if same_architecture else OTHER_ARCHITECTURE_ERROR
    return Prediction(payload.workload, p, point.batch, point.variant, point.seq_len, point.step_s.median,  # type: ignore[union-attr]
                      step, point.batch / step, shares.bound, error, shares)


def iter_predictions(payload: WorkloadPayload, source: Rates, target: Rates,
                     same_architecture: bool) -> list[Prediction]:
    """Every timed point of the workload (sweep, trials, sequence), once per configuration."""
    seen, out = set(), []
    for point in payload.points:
        key = (point.precision, point.batch, point.variant, point.seq_len)
        if point.status != "ok" or point.sweep in ("probe", "repeat") or key in seen:
            continue
        seen.add(key)
        prediction = predict_point(point, payload, source, target, same_architecture)
        if prediction:
            out.append(prediction)
    return out


def naive_step(point: WorkloadPoint, source_spec: GpuSpec, target: GpuSpec, by: str) -> float | None:
    """What one spec ratio would say: the datasheet TFLOPS (`by="flops"`) or bandwidth ratio."""
    if point.step_s is None:
        return None
    if by == "flops":
        if point.precision not in target.flops_per_s or point.precision not in source_spec.flops_per_s:
            return None
        return point.step_s.median * source_spec.flops_per_s[point.precision] / target.flops_per_s[point.precision]
    return point.step_s.median * source_spec.memory_bandwidth_bytes_per_s / target.memory_bandwidth_bytes_per_s
