"""Performance model: a step measured on one GPU (the source), predicted on another (the target).

The source step is split into parts (planner/model/split.py: host, math roof, memory roof, latency, below
roof) and each part is scaled by its own measured ratio (DESIGN.md: not one spec ratio):

    step_tgt = step_src × ( host · H_tgt / H_src                      the hosts' measured dispatch speed
                          + Σ_dtype math_roof[d] · F_src[d] / F_tgt[d]  matmul rate of the op's dtype
                          + memory_roof · B_src / B_tgt                 copy bandwidth
                          + latency · L_src / L_tgt                     launch latency (same unless known)
                          + below_roof · S_src / S_tgt )                SM count × boost clock

F and B on the source are measured (`ceilings.json`); the target's are its datasheet's dense figures × the
source's measured-to-datasheet efficiency, so that both sides are rates a program reaches. No part is
scaled by a spec figure that nothing measured ties to it (docs/history.md, "One ratio per part").

Below roof: an op slower than both its roofs is held back by what its SMs do per cycle (occupancy, the
reductions of a normalisation, fp32 arithmetic, waiting on its own loads), not by the datasheet rate of a
roof, so that time scales with the SMs' cycles: S = SM count × boost clock (the warp-instruction issue rate
up to the four schedulers every NVIDIA SM since Volta has). Its time is kept the source's where either GPU
lacks a clock (`sm_time_ratio` 1). Candidates and their errors: docs/prediction-model.md.

Host-limited steps (planner/model/bound.py `host_limited`: the host's measured time to issue the step
exceeds the GPU's busy time by 10 %): the host issues while the GPU runs, so the step is the slower of
the two, not their sum: step_tgt = step_src × max(issue · H_tgt / H_src, the GPU parts above), which
predicts host-bound steps better than the sum (docs/history.md, "One ratio per part").

Ceiling check: no prediction is faster than the target's datasheet roofs allow for the measured mix
(the point's FLOPs at the datasheet matmul rate plus its bytes at the datasheet bandwidth; a roof, not a
sum of roofs, so the larger of the two): such a step is raised to that floor and flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan_schema.payloads import CeilingsPayload, RooflinePayload, WorkloadPayload, WorkloadPoint
from planner.model import winograd
from planner.model.bound import HOST_MARGIN, Bound, bound_of, host_limited
from planner.model.split import PLAIN_VARIANTS, StepSplit, split_point
from planner.specs import GpuSpec

# Until planner/check/bands.py gives a band from measured residuals, a prediction carries this one.
UNBANDED = 0.50

# What a GPU without a precision runs the same step in: bf16 autocast becomes fp16 autocast (+ GradScaler) on a
# V100 or T4 (the same 2-byte traffic, its fp16 tensor rate), TF32 becomes plain fp32 where there is no TF32.
STAND_IN = {"bf16": "fp16", "tf32": "fp32"}


def run_precision(precision: str, flops_per_s: dict[str, float]) -> str | None:
    """The precision a GPU with these matmul rates runs `precision`'s step in; None where it has neither."""
    if precision in flops_per_s or precision == "fp32":
        return precision
    other = STAND_IN.get(precision)
    return other if other in flops_per_s or other == "fp32" else None


@dataclass(frozen=True)
class Rates:
    """One GPU's achievable matmul rate per precision, copy bandwidth and launch latency, and their basis."""

    flops_per_s: dict[str, float]
    bytes_per_s: float
    basis: str
    launch_s: float | None = None
    host_kernel_s: float | None = None   # host seconds to issue one kernel of an autograd step (the dispatch
                                         # benchmark); None: this host's speed was not measured
    sm_time_ratio: float = 1.0           # target / source time of below-roof work: source SM·clock / this GPU's
                                         # (datasheets); 1 on the source itself or where a clock is unknown
    host_time_ratio: float | None = None  # this host's / the source's time to issue the same steps, from real
                                          # steps both timed (planner/model/host_speed.py); None: not measured
    peak_flops_per_s: dict[str, float] | None = None  # a target's datasheet rates, the roofs no op can beat there
    peak_bytes_per_s: float | None = None             # (None: the source's own measured machine)


@dataclass(frozen=True)
class HostExposure:
    """How a step depends on the host that issues it: `part` is the host's share outside the GPU's work (the step
    is that plus the GPU's), `issue` the host's time to issue the step over the step, `limited` whether that issue
    time sets the step (planner/model/bound.py `host_limited`). Shares of the step on the GPU it is predicted for,
    at the source host's speed: which host a rented GPU comes with is what a band is unsure of."""

    part: float = 0.0
    issue: float = 0.0
    limited: bool = False

    def steps(self, spread: float) -> tuple[float, float]:
        """The step, relative to the predicted one, on a host (1 + spread)× slower and one (1 + spread)× faster: the
        host's part and issue time scale; the GPU's work does not, and a step cannot fall below it."""
        gpu = 1.0 - self.part
        slower = max(self.part * (1 + spread) + gpu, self.issue * (1 + spread))
        faster = max(self.issue / (1 + spread), gpu) if self.limited else self.part / (1 + spread) + gpu
        return slower, faster


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
    bound_of_source: Bound      # what bounds the measured step (the split, read once)
    split: StepSplit
    ceiling_limited: bool = False
    band_low: float = UNBANDED   # relative: the throughput may be (1 − low)× … (1 + high)× the prediction
    band_high: float = UNBANDED
    band_basis: str = "no comparable measurement"
    same_architecture: bool = True
    bound_on_target: Bound | None = None   # the same split with each part scaled: what bounds it there
    measured_precision: str | None = None  # the source's precision where the target runs it in another (STAND_IN)
    rate_basis: str = ""                   # where the target's rates came from (Rates.basis: its datasheet × the
                                           # source's efficiency, its matmuls held to a measured sustained rate)

    @property
    def bound(self) -> str:
        """The source configuration's bound: the regime the accuracy rows and the bands are keyed by."""
        return self.bound_of_source.name

    @property
    def bound_there(self) -> Bound:
        """What bounds the step on the target (a host-bound step on an H100 is GPU-bound on an A10)."""
        return self.bound_on_target or self.bound_of_source

    @property
    def host_there(self) -> HostExposure:
        """How the predicted step on the target depends on its host (the band's host part, planner/check/bands.py)."""
        there = self.bound_there
        issue = self.split.host_issue * self.source_step_s / self.step_s if self.split.host_issue and self.step_s \
            else 0.0
        return HostExposure(there.shares.get("host", self.split.host), min(1.0, issue), there.name == "host")

    @property
    def error(self) -> float:
        """The band's larger half-width (the plan JSON's `error`, kept for older readers)."""
        return max(self.band_low, self.band_high)

    def to_dict(self) -> dict:
        t = self.throughput_per_s
        return {"workload": self.workload, "precision": self.precision, "batch": self.batch,
                "variant": self.variant, "seq_len": self.seq_len, "step_s": self.step_s,
                "throughput_per_s": t, "bound": self.bound, "error": self.error,
                "throughput_low": t * (1 - self.band_low), "throughput_high": t * (1 + self.band_high),
                "band_basis": self.band_basis, "basis": self.split.basis, "host_share": self.split.host,
                "host_measured": self.split.host_measured, "bound_share": self.bound_of_source.share,
                "bound_on_target": self.bound_there.name, "ceiling_limited": self.ceiling_limited,
                "measured_precision": self.measured_precision or self.precision, "rate_basis": self.rate_basis}

    @property
    def stand_in_words(self) -> str:
        """Where the target runs the step in another precision than the one measured (a V100 runs bf16 work in
        fp16): which, and how it was predicted; else ''."""
        if not self.measured_precision:
            return ""
        return f"the {self.measured_precision} step measured, run at this GPU's {self.precision} rate"


def measured_rates(ceilings: CeilingsPayload) -> Rates:
    flops = {m.dtype: m.flops_per_s.median for m in ceilings.matmul if m.flops_per_s}
    copy = next((b.bytes_per_s.median for b in ceilings.memory if b.name == "copy" and b.bytes_per_s), 0.0)
    launch = ceilings.launch_latency_s.median if ceilings.launch_latency_s else None
    host = ceilings.dispatch.per_kernel_s if ceilings.dispatch else None
    return Rates(flops, copy, "measured ceilings", launch, host)


def on_host(rates: Rates, host: Rates | None) -> Rates:
    """`rates` with the host of a measured machine (its dispatch speed), where that machine measured one: a
    target that is a measured machine, or an instance whose host was measured elsewhere."""
    return replace(rates, host_kernel_s=host.host_kernel_s) if host and host.host_kernel_s else rates


def datasheet_efficiency(source: Rates, spec: GpuSpec) -> tuple[dict[str, float], float]:
    """What the source reached of its own datasheet, per precision and for bandwidth."""
    flops = {d: source.flops_per_s[d] / spec.flops_per_s[d] for d in source.flops_per_s if d in spec.flops_per_s}
    return flops, source.bytes_per_s / spec.memory_bandwidth_bytes_per_s


def target_rates(source: Rates, source_spec: GpuSpec, target: GpuSpec) -> Rates:
    """The target's datasheet × the source's measured-to-datasheet efficiency, its matmuls held to the share of
    their datasheet they were measured to sustain (`sustained_fraction`); its launch latency is assumed the
    source's (nothing in the catalog says otherwise); its below-roof time scales with the two datasheets' SM
    cycles per second."""
    flops_eff, bw_eff = datasheet_efficiency(source, source_spec)
    held = {d: sustained_fraction(source_spec, target, d) for d in flops_eff if d in target.flops_per_s}
    flops = {d: target.flops_per_s[d] * flops_eff[d] * f for d, f in held.items()}
    below = ", ".join(f"{d} ×{f:.2f}" for d, f in held.items() if f < 1)
    basis = f"{target.name} datasheet × {source_spec.name}'s measured efficiency" + \
        (f"; matmul held to its measured sustained rate ({below})" if below else "")
    return Rates(flops, target.memory_bandwidth_bytes_per_s * bw_eff, basis, source.launch_s,
                 sm_time_ratio=sm_time_ratio(source_spec, target), peak_flops_per_s=dict(target.flops_per_s),
                 peak_bytes_per_s=target.memory_bandwidth_bytes_per_s)


def sustained_fraction(source: GpuSpec, target: GpuSpec, dtype: str) -> float:
    """How much further below its datasheet matmul rate the target runs than the source does, as a public harness
    measured each (`GpuSpec.measured_matmul_flops_per_s`: one harness, or for a GPU it lacks a second whose H100 SXM
    row agrees with it within 0.5 %); 1 where either lacks the measurement.

    Capped at 1: a GPU whose datasheet rate is its power-capped sustained one (an L4 at 72 W, a 250 W A100 PCIe,
    a 350 W H100 PCIe) reaches less of it than an H100 SXM does, and that is what this carries. A GeForce card
    measured above its datasheet (an RTX 4090's matmul bursts boost past the datasheet clock) is held to the
    datasheet: that clock is not sustained through a training run's thermals, and the published BERT rows of the
    RTX 4090 and 3090 were 13–33 % slower than a measured-burst rate predicts (docs/prediction-model.md § 4)."""
    s, t = source.measured_matmul_flops_per_s.get(dtype), target.measured_matmul_flops_per_s.get(dtype)
    if not s or not t:  # the catalog holds a measured rate only beside a datasheet one (planner/specs/gpus.py)
        return 1.0
    held = (t / target.flops_per_s[dtype]) / (s / source.flops_per_s[dtype])
    if dtype in ARCHITECTURE_RATES and abs(held - 1) >= HARNESS_SPREAD:
        return held
    return held if held < 1 - HARNESS_SPREAD else 1.0


# The CUDA-core fp32 rate a GPU sustains is its SM design's, not a clock a burst holds: the SMs that issue two fp32
# FMAs a clock (GA10x, AD10x, GH100) reach 51-78 % of the datasheet in the harness, those that issue one (GV100,
# GA100) 90-98 % (a V100 SXM2 14.06 of 15.7 TFLOPS, an A100 SXM4 19.18 of 19.5, an H100 SXM 52.0 of 67). So a target
# may run fp32 above the source's share of its datasheet; the tensor rates keep the cap (docs/prediction-model.md § 4).
ARCHITECTURE_RATES = ("fp32",)


# Two entries of one GPU in the harness's table differ by this much (its H100 SXM's bf16: 797.5 and 783.7 TFLOPS,
# 1.8 %): a target measured closer than that to the source's share of its datasheet (the H200, 0.04 % below) runs
# at the source's efficiency, not at a correction the harness cannot tell from its own noise.
HARNESS_SPREAD = 0.02


def sm_time_ratio(source: GpuSpec, target: GpuSpec) -> float:
    """How much longer the target's SMs take for the source's below-roof work: source SM·clock / target's.
    1 (the source's speed, the model before clocks were catalogued) where either GPU has no SM·clock."""
    s, t = source.sm_cycles_per_s, target.sm_cycles_per_s
    return s / t if s and t else 1.0


def count_fractions(point: WorkloadPoint, payload: WorkloadPayload, source: Rates) -> tuple[float, float] | None:
    """The point's FLOPs and bytes over what the source's ceilings do in its step."""
    if point.step_s is None or point.flops_per_step is None or point.precision not in source.flops_per_s:
        return None
    step = point.step_s.median
    math_share = point.flops_per_step / (step * source.flops_per_s[point.precision])
    if point.traffic:
        memory = point.traffic.total_bytes / (step * source.bytes_per_s) if source.bytes_per_s else 0.0
    else:
        memory = _plain_twin_memory_share(point, payload, source)
    return math_share, memory


def _plain_twin_memory_share(point: WorkloadPoint, payload: WorkloadPayload, source: Rates) -> float:
    """A compiled point's memory share: its plain twin's (fusion removes bytes the traffic model cannot
    see, so the twin's bytes over the compiled step would overstate it: conv-rollout's by 2.5×)."""
    twin = next((p for p in payload.points if p.traffic and p.step_s and p.precision == point.precision
                 and p.batch == point.batch and p.seq_len == point.seq_len and p.variant in PLAIN_VARIANTS), None)
    if twin is None or not source.bytes_per_s:
        return 0.0
    return twin.traffic.total_bytes / (twin.step_s.median * source.bytes_per_s)  # type: ignore[union-attr]


def scale_factor(split: StepSplit, source: Rates, target: Rates,
                 floors: tuple[float, float] | None = None) -> float | None:
    """step_tgt / step_src; None where the target lacks a dtype the step's matmuls use. `floors`: op_floor's, where
    the caller has them already (predict_point reads them for the bound too)."""
    if any(d not in target.flops_per_s or d not in source.flops_per_s for d in split.math_roof if split.math_roof[d]):
        return None
    math, memory, latency = roof_parts(split, source, target)
    below = split.below_roof * target.sm_time_ratio  # relative to the source already (target_rates)
    floor = sum(floors if floors is not None else op_floor(split, source, target))
    return step_scale(split, host_ratio(source, target), math + memory + latency + below + floor)


def roof_parts(split: StepSplit, source: Rates, target: Rates) -> tuple[float, float, float]:
    """The math roof, memory roof and latency parts on the target, each scaled by its own ratio (the caller has
    checked that both sides have every dtype the matmuls use)."""
    math = sum(s * source.flops_per_s[d] / target.flops_per_s[d] for d, s in split.math_roof.items() if s)
    memory = split.memory_roof * source.bytes_per_s / target.bytes_per_s if split.memory_roof else 0.0
    latency = split.latency * ((source.launch_s / target.launch_s) if source.launch_s and target.launch_s else 1.0)
    return math, memory, latency


def op_floor(split: StepSplit, source: Rates, target: Rates) -> tuple[float, float]:
    """How much longer the profiled ops take on the target than their class's roof and below-roof time scaled say,
    where that would beat one of their roofs there (OpRoof.on: the roofs at the target's datasheet rates, as the
    step's ceiling check); (math, memory) by the roof that binds; zeros for a split without ops (the counts basis)
    or a target without datasheet rates (the source itself)."""
    if not split.ops or not target.peak_flops_per_s or not target.peak_bytes_per_s:
        return 0.0, 0.0
    bytes_ratio = source.bytes_per_s / target.bytes_per_s
    peak_bytes = source.bytes_per_s / target.peak_bytes_per_s
    # (rate, datasheet peak) ratios per dtype, worked out once: a plan calls this ~3000 times on ~10 ops each
    ratios = {dtype: (_flops_ratio(dtype, source.flops_per_s, target.flops_per_s),
                      _flops_ratio(dtype, source.flops_per_s, target.peak_flops_per_s))
              for dtype in {op.dtype for op in split.ops}}
    math = memory = 0.0
    for op in split.ops:
        flops_ratio, peak_flops = ratios[op.dtype]
        scaled = op.scaled_on(flops_ratio, bytes_ratio, target.sm_time_ratio)
        extra = max(0.0, op.floor(peak_flops, peak_bytes) - scaled)
        if op.math * peak_flops > op.memory * peak_bytes:
            math += extra
        else:
            memory += extra
    return math, memory


def _flops_ratio(dtype: str | None, source: dict[str, float], target: dict[str, float]) -> float:
    """target / source time of matmuls of `dtype` (each side's FLOP/s by dtype); 1 for an op without FLOPs or a dtype
    a side has no rate for (its math roof then stays the source's: an op whose FLOPs count in a dtype the ceilings
    did not time)."""
    if dtype is None or dtype not in source or dtype not in target:
        return 1.0
    return source[dtype] / target[dtype]


def step_scale(split: StepSplit, host: float, gpu: float) -> float:
    """The step from its scaled GPU parts and the hosts' ratio: the slower of the two pipelines where the host
    limits the step (it issues while the GPU runs), else the GPU parts plus the host's idle share."""
    if host_limited(split):
        return max((split.host_issue or 0.0) * host, gpu)
    return split.host * host + gpu


def target_bound(split: StepSplit, source: Rates, target: Rates, floors: tuple[float, float] | None = None) -> Bound:
    """The bound of the step on the target: each class's time scaled as `scale_factor` scales it (its roof part
    by its roof's ratio, its below-roof part by the SM cycles), the host by the hosts' dispatch speed."""
    sm = target.sm_time_ratio
    math_roof, memory_roof, latency = roof_parts(split, source, target)
    math_floor, memory_floor = floors if floors is not None else op_floor(split, source, target)
    shares = {"math": math_roof + max(0.0, split.math_class - sum(split.math_roof.values())) * sm + math_floor,
              "memory": memory_roof + max(0.0, split.memory_class - split.memory_roof) * sm + memory_floor,
              "latency": latency}
    if split.unattributed > 1e-9:
        shares["unattributed"] = split.unattributed * sm
    gpu = sum(shares.values())
    host = host_ratio(source, target)
    total = step_scale(split, host, gpu)
    shares = {"host": (total - gpu) / total, **{k: v / total for k, v in shares.items()}}
    basis = f"{split.basis}, each part scaled to the target"
    issue = (split.host_issue or 0.0) * host if host_limited(split) else 0.0
    if issue > HOST_MARGIN * gpu:
        return Bound("host", issue / total, shares, f"{basis}; the host's issue time sets the step")
    name = max(shares, key=shares.__getitem__)
    return Bound(name, shares[name], shares, basis)


def host_ratio(source: Rates, target: Rates) -> float:
    """How much longer the target's host takes to issue the same kernels: measured on real steps of both where
    that was (`host_time_ratio`), else the ratio of the two hosts' dispatch benchmark; 1 (the source's host)
    where neither was measured."""
    if target.host_time_ratio is not None:
        return target.host_time_ratio
    if source.host_kernel_s and target.host_kernel_s:
        return target.host_kernel_s / source.host_kernel_s
    return 1.0


def _cuda(spec: GpuSpec | None) -> bool:
    """An NVIDIA GPU (cuDNN's kernels): a numeric compute capability; no spec (the source itself) counts as one."""
    return spec is None or (spec.compute_capability or "")[:1].isdigit()


def ceiling_floor_s(point: WorkloadPoint, target_spec: GpuSpec, precision: str | None = None) -> float:
    """The shortest step the target's datasheet allows for the point's counted FLOPs and bytes (run in
    `precision` there, the point's own by default)."""
    run = precision or point.precision
    rate = target_spec.flops_per_s.get(run, float("inf"))
    work = winograd.counted_work(point) if winograd.on_cuda_cores(point.precision, run, _cuda(target_spec)) else 1.0
    flops = (point.flops_per_step or 0.0) * work / rate
    traffic = (point.traffic.total_bytes if point.traffic else 0.0) / target_spec.memory_bandwidth_bytes_per_s
    return max(flops, traffic)


# One empty list for every point predicted without profiles: split.py memoizes splits by the list's identity, and a
# new list per call took a slot of its memo each time (a stand-in target evicted the machine's own splits)
NO_ROOFLINES: list[RooflinePayload] = []


def predict_point(point: WorkloadPoint, payload: WorkloadPayload, source: Rates, target: Rates,
                  same_architecture: bool, rooflines: list[RooflinePayload] | None = None,
                  target_spec: GpuSpec | None = None) -> Prediction | None:
    """The point's step on the target, in the precision the target runs it in (`run_precision`: a bf16 step
    runs in fp16 on a V100); None where a ratio is missing (e.g. no half precision at all on the target)."""
    fractions = count_fractions(point, payload, source)
    run = run_precision(point.precision, target.flops_per_s)
    if fractions is None or run not in target.flops_per_s or not target.bytes_per_s:
        return None
    if run != point.precision:  # the step's matmuls of the measured precision run at the stand-in's rate there
        # (its counted FLOPs at their rate there: on CUDA cores cuDNN's Winograd does fewer of them, winograd.py)
        k = winograd.counted_work(point) if winograd.on_cuda_cores(point.precision, run, _cuda(target_spec)) else 1.0
        peak = target.peak_flops_per_s
        target = replace(target, flops_per_s={**target.flops_per_s, point.precision: target.flops_per_s[run] / k},
                         peak_flops_per_s={**peak, point.precision: peak[run] / k} if peak and run in peak else peak)
    # A stand-in run (tf32 work as plain fp32 on a V100) takes the counts basis: an op its tf32 profile found
    # memory-bound can be math-bound at the fp32 rate, which a per-class split at tf32 cannot show.
    profiles = (rooflines or NO_ROOFLINES) if run == point.precision else NO_ROOFLINES
    split = split_point(point, profiles, payload.workload, *fractions)
    floors = op_floor(split, source, target)
    scale = scale_factor(split, source, target, floors)
    if scale is None:
        return None
    step = point.step_s.median * scale  # type: ignore[union-attr]
    floor = ceiling_floor_s(point, target_spec, run) if target_spec else 0.0
    return Prediction(payload.workload, run, point.batch, point.variant, point.seq_len,
                      point.step_s.median, max(step, floor), point.batch / max(step, floor),  # type: ignore[union-attr]
                      bound_of(split), split, ceiling_limited=floor > step, same_architecture=same_architecture,
                      bound_on_target=target_bound(split, source, target, floors),
                      measured_precision=point.precision if run != point.precision else None, rate_basis=target.basis)


def iter_predictions(payload: WorkloadPayload, source: Rates, target: Rates, same_architecture: bool,
                     rooflines: list[RooflinePayload] | None = None,
                     target_spec: GpuSpec | None = None) -> list[Prediction]:
    """Every timed point of the workload (sweep, trials, sequence), once per configuration on the target: a
    point measured in the precision the target runs comes before a stand-in for it (fp16 measured beats
    bf16 run as fp16 on a V100)."""
    points = [p for p in payload.points if p.status == "ok" and p.sweep not in ("probe", "repeat")]
    own = [p for p in points if run_precision(p.precision, target.flops_per_s) == p.precision]
    stand_ins = [p for p in points if run_precision(p.precision, target.flops_per_s) != p.precision]
    seen, out = set(), []
    for point in own + stand_ins:
        key = (run_precision(point.precision, target.flops_per_s), point.batch, point.variant, point.seq_len)
        if key in seen:
            continue
        seen.add(key)
        prediction = predict_point(point, payload, source, target, same_architecture, rooflines, target_spec)
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


def source_bound(point: WorkloadPoint, payload: WorkloadPayload, ceilings: CeilingsPayload | None,
                 rooflines: list[RooflinePayload]) -> Bound | None:
    """What bounds a measured point, from the same split its predictions scale: the plan, the workload
    verdict and the roofline section all read this one."""
    if ceilings is None:
        return None
    fractions = count_fractions(point, payload, measured_rates(ceilings))
    if fractions is None:
        return None
    return bound_of(split_point(point, rooflines, payload.workload, *fractions))
