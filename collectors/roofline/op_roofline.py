"""Roofline of each op: the machine's roofs, the time each op would take at them, and its class.

For one call: t_math = FLOPs / peak dense matmul FLOP/s of the call's dtype (the fp32 roof is TF32's
when the run allows TF32), t_mem = bytes read + written / device copy bandwidth (copy counts bytes
read plus bytes written, as the op's bytes do). Peaks are the ceilings collector's burst peaks: the
best the machine did, so an op's efficiency is against the best case.

The calls of one op are summed per step: FLOPs, bytes, measured time, t_math, t_mem, and the
expected time, the sum over calls of max(t_math, t_mem). Efficiency = expected / measured (above
1 when caches serve bytes the model counts as moved). The class, first match wins:

1. unclassified: neither roof applies (no ceilings, or no formula and no bandwidth);
2. latency-bound: the op moves and computes nothing (a view or an allocation on a CPU; on a GPU
   such ops launch no kernel and take no device time, so they are not listed); or its expected
   time per call is under one launch latency AND its measured time per call under
   LATENCY_MULTIPLE launch latencies. Such an op is too small to reach either roof: issuing it
   from PyTorch (dispatch, launch, a kernel's fixed cost) takes longer than its work would at the
   roofs, and its measured time is of the order of that fixed cost. (A small op that takes far
   longer than a few launches is not held back by launching: it is classed by its roof and shows
   as inefficient instead.);
3. math-bound when t_math >= t_mem (intensity at or above the ridge point of its dtype);
4. memory-bound otherwise (an op without a FLOP formula is judged by its memory time alone).
"""

from __future__ import annotations

from collections import defaultdict

from collectors.roofline.op_accounting import OpCall
from gpuplan_schema.payloads import CeilingsPayload, KernelTime, OpClass, OpRoofline, RooflineRoofs
from gpuplan_schema.stats import summarize

TOP_KERNELS = 5
LATENCY_MULTIPLE = 4  # measured time per call within this many launch latencies: the fixed cost dominates


def build_roofs(ceilings: CeilingsPayload | None, device: str, source: str) -> RooflineRoofs:
    """The roofs of this machine from its ceilings document, each missing one said in `missing`."""
    if ceilings is None:
        return RooflineRoofs("absent", missing=[f"no ceilings document ({source}): no roof is known and every op "
                                                "is unclassified; run the ceilings collector first"])
    if ceilings.device != device:
        return RooflineRoofs(source, missing=[f"the ceilings were measured on {ceilings.device}, this run is on "
                                              f"{device}: none of them applies"])
    flops = {m.dtype: m.flops_per_s.median for m in ceilings.matmul if m.flops_per_s is not None}
    missing = [f"{m.dtype} matmul peak: {m.status}" + (f" ({m.reason})" if m.reason else "")
               for m in ceilings.matmul if m.flops_per_s is None]
    copy = next((b.bytes_per_s.median for b in ceilings.memory if b.name == "copy" and b.bytes_per_s), None)
    if copy is None:
        missing.append("memory copy bandwidth: not measured, so no op has a memory time")
    launch = ceilings.launch_latency_s.median if ceilings.launch_latency_s else None
    if launch is None:
        missing.append("launch latency: not measured, so no op is classed latency-bound")
    return RooflineRoofs(source, flops, copy, launch, missing)


def math_roof(roofs: RooflineRoofs, dtype: str | None, precision: str) -> float | None:
    if dtype == "fp32" and precision == "tf32":
        dtype = "tf32"
    return roofs.flops_per_s.get(dtype) if dtype else None


def call_times(call: OpCall, roofs: RooflineRoofs, precision: str) -> tuple[float | None, float | None]:
    """(t_math, t_mem) of one call; None where the roof (or the FLOP formula) is missing."""
    peak = math_roof(roofs, call.dtype, precision)
    t_math = call.flops / peak if call.flops is not None and peak else None
    bandwidth = roofs.memory_bytes_per_s
    t_mem = (call.read_bytes + call.written_bytes) / bandwidth if bandwidth else None
    return t_math, t_mem


def classify(math_s: float | None, memory_s: float | None, expected_s: float | None, measured_s: float,
             calls: float, launch_latency_s: float | None) -> OpClass:
    """The rule of this module's docstring, on one op's per-step sums."""
    if expected_s is None:
        return "unclassified"
    if expected_s == 0:
        return "latency-bound"
    if launch_latency_s is not None and calls and expected_s / calls < launch_latency_s \
            and measured_s / calls < LATENCY_MULTIPLE * launch_latency_s:
        return "latency-bound"
    if math_s is not None and (memory_s is None or math_s >= memory_s):
        return "math-bound"
    return "memory-bound" if memory_s is not None else "unclassified"


def _per_step(values: list[float | None], steps: int) -> float | None:
    """Sum over the profiled steps, per step; None when any value is unknown."""
    return None if any(v is None for v in values) else sum(values) / steps  # type: ignore[arg-type]


def _kernels(calls: list[OpCall], steps: int) -> list[KernelTime]:
    time: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for call in calls:
        for name, seconds in call.kernels:
            time[name] += seconds
            count[name] += 1
    top = sorted(time, key=time.__getitem__, reverse=True)[:TOP_KERNELS]
    return [KernelTime(name, time[name] / steps, count[name] / steps) for name in top]


def build_op(name: str, calls: list[OpCall], roofs: RooflineRoofs, precision: str, steps: int) -> OpRoofline:
    """One op's roofline from all its calls over `steps` profiled steps (figures per step)."""
    times = [call_times(c, roofs, precision) for c in calls]
    math_s = _per_step([t for t, _ in times], steps)
    memory_s = _per_step([t for _, t in times], steps)
    expected_s = _per_step([max((t for t in pair if t is not None), default=None) for pair in times], steps)
    measured = summarize([sum(c.time_s for c in calls if c.step == s) for s in range(steps)])
    calls_per_step = len(calls) / steps
    return OpRoofline(
        name=name, calls=calls_per_step, time_s=measured,
        read_bytes=sum(c.read_bytes for c in calls) / steps, written_bytes=sum(c.written_bytes for c in calls) / steps,
        op_class=classify(math_s, memory_s, expected_s, measured.median, calls_per_step, roofs.launch_latency_s),
        flops=_per_step([c.flops for c in calls], steps), dtype=max(calls, key=lambda c: c.time_s).dtype,
        math_s=math_s, memory_s=memory_s, expected_s=expected_s,
        efficiency=expected_s / measured.median if expected_s is not None and measured.median > 0 else None,
        kernels=_kernels(calls, steps))


def build_ops(calls: list[OpCall], roofs: RooflineRoofs, precision: str, steps: int) -> list[OpRoofline]:
    """Every op that took measurable time, longest first."""
    by_name: dict[str, list[OpCall]] = defaultdict(list)
    for call in calls:
        by_name[call.name].append(call)
    ops = [build_op(name, group, roofs, precision, steps) for name, group in by_name.items()]
    return sorted((op for op in ops if op.time_s.max > 0), key=lambda op: op.time_s.median, reverse=True)
