"""What bounds a workload at the batch the plan recommends, judged where the user will run it.

The bound of a step changes with the batch: ViT-B/16 on an H100 waits on the host at batch 8 and keeps the GPU
busy at 512. So the judgement reads evidence of the judged batch itself, in this order:

1. A per-operation profile (a roofline document) within NEAR× of the batch: the step's split there
   (planner/model/split.py, interpolated between profiled batches), with the host's share measured at the
   batch itself where the workloads collector timed it; its largest part is the bound (planner/model/bound.py).
2. Otherwise the batch sweep's step scaling around the batch: a step that grows with the batch
   (elasticity ≥ GPU_ELASTICITY: step ∝ batch^e) is set by the GPU, and the point's FLOP and byte counts say
   whether by math or by memory; a step that stays flat (e ≤ HOST_ELASTICITY) is set by the host.
3. Otherwise undetermined, with what would decide it.

The judgement says which of these decided it, so that every screen can say how it was judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from gpuplan_schema.payloads import RooflinePayload, WorkloadPayload, WorkloadPoint
from planner.model.bound import bound_of
from planner.model.performance import Prediction, Rates, count_fractions
from planner.model.split import HALF_SIBLING, PLAIN_VARIANTS, interpolate, roofline_splits, with_measured_host
from planner.model.workload_verdict import plain_point  # noqa: F401 - re-exported
from planner.plan.bounds import PART_KIND, BoundKind
from planner.units import format_count

NEAR = 2.0              # a profile describes batches within this factor of its own
GPU_ELASTICITY = 0.75   # step ∝ batch^e: at least this, the GPU's work sets the step
HOST_ELASTICITY = 0.35  # at most this, the step is a fixed cost: the host sets it
COUNT_CLASS = 0.15      # a counted FLOP or byte fraction below this names no class


@dataclass(frozen=True)
class Judgement:
    """The bound of one configuration, the parts of its step where known, and how it was judged."""

    kind: BoundKind
    batch: int | None
    precision: str | None
    how: str                                                # one clause: what decided it
    shares: dict[str, float] = field(default_factory=dict)  # parts of the step (math, memory, host, latency, …)
    basis: str = "none"     # profile, scaling, predicted, input or none: which evidence decided it

    @property
    def label(self) -> str:
        return self.kind.label

    @property
    def hint(self) -> str:
        return self.kind.hint

    @property
    def parts(self) -> str:
        """'61% math, 38% memory, 1% host' (largest first), empty where the split is unknown."""
        ranked = sorted(((k, v) for k, v in self.shares.items() if v >= 0.005), key=lambda kv: -kv[1])
        return ", ".join(f"{v:.0%} {k}" for k, v in ranked)

    @property
    def words(self) -> str:
        """'compute-bound (61% math, 38% memory, 1% host)': the bound with the parts of the step."""
        return f"{self.label} ({self.parts})" if self.parts else self.label

    @property
    def sentence(self) -> str:
        return f"{self.words}: {self.how}"

    def to_dict(self) -> dict:
        return {"bound": self.kind.value, "label": self.label, "batch": self.batch, "precision": self.precision,
                "how": self.how, "basis": self.basis, "shares": self.shares}


def elasticity(payload: WorkloadPayload, precision: str, batch: int) -> tuple[float, int, int] | None:
    """(e, low, high): how the sweep's step grows from the measured batch below `batch` to `batch` (or from
    `batch` to the one above, at the bottom of the sweep), as step ∝ batch^e."""
    steps = {p.batch: p.step_s.median for p in payload.points if p.sweep == "batch" and p.precision == precision
             and p.status == "ok" and p.step_s and p.seq_len is None and p.variant in PLAIN_VARIANTS}
    below = [b for b in steps if b < batch]
    above = [b for b in steps if b > batch]
    if batch not in steps or not (below or above):
        return None
    low, high = (max(below), batch) if below else (batch, min(above))
    return math.log(steps[high] / steps[low]) / math.log(high / low), low, high


def profiled_split(payload: WorkloadPayload, point: WorkloadPoint, rooflines: list[RooflinePayload]):  # noqa: ANN201
    """The split of the point from profiles within NEAR× of its batch, and the profiled batches used."""
    for precision in (point.precision, HALF_SIBLING.get(point.precision)):
        splits = roofline_splits(rooflines, payload.workload, precision) if precision else {}
        near = {b: s for b, s in splits.items() if b / NEAR <= point.batch <= b * NEAR}
        if near:
            return with_measured_host(interpolate(near, point.batch), point), sorted(near)  # type: ignore[arg-type]
    return None, []


def judge(payload: WorkloadPayload, batch: int, precision: str, rooflines: list[RooflinePayload],
          rates: Rates | None) -> Judgement:
    """The bound of the plain run of (precision, batch) on the measured GPU (module docstring)."""
    point = plain_point(payload, batch, precision)
    if point is None:
        return Judgement(BoundKind.UNDETERMINED, batch, precision,
                         f"no {precision} run at batch {format_count(batch)} was measured")
    split, profiled = profiled_split(payload, point, rooflines)
    if split is not None:
        bound = bound_of(split)
        how = "predicted from the trace" if payload.from_trace else "measured"
        host = f"; the host's share {how} at this batch" if split.host_measured else ""
        at = " and ".join(format_count(b) for b in profiled)
        profile = "the per-operation times predicted from the trace" if payload.from_trace else \
            "the per-operation profile"
        return Judgement(PART_KIND[bound.name], batch, precision, f"from {profile} at batch {at}{host}",
                         dict(bound.shares), "profile")
    return judge_by_scaling(payload, point, rates, rooflines)


def nearest_gpu_class(payload: WorkloadPayload, point: WorkloadPoint, rooflines: list[RooflinePayload]
                      ) -> tuple[BoundKind, str] | None:
    """Where the step scaling says the GPU sets the step but the counts name no class: the largest class of the
    GPU's time in the nearest profile, however far (the class of an op changes less with the batch than the
    host's share does)."""
    splits = roofline_splits(rooflines, payload.workload, point.precision)
    if not splits:
        return None
    batch = min(splits, key=lambda b: abs(math.log(b / point.batch)))
    split = splits[batch]
    classes = {BoundKind.MATH: split.math_class, BoundKind.MEMORY: split.memory_class, BoundKind.LATENCY: split.latency}
    kind = max(classes, key=classes.__getitem__)
    gpu = sum(classes.values()) or 1.0
    return kind, f"; the nearest per-operation profile (batch {batch}) spends {classes[kind] / gpu:.0%} of the " \
                 f"GPU's time in {kind.value}-bound operations"


def judge_by_scaling(payload: WorkloadPayload, point: WorkloadPoint, rates: Rates | None,
                     rooflines: list[RooflinePayload] = ()) -> Judgement:
    scaling = elasticity(payload, point.precision, point.batch)
    if scaling is None:
        return Judgement(BoundKind.UNDETERMINED, point.batch, point.precision,
                         f"no per-operation profile within {NEAR:g}× of batch {point.batch} and no batch sweep around "
                         "it; `gpuplan collect --only roofline` decides it")
    e, low, high = scaling
    grew = f"the step grew {2 ** e if high == 2 * low else (high / low) ** e:.2f}× from batch {low} to {high}"
    if e <= HOST_ELASTICITY:
        return Judgement(BoundKind.HOST, point.batch, point.precision,
                         f"from the step's scaling: {grew} (a step set by the host barely grows with the batch)",
                         basis="scaling")
    fractions = count_fractions(point, payload, rates) if rates else None
    f, b = fractions or (0.0, 0.0)
    if e >= GPU_ELASTICITY:
        kind = BoundKind.UNDETERMINED if max(f, b) < COUNT_CLASS else BoundKind.MATH if f >= b else BoundKind.MEMORY
        which = "" if kind is BoundKind.UNDETERMINED else \
            f"; its counted FLOPs and bytes reach {f:.0%} of the matmul and {b:.0%} of the bandwidth ceiling"
        shares = {"math": f, "memory": b} if which else {}
        if kind is BoundKind.UNDETERMINED and (nearest := nearest_gpu_class(payload, point, rooflines)):
            kind, which = nearest
        gpu = "the GPU sets the step" + ("" if which else ", but nothing measured says whether by math or memory "
                                         "(`gpuplan collect --only roofline` profiles it)")
        return Judgement(kind, point.batch, point.precision, f"from the step's scaling: {grew}, so {gpu}{which}",
                         shares, "scaling")
    return Judgement(BoundKind.UNDETERMINED, point.batch, point.precision,
                     f"from the step's scaling: {grew}, between a fixed cost and one that grows with the batch; "
                     "a per-operation profile at this batch (`gpuplan collect --only roofline`) decides it",
                     basis="scaling")


def same_regime(a: Judgement, b: Judgement) -> bool:
    """Whether a gain measured under judgement `a` may be carried to `b`: the same batch, or both set by the GPU,
    or both by a fixed per-step cost (host or launch latency)."""
    if a.batch == b.batch and a.precision == b.precision:
        return True
    sa, sb = a.kind.gpu_sets_step, b.kind.gpu_sets_step
    return sa is not None and sa == sb


def judge_on_target(source: Judgement, prediction: Prediction, source_name: str) -> Judgement:
    """The bound on another GPU: the source's split at the batch, each part scaled to the target, where a profile
    decided it on the source; otherwise the source's judgement at that batch, carried (the step scaling that
    decided it is the source's)."""
    if source.basis != "profile":
        return replace(source, how=f"as measured on {source_name} at this batch: {source.how}")
    b = prediction.bound_there
    return Judgement(PART_KIND[b.name], prediction.batch, prediction.precision,
                     f"{source_name}'s profiled split at batch {prediction.batch}, each part scaled to this GPU",
                     dict(b.shares), "predicted")
