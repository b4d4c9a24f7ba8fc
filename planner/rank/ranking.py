"""Instance ranking for a job: predicted hours and dollars on every catalog instance, the
time/cost Pareto front, and the instances that cannot run the job, each with its reason.

Model-agnostic: the caller supplies `predict(gpu) -> Estimate | None`, one GPU's throughput for
the job's workload and precision and the largest batch that fits, from whatever model it has. A GPU without
the job's precision is asked too where it has the precision that stands in for it (STAND_IN: a V100 runs a
bf16 job in fp16 autocast with loss scaling); it is ranked only where the estimate says it runs that stand-in
(`Estimate.precision`), and its row says so (`RankedInstance.precision`, `stand_in_for`, STAND_IN_MARK).
This module only multiplies: instance throughput = per-GPU throughput × GPUs × data-parallel
efficiency, or what its vCPUs' loader workers feed where that is less (`feed`, planner/model/host.py);
hours = samples / throughput / 3600; cost = hours × on-demand price per hour
(no minimum billing increment, storage or egress; catalog prices, each with its date).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from planner.model.host import FeedLimit
from planner.model.performance import run_precision
from planner.rank.jobs import Job
from planner.scaling.assumed_scaling import Scaling, ScalingProvider, SyncLoad, assumed_scaling
from planner.specs import GpuSpec, InstanceSpec, load_instances

OK, DOES_NOT_FIT, UNSUPPORTED_PRECISION, NO_PREDICTION = "ok", "does_not_fit", "unsupported_precision", "no_prediction"
STATUS_ORDER = (OK, DOES_NOT_FIT, UNSUPPORTED_PRECISION, NO_PREDICTION)
SORT_KEYS = ("cost", "hours")
# Said once for the whole ranking (the plan JSON's `assumptions`), not on every row.
ASSUMPTIONS = [
    "Prices: on-demand list prices of the instance catalog, each row's price_date; no reserved or spot "
    "discount, no minimum billing increment, storage or egress.",
    "Throughput: synthetic data already on the GPU, except where the instance's vCPUs cannot feed it "
    "(limited_by = input: the source machine's measured JPEG loader rate per worker, one vCPU kept for "
    "the training process, the instance's cores assumed as fast as the source's). Each row names the host "
    "CPU its cloud documents (host_cpu); none of them was measured here, so a step the host sets (a short "
    "step that issues many small kernels) carries the spread two hosts of one GPU type measured apart in its "
    "band, not a rate derived from the CPU's name.",
    "Bands: hours_low/high and cost_low/high carry the per-GPU prediction's band (planner/check/bands.py); "
    "GPUs marked unvalidated have no published cross-architecture check.",
]


@dataclass(frozen=True)
class Estimate:
    """One GPU on the job: `samples_per_s` at per-GPU batch `batch`; `max_batch` is the largest
    per-GPU batch that fits in its memory (0: not even one sample; None: unknown); `note` says
    where the numbers come from (e.g. 'scaled from h100-80gb, compute-bound, ±6 %')."""

    samples_per_s: float
    batch: int
    max_batch: int | None
    note: str
    band_low: float = 0.0      # relative band of samples_per_s (planner/check/bands.py)
    band_high: float = 0.0
    validated: bool = True     # a published cross-architecture check covers this GPU (crossarch.py)
    parameters: int | None = None  # the model's, for the gradient its GPUs synchronise (None: unknown)
    precision: str | None = None   # what the GPU runs the job in where it lacks the job's precision (fp16 for a
                                   # bf16 job on a V100); None: the job's own
    torch_compile: bool | None = None  # the estimate is of the compiled step (None: not said)

    def __post_init__(self) -> None:
        # A bad estimate is a bug in the predictor, not bad user input: fail loudly.
        if not (math.isfinite(self.samples_per_s) and self.samples_per_s > 0):
            raise ValueError(f"Estimate.samples_per_s must be a positive number, not {self.samples_per_s!r}")
        bad_max = self.max_batch is not None and (self.max_batch < 0 or 0 < self.max_batch < self.batch)
        if self.batch < 1 or bad_max:
            raise ValueError(f"Estimate batch {self.batch} / max_batch {self.max_batch}: need 1 ≤ batch ≤ max_batch "
                             f"(max_batch 0: does not fit; None: unknown)")


UNCHECKED_MARK = "†"
UNCHECKED_WORDS = "† no published benchmark checks the prediction for this GPU"
STAND_IN_MARK = "‡"
# How a GPU runs the stand-in of a precision it lacks (the workloads' precision variants, DESIGN.md)
STAND_IN_HOW = {"fp16": "fp16 autocast with loss scaling (GradScaler)", "fp32": "plain fp32 (no TF32)"}


def stand_in_words(job_precision: str, runs: str) -> str:
    """The ‡ footnote: what a marked row runs in place of the job's precision."""
    return (f"{STAND_IN_MARK} no {job_precision} on this GPU: it runs {STAND_IN_HOW.get(runs, runs)}, the plan's "
            "answer there")

Predictor = Callable[[GpuSpec], Estimate | None]
# The input pipeline's limit on an instance (planner/model/host.py), None where none is measured.
FeedProvider = Callable[[InstanceSpec], FeedLimit | None]


def no_feed_limit(instance: InstanceSpec) -> FeedLimit | None:
    return None


@dataclass(frozen=True)
class RankedInstance:
    """One instance for the job. Figures are None unless `status` is 'ok'; `reason` always says why."""

    instance: str
    provider: str
    region: str
    gpu: str
    gpu_count: int
    status: str
    reason: str
    price_usd_per_hour: float
    price_date: str
    price_note: str | None
    batch_per_gpu: int | None = None
    max_batch_per_gpu: int | None = None
    per_gpu_samples_per_s: float | None = None
    scaling_efficiency: float | None = None
    scaling_measured: bool | None = None
    scaling_low: float | None = None    # the efficiency's band (planner/scaling/intra_node.py), None: none known
    scaling_high: float | None = None
    samples_per_s: float | None = None
    hours: float | None = None
    cost_usd: float | None = None
    pareto: bool = False
    hours_low: float | None = None      # the prediction's band carried through
    hours_high: float | None = None
    cost_low: float | None = None
    cost_high: float | None = None
    limited_by: str | None = None       # "gpu" or "input" (the CPUs cannot feed the GPUs)
    gpu_samples_per_s: float | None = None   # what the GPUs alone would do
    feed_samples_per_s: float | None = None  # what the vCPUs' loader workers feed, where measured
    validated: bool | None = None       # False: no published check covers this GPU
    host_cpu: str | None = None         # the host CPU the cloud documents (InstanceSpec.host_cpu.label)
    precision: str | None = None        # what the row runs the job in: the job's, or its stand-in; None: cannot
    stand_in_for: str | None = None     # the job's precision where the GPU lacks it and runs `precision` instead
    torch_compile: bool | None = None   # the per-GPU figure is of the compiled step (None: not said)
    loader_workers_per_gpu: int | None = None  # what the vCPUs give each GPU's loader (`feed`), where measured

    @property
    def unchecked(self) -> bool:
        """No published cross-architecture check covers this GPU: every output marks it with † (UNCHECKED_MARK)."""
        return self.validated is False

    @property
    def stand_in(self) -> str:
        """'runs fp16, no bf16' where the GPU lacks the job's precision and runs its stand-in (every output marks the
        row with ‡, STAND_IN_MARK, and says this), else ''."""
        return f"runs {self.precision}, no {self.stand_in_for}" if self.stand_in_for else ""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "unchecked": self.unchecked}


def rank_instances(job: Job, predict: Predictor, *, instances: Iterable[InstanceSpec] | None = None,
                   scaling: ScalingProvider = assumed_scaling, sort_by: str = "cost",
                   feed: FeedProvider = no_feed_limit) -> list[RankedInstance]:
    """Every instance (the catalog's by default) for the job: those that run it first, cheapest
    (or fastest, `sort_by="hours"`) first, Pareto-optimal ones flagged; then those that cannot."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {SORT_KEYS}, not {sort_by!r}")
    estimates: dict[str, Estimate | None] = {}  # one prediction per GPU model, however many instances
    ranked = []
    for instance in load_instances() if instances is None else instances:
        gpu = instance.gpu_spec
        if gpu.name not in estimates and run_precision(job.precision, gpu.flops_per_s):
            estimates[gpu.name] = predict(gpu)
        ranked.append(rank_one(job, instance, estimates.get(gpu.name), scaling, feed(instance)))
    front = {id(r) for r in pareto_front(ranked)}
    ranked = [_replace_pareto(r, id(r) in front) for r in ranked]
    return sorted(ranked, key=lambda r: _order(r, sort_by))


def rank_one(job: Job, instance: InstanceSpec, estimate: Estimate | None, scaling: ScalingProvider,
             limit: FeedLimit | None = None) -> RankedInstance:
    gpu = instance.gpu_spec
    base = dict(instance=instance.name, provider=instance.provider, region=instance.region, gpu=gpu.name,
                gpu_count=instance.gpu_count, price_usd_per_hour=instance.price_usd_per_hour,
                price_date=instance.price_date, price_note=instance.price_note,
                host_cpu=instance.host_cpu.label if instance.host_cpu else None)
    runs = _runs(job, gpu, estimate)
    if runs is None:
        return RankedInstance(**base, status=UNSUPPORTED_PRECISION, reason=_unsupported(job, gpu))
    if runs != job.precision:
        base.update(stand_in_for=job.precision)
    base.update(precision=runs)
    if estimate is None:
        return RankedInstance(**base, status=NO_PREDICTION, reason=f"no prediction for {gpu.name}")
    fits = estimate.max_batch is None or estimate.max_batch >= job.min_batch_per_gpu
    if not fits:
        return RankedInstance(**base, status=DOES_NOT_FIT, max_batch_per_gpu=estimate.max_batch,
                              reason=_does_not_fit(job, gpu, estimate.max_batch))
    load = SyncLoad.of(job.workload, estimate.parameters, estimate.batch, estimate.samples_per_s) \
        if estimate.parameters else None
    scale = scaling(instance, load)
    gpus = estimate.samples_per_s * instance.gpu_count * scale.efficiency
    fed = limit.samples_per_s_per_gpu * instance.gpu_count if limit else None
    input_bound = fed is not None and fed < gpus
    samples_per_s = fed if input_bound else gpus
    hours = job.samples / samples_per_s / 3600
    # an input-bound instance runs at the loader's rate, whatever the GPU band says
    low, high = (0.0, 0.0) if input_bound else combined_band(estimate, scale)
    reason = _stand_in(job, gpu, runs) + f"{estimate.note}; {scale.note}" + \
        (f"; input-bound: {limit.note}{_cores(instance)}" if input_bound and limit else "")
    return RankedInstance(
        **base, status=OK, reason=reason, batch_per_gpu=estimate.batch,
        max_batch_per_gpu=estimate.max_batch, per_gpu_samples_per_s=estimate.samples_per_s,
        scaling_efficiency=scale.efficiency, scaling_measured=scale.measured, scaling_low=scale.low,
        scaling_high=scale.high, samples_per_s=samples_per_s,
        hours=hours, cost_usd=hours * instance.price_usd_per_hour, hours_low=hours / (1 + high),
        hours_high=hours / (1 - low) if low < 1 else None, cost_low=hours / (1 + high) * instance.price_usd_per_hour,
        cost_high=hours / (1 - low) * instance.price_usd_per_hour if low < 1 else None,
        limited_by="input" if input_bound else "gpu", gpu_samples_per_s=gpus, feed_samples_per_s=fed,
        validated=estimate.validated, torch_compile=estimate.torch_compile,
        loader_workers_per_gpu=limit.workers_per_gpu if limit else None)


def combined_band(estimate: Estimate, scale: Scaling) -> tuple[float, float]:
    """The relative band of the instance's throughput: one GPU's band times the scaling's (a slow host's
    sync and a slow GPU compound; so do the fast ends)."""
    low_ratio = (scale.low if scale.low is not None else scale.efficiency) / scale.efficiency
    high_ratio = (scale.high if scale.high is not None else scale.efficiency) / scale.efficiency
    return 1 - (1 - estimate.band_low) * low_ratio, (1 + estimate.band_high) * high_ratio - 1


def _cores(instance: InstanceSpec) -> str:
    """Whose cores the loader's measured rate was carried to (the rate is the source host's per worker)."""
    return f" (its cores: {instance.host_cpu.label}, assumed as fast)" if instance.host_cpu else ""


def pareto_front(ranked: Iterable[RankedInstance]) -> list[RankedInstance]:
    """The instances no other beats on both time and cost (ties on both keep both), fastest first."""
    ok = [r for r in ranked if r.status == OK]
    front = [r for r in ok if not any(_dominates(o, r) for o in ok)]
    return sorted(front, key=lambda r: (r.hours, r.cost_usd))


def ranking_to_json(ranked: Iterable[RankedInstance]) -> list[dict[str, Any]]:
    """The plan document's `ranking` list: one object per instance, fields as in RankedInstance."""
    return [r.to_dict() for r in ranked]


def _runs(job: Job, gpu: GpuSpec, estimate: Estimate | None) -> str | None:
    """The precision the GPU runs the job in (run_precision: fp32 runs everywhere; tf32 and bf16 need the
    tensor-core rate in the catalog, which T4 and V100 lack): the job's where it has it; else the stand-in, where
    the estimate says it runs that (it was predicted in it); None: it cannot run the job."""
    runs = run_precision(job.precision, gpu.flops_per_s)
    if runs == job.precision:
        return runs
    return runs if runs and estimate is not None and estimate.precision == runs else None


def _unsupported(job: Job, gpu: GpuSpec) -> str:
    lacks = f"{gpu.name} has no {job.precision} tensor cores (GPU catalog)"
    stand_in = run_precision(job.precision, gpu.flops_per_s)
    if stand_in is None:
        return f"{lacks}, and no precision stands in for {job.precision}"
    return f"{lacks}; it would run {stand_in} instead, but nothing predicts this job in {stand_in} there"


def _stand_in(job: Job, gpu: GpuSpec, runs: str) -> str:
    """The reason's first words on a row that runs the job's stand-in."""
    return "" if runs == job.precision else f"no {job.precision} on {gpu.name}: runs {STAND_IN_HOW.get(runs, runs)}; "


def _does_not_fit(job: Job, gpu: GpuSpec, max_batch: int | None) -> str:
    memory = f"{gpu.memory_bytes / 1e9:g} GB"
    if not max_batch:
        return f"{job.workload} at {job.precision} does not fit in {gpu.name}'s {memory} even at batch 1"
    return (f"largest batch that fits in {gpu.name}'s {memory} is {max_batch} per GPU, "
            f"below the job's minimum of {job.min_batch_per_gpu}")


def _dominates(a: RankedInstance, b: RankedInstance) -> bool:
    return a.hours <= b.hours and a.cost_usd <= b.cost_usd and (a.hours < b.hours or a.cost_usd < b.cost_usd)


def _replace_pareto(r: RankedInstance, pareto: bool) -> RankedInstance:
    return r if r.pareto == pareto else RankedInstance(**{**asdict(r), "pareto": pareto})


def _order(r: RankedInstance, sort_by: str) -> tuple:
    if r.status != OK:
        return (STATUS_ORDER.index(r.status), r.price_usd_per_hour, r.instance)
    primary, secondary = (r.cost_usd, r.hours) if sort_by == "cost" else (r.hours, r.cost_usd)
    return (0, primary, secondary, r.instance)
