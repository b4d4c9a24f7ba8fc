"""One bound per configuration, from the split of its step (planner/model/split.py), read by the plan, the
report's workload verdict and its roofline section alike, so that they cannot disagree.

The bound is the part that takes the largest share of the step:

    host      the GPU waits on the host (time in no op, or step − GPU-busy time)
    math      math-bound ops (matmuls, convolutions at the tensor-core roof), their whole time
    memory    memory-bound ops, their whole time
    latency   latency-bound ops (launch-sized)
    unattributed  (counts basis only) time below both roofs whose op class nothing measured

A share of at least DECISIVE (50%) names the bound outright ("decisive"); below it the bound is still
the largest share and the plan says "mixed" beside it, with the two largest shares.

Where the point measured both the host's time to issue a step and the GPU's busy time (workloads
collector 3), the slower of the two sets the step: a host that takes HOST_MARGIN × longer to issue the
step than the GPU is busy makes it host-bound, its share the issue time over the step, whatever the
largest class of the GPU's time: by the largest share such a step may look memory-bound, yet a faster
GPU would not shorten it. The margin keeps a balanced step, where the issue time only waits on a full
launch queue, with its GPU bound (the cases behind both: docs/history.md, "Host-bound steps").
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.split import StepSplit

DECISIVE = 0.50
HOST_MARGIN = 1.1


@dataclass(frozen=True)
class Bound:
    name: str                    # host, math, memory, latency or unattributed
    share: float                 # of the step
    shares: dict[str, float]     # every part, for the evidence
    basis: str                   # where the split came from

    @property
    def decisive(self) -> bool:
        return self.share >= DECISIVE

    def describe(self) -> str:
        """'math-bound (61% of the step; memory 38%), from roofline bf16 batch 32'."""
        ranked = sorted(self.shares.items(), key=lambda kv: kv[1], reverse=True)
        second = f"; {ranked[1][0]} {ranked[1][1]:.0%}" if len(ranked) > 1 else ""
        mixed = "" if self.decisive else "mixed, largest "
        return f"{mixed}{self.name}-bound ({self.share:.0%} of the step{second}), from {self.basis}"

    def to_dict(self) -> dict:
        return {"name": self.name, "share": self.share, "decisive": self.decisive, "basis": self.basis,
                "shares": self.shares}


def bound_of(split: StepSplit) -> Bound:
    shares = {"host": split.host, "math": split.math_class, "memory": split.memory_class, "latency": split.latency}
    if split.unattributed > 1e-9:
        shares["unattributed"] = split.unattributed
    if host_limited(split):
        shares["host"] = min(1.0, split.host_issue or 0.0)
        return Bound("host", shares["host"], shares, f"{split.basis}; the host's measured issue time sets the step")
    name = max(shares, key=shares.__getitem__)
    return Bound(name, shares[name], shares, split.basis)


def host_limited(split: StepSplit) -> bool:
    """The host takes longer to issue the step than the GPU is busy with it, by HOST_MARGIN."""
    return split.host_issue is not None and split.host_issue > HOST_MARGIN * split.gpu_busy
