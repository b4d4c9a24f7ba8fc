"""What a workload's per-op roofline says: time share by class, the ops that lose the most time
against their roof, and what to do about each class.

The share of a class is its ops' measured time over the step: the step timed without the profiler,
or the ops' own total where that is larger (on a CPU the profiler slows every op, so the profiled
ops can add up to more than the plain step). The rest of the step, "outside ops", is time in no op:
on a GPU the device idles there, waiting for Python, launches or a synchronisation.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import OpRoofline, RooflinePayload

CLASSES = ("math-bound", "memory-bound", "latency-bound", "unclassified")
OUTSIDE = "outside ops"
ADVICE = {
    "math-bound": "Lower precision raises the roof: bf16 or fp16 where fp32 still runs, fp8 matmuls "
                  "(torch._scaled_mm, Transformer Engine) past bf16; keep matmul dimensions multiples of 16 so the "
                  "tensor-core kernels apply. Beyond that, only fewer FLOPs help.",
    "memory-bound": "Fuse: each of these ops reads and writes its tensors in device memory. torch.compile fuses "
                    "chains of elementwise and normalisation ops into one kernel, so intermediates never reach memory; "
                    "keep activations in 16 bits and drop needless casts (aten::_to_copy).",
    "latency-bound": "Do more work per launch: a larger batch, CUDA graphs (torch.compile(mode=\"reduce-overhead\") "
                     "or torch.cuda.CUDAGraph) to replay the step's kernels without Python, and fewer tiny ops "
                     "(foreach or fused optimizers, torch.compile).",
    "unclassified": "No roof applies to these ops: collect this machine's ceilings, then the roofline again.",
    OUTSIDE: "Time in no op, where the GPU waits on Python, launches or synchronisation: CUDA graphs or "
             "torch.compile remove it, a larger batch spreads it over more samples.",
}


@dataclass(frozen=True)
class ClassShare:
    name: str          # an op class, or OUTSIDE
    time_s: float      # per step
    fraction: float    # of the step
    ops: int


@dataclass(frozen=True)
class Advice:
    name: str
    fraction: float
    text: str
    ops: list[str]     # the class's longest ops, for the reader to look at first


def step_total_s(payload: RooflinePayload) -> float:
    plain = payload.step_s.median if payload.step_s else 0.0
    return max(plain, payload.op_time_s)


def class_shares(payload: RooflinePayload) -> list[ClassShare]:
    """Time per step by class, in CLASSES order, then outside ops; classes without ops left out."""
    total = step_total_s(payload)
    if total <= 0:
        return []
    shares = []
    for name in CLASSES:
        ops = [op for op in payload.ops if op.op_class == name]
        if ops:
            time_s = sum(op.time_s.median for op in ops)
            shares.append(ClassShare(name, time_s, time_s / total, len(ops)))
    outside = total - payload.op_time_s
    if outside > 0:
        shares.append(ClassShare(OUTSIDE, outside, outside / total, 0))
    return shares


def rank_by_time_lost(ops: list[OpRoofline]) -> list[OpRoofline]:
    """Ops by time lost against their roof, most first; ops without a roof after them, longest first."""
    judged = sorted((op for op in ops if op.lost_s is not None), key=lambda op: op.lost_s, reverse=True)
    return judged + [op for op in ops if op.lost_s is None]


def build_advice(payload: RooflinePayload, shares: list[ClassShare], examples: int = 3) -> list[Advice]:
    """One piece of advice per class present, the largest share first."""
    advice = []
    for share in sorted(shares, key=lambda s: s.fraction, reverse=True):
        ops = [op.name for op in payload.ops if op.op_class == share.name][:examples]
        advice.append(Advice(share.name, share.fraction, ADVICE[share.name], ops))
    return advice
