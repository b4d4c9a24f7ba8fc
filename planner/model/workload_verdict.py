"""What bounds a workload, said in plain words with the figures that decided it.

The judged point is the main batch (the batch of the `variant` points) at the best precision: the
highest throughput among the default-variant points at that batch. The evidence:

- f, the achieved fraction of the measured matmul FLOP/s ceiling of that precision (FLOPs counted
  per op by FlopCounterMode);
- b, the achieved fraction of the measured copy bandwidth, from the traffic model's bytes (a floor:
  it counts each saved activation once each way, not every intermediate an un-fused op writes);
- the gain at the main batch: throughput gain from doubling it (main → 2·main, else main/2 → main),
  and the gain of the batch sweep's last doubling at that precision; when that precision was not swept
  (the standard profile sweeps bf16 only, and tf32 may be the fastest at the main batch), the swept
  precision's doublings stand in, and the verdict says so: a step's fixed costs (launches, Python) do not
  depend on the precision, so how throughput grows with the batch is the device's answer either way;
- memory headroom: 1 − peak allocated / GPU memory at the judged point, and the OOM boundary;
- the fusion gain: the `compile` variant's throughput over the default's, same precision and batch.

Rules, first match wins:

1. capacity-bound: the main batch does not fit; or under 10% of GPU memory is left at it; or the
   sweep ran out of memory while its last doubling still gained ≥ 10% (memory stops the batch before
   throughput stops growing).
2. launch/latency-bound: doubling the main batch still gains ≥ 60% throughput (ideal: 100%), so the
   step's fixed costs (kernel launches, Python, synchronisation) dominate a small step.
3. undetermined: neither fraction was measured (no ceilings document when the workload ran).
4. compute-bound if f ≥ 50% and f ≥ b; memory-bandwidth-bound if b ≥ 50% and b > f.
   Where the step's split is known (planner/model/bound.py: the per-op roofline of the configuration, else
   the FLOP/byte counts), rules 3–6 give way to it: the bound is the split's largest share (math →
   compute-bound, memory → memory-bandwidth-bound, latency or host → launch/latency-bound), the one the
   plan and the roofline section show. Rules 1–2 stand: they read the batch sweep and memory, not the split.
5. undetermined: below both ceilings with no batch sweep (the quick profile measures one point), so
   nothing tells a saturated device from one that waits on launches.
6. below both ceilings: memory-bandwidth-bound if torch.compile, which fuses element-wise operations
   (removing memory traffic, not FLOPs), is ≥ 1.2× faster; otherwise the larger of f and b decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.model.bound import Bound
from planner.units import format_bytes, format_duration, format_number, format_percent, unit_label

PLATEAU_GAIN = 0.10   # a doubling of the batch that gains less than this: throughput has plateaued
LINEAR_GAIN = 0.60    # a doubling that still gains this much: throughput grows nearly linearly
HEADROOM_MIN = 0.10   # less GPU memory than this left at the main batch: capacity
NEAR_CEILING = 0.50   # at least this fraction of a ceiling: bound by it
FUSION_GAIN = 1.20    # torch.compile at least this much faster: un-fused memory traffic
BOUNDS = ("capacity-bound", "launch/latency-bound", "compute-bound", "memory-bandwidth-bound", "undetermined")


@dataclass(frozen=True)
class BoundEvidence:
    """The figures the rules read, for one judged point."""

    fits: bool
    flops_fraction: float | None = None
    bytes_fraction: float | None = None
    gain: float | None = None                  # doubling at the main batch
    last_gain: float | None = None             # the batch sweep's last doubling
    ran_out_of_memory: bool = False            # the sweep ended at an OOM (not at the profile's cap)
    headroom: float | None = None
    fusion_gain: float | None = None
    gain_precision: str | None = None          # the swept precision the gains come from, when not the judged one


@dataclass(frozen=True)
class Verdict:
    bound: str             # one of BOUNDS
    reason: str            # one sentence: why, with the deciding figures
    evidence: list[str]    # every figure the rules looked at, one line each
    precision: str | None = None
    batch: int | None = None


def classify(e: BoundEvidence) -> str:
    """The module docstring's rules, in order."""
    if not e.fits or (e.headroom is not None and e.headroom < HEADROOM_MIN) or (
            e.ran_out_of_memory and e.last_gain is not None and e.last_gain >= PLATEAU_GAIN):
        return "capacity-bound"
    if e.gain is not None and e.gain >= LINEAR_GAIN:
        return "launch/latency-bound"
    if e.flops_fraction is None and e.bytes_fraction is None:
        return "undetermined"
    f, b = e.flops_fraction or 0.0, e.bytes_fraction or 0.0
    if max(f, b) < NEAR_CEILING and e.gain is None and e.last_gain is None:
        return "undetermined"
    if max(f, b) < NEAR_CEILING and e.fusion_gain is not None and e.fusion_gain >= FUSION_GAIN:
        return "memory-bandwidth-bound"
    return "compute-bound" if f >= b else "memory-bandwidth-bound"


def main_batch(payload: WorkloadPayload) -> int | None:
    """The batch the trials ran at: the `variant` points' (else the first batch-sweep point's)."""
    point = next((p for p in payload.points if p.sweep == "variant"), None) or \
        next((p for p in payload.points if p.sweep == "batch"), None)
    return point.batch if point else None


def gpu_memory_bytes(machine: MachineResults) -> int | None:
    env = machine.environment
    return env.gpus[0].memory_bytes if env and env.gpus else None


def judged_point(payload: WorkloadPayload, main: int) -> WorkloadPoint | None:
    """The fastest default-variant point at the main batch (a variant trial over a sweep point)."""
    ok = [p for p in payload.points if p.batch == main and p.variant == "default" and p.status == "ok"
          and p.seq_len is None and p.throughput_per_s and p.sweep in ("variant", "batch")]
    ok.sort(key=lambda p: p.sweep != "variant")
    return max(ok, key=lambda p: p.throughput_per_s, default=None)


def sweep_throughput(payload: WorkloadPayload, precision: str) -> dict[int, float]:
    return {p.batch: p.throughput_per_s for p in payload.points
            if p.sweep == "batch" and p.precision == precision and p.status == "ok" and p.throughput_per_s}


def gain_at(thr: dict[int, float], batch: int) -> tuple[int, int, float] | None:
    """(from, to, gain) for the doubling from `batch`, else the doubling into it."""
    for low in (batch, batch // 2 if batch % 2 == 0 else 0):
        if low in thr and 2 * low in thr:
            return low, 2 * low, thr[2 * low] / thr[low] - 1
    return None


def last_gain(thr: dict[int, float]) -> tuple[int, int, float] | None:
    top = max((b for b in thr if b % 2 == 0 and b // 2 in thr), default=None)
    return None if top is None else (top // 2, top, thr[top] / thr[top // 2] - 1)


def fusion_gain(payload: WorkloadPayload, point: WorkloadPoint) -> float | None:
    compiled = next((p for p in payload.points if p.sweep == "variant" and p.variant == "compile"
                     and p.precision == point.precision and p.batch == point.batch and p.throughput_per_s), None)
    return compiled.throughput_per_s / point.throughput_per_s if compiled else None


def swept(payload: WorkloadPayload, precision: str) -> tuple[str, dict[int, float]]:
    """The batch sweep at `precision`, else at the precision that was swept (bf16 first): (precision, sweep)."""
    thr = sweep_throughput(payload, precision)
    if thr:
        return precision, thr
    others = sorted({p.precision for p in payload.points if p.sweep == "batch"}, key=lambda d: (d != "bf16", d))
    for other in others:
        if thr := sweep_throughput(payload, other):
            return other, thr
    return precision, {}


def gather_evidence(payload: WorkloadPayload, point: WorkloadPoint, gpu_memory: int | None) -> BoundEvidence:
    gain_precision, thr = swept(payload, point.precision)
    here, last = gain_at(thr, point.batch), last_gain(thr)
    boundary = payload.boundary(point.precision)
    peak = point.memory.peak_allocated_bytes if point.memory else None
    return BoundEvidence(
        fits=True, flops_fraction=point.achieved_flops_fraction, bytes_fraction=point.achieved_bytes_fraction,
        gain=here[2] if here else None, last_gain=last[2] if last else None,
        ran_out_of_memory=bool(boundary and boundary.first_oom_batch and not boundary.capped),
        headroom=1 - peak / gpu_memory if peak and gpu_memory else None, fusion_gain=fusion_gain(payload, point),
        gain_precision=gain_precision if gain_precision != point.precision else None)


def build_verdict(payload: WorkloadPayload, gpu_memory: int | None,
                  bound_of_point: Callable[[WorkloadPoint], Bound | None] | None = None) -> Verdict:
    """The verdict; `bound_of_point` gives the judged point's split bound (planner/model/bound.py) where
    the caller has the machine's ceilings and rooflines."""
    main = main_batch(payload)
    point = judged_point(payload, main) if main else None
    if point is None:
        oom = main is not None and any(p.batch == main and p.status == "oom" for p in payload.points)
        reason = (f"the main batch ({main}) ran out of memory at every precision tried" if oom
                  else "no point at the main batch ran, so there is nothing to judge")
        return Verdict("capacity-bound" if oom else "undetermined", reason, [], None, main)
    e = gather_evidence(payload, point, gpu_memory)
    bound, lines = classify(e), evidence_lines(payload, point, gpu_memory)
    split = bound_of_point(point) if bound_of_point else None
    if split is not None:
        lines.append(f"Split of the step: {split.describe()}.")
    if split is not None and split.name != "unattributed" and bound not in ("capacity-bound", "launch/latency-bound"):
        return Verdict(split.verdict_name, f"the step's largest part is {split.describe()}", lines,
                       point.precision, point.batch)
    return Verdict(bound, explain(bound, e), lines, point.precision, point.batch)


def _pct(value: float | None) -> str:
    return format_percent(value)


def _signed(gain: float) -> str:
    return ("+" if gain >= 0 else "") + format_percent(gain)


def explain(bound: str, e: BoundEvidence) -> str:
    """One sentence saying why the rule that matched did."""
    f, b = _pct(e.flops_fraction), _pct(e.bytes_fraction)
    if bound == "capacity-bound":
        if e.headroom is not None and e.headroom < HEADROOM_MIN:
            return f"only {_pct(e.headroom)} of GPU memory is left at the main batch"
        return (f"memory runs out while a doubling of the batch still gains {_signed(e.last_gain or 0)} "
                "throughput: more memory would buy more throughput")
    if bound == "launch/latency-bound":
        at = f" (in the {e.gain_precision} sweep)" if e.gain_precision else ""
        return (f"doubling the batch{at} still gains {_signed(e.gain or 0)} throughput (ideal: +100%): fixed "
                "per-step costs (kernel launches, Python, synchronisation) dominate; a larger batch is nearly free")
    if bound == "undetermined" and e.flops_fraction is None and e.bytes_fraction is None:
        return "no ceilings were measured when this ran, so the fractions that tell compute from memory are missing"
    if bound == "undetermined":
        return (f"one point and no batch sweep: neither ceiling is half reached ({f} of FLOP/s, {b} of bytes/s "
                "by the estimate), and without a sweep nothing tells a saturated device from one waiting on "
                "launches; the standard profile would tell")
    if max(e.flops_fraction or 0, e.bytes_fraction or 0) >= NEAR_CEILING:
        return f"the step reaches {f} of the matmul FLOP/s ceiling and {b} of the copy bandwidth (estimated)"
    gain = e.gain if e.gain is not None else e.last_gain
    at = f" (in the {e.gain_precision} sweep)" if e.gain_precision else ""
    below = (f"doubling the batch{at} changes throughput by only {_signed(gain or 0)}, below both ceilings "
             f"({f} of FLOP/s, {b} of bytes/s by the estimate)")
    if bound == "memory-bandwidth-bound" and e.fusion_gain and e.fusion_gain >= FUSION_GAIN:
        return (f"{below}, and torch.compile, which fuses element-wise operations and so removes memory traffic, "
                f"not FLOPs, is {format_number(e.fusion_gain)}× faster: memory traffic that the estimate does not "
                "count bounds the step")
    return f"{below}; the {'FLOP/s' if bound == 'compute-bound' else 'bytes/s'} fraction is the larger"


def evidence_lines(payload: WorkloadPayload, point: WorkloadPoint, gpu_memory: int | None) -> list[str]:
    unit = unit_label(payload.unit)
    tokens = f" ({format_number(point.tokens_per_s)} tokens/s)" if point.tokens_per_s else ""
    lines = [f"Throughput at {point.precision}, batch {point.batch}: {format_number(point.throughput_per_s)} "
             f"{unit}/s{tokens}, step {format_duration(point.step_s.median)}."]
    if point.achieved_flops_fraction is not None or point.achieved_bytes_fraction is not None:
        lines.append(f"Achieved {_pct(point.achieved_flops_fraction)} of the measured {point.precision} matmul "
                     f"FLOP/s ceiling and {_pct(point.achieved_bytes_fraction)} of the copy bandwidth (bytes "
                     "from the traffic estimate, a floor).")
    lines += scaling_lines(payload, point) + memory_lines(payload, point, gpu_memory)
    gain = fusion_gain(payload, point)
    if gain:
        lines.append(f"torch.compile: {format_number(gain)}× the default throughput at the same batch.")
    return lines + sequence_lines(payload)


def scaling_lines(payload: WorkloadPayload, point: WorkloadPoint) -> list[str]:
    """The doubling at the main batch and the sweep's last doubling (once, when they are the same)."""
    precision, thr = swept(payload, point.precision)
    found = [g for g in (gain_at(thr, point.batch), last_gain(thr)) if g]
    lines = []
    for low, high, gain in dict.fromkeys(found):
        plateau = " (a plateau: under 10%)" if gain < PLATEAU_GAIN else ""
        lines.append(f"Doubling the batch at {precision} from {low} to {high} changes throughput by "
                     f"{_signed(gain)}{plateau}.")
    return lines


def memory_lines(payload: WorkloadPayload, point: WorkloadPoint, gpu_memory: int | None) -> list[str]:
    lines = []
    peak = point.memory.peak_allocated_bytes if point.memory else None
    if peak:
        share = f": {_pct(peak / gpu_memory)} of the {format_bytes(gpu_memory)} GPU" if gpu_memory else ""
        lines.append(f"Peak allocated at batch {point.batch}: {format_bytes(peak)}{share}.")
    b = payload.boundary(point.precision)
    if b and b.max_batch and b.capped:
        lines.append(f"No OOM at {point.precision} up to the profile's cap, batch {b.max_batch}.")
    elif b and b.max_batch:
        lines.append(f"Largest batch that fits at {point.precision}: {b.max_batch} "
                     f"(batch {b.first_oom_batch} runs out of memory).")
    return lines


def sequence_lines(payload: WorkloadPayload) -> list[str]:
    """Sequence length is its own question: where it runs out of memory, capacity bounds the context."""
    seq = [p for p in payload.points if p.sweep == "sequence" and p.seq_len]
    fits = [p for p in seq if p.status == "ok"]
    oom = next((p for p in seq if p.status == "oom"), None)
    if not fits or oom is None:
        return []
    top = max(fits, key=lambda p: p.seq_len)
    peak = f" ({format_bytes(top.memory.peak_allocated_bytes)} peak)" if top.memory else ""
    return [f"Sequence length at batch {top.batch} is capacity-bound: {top.seq_len} tokens fit{peak}, "
            f"{oom.seq_len} runs out of memory."]
