"""Payload of the `workload` document: measured configurations of one workload and its OOM boundaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuplan_schema.payloads.common import Allocator, Status
from gpuplan_schema.stats import Stat


@dataclass(frozen=True)
class TrafficEstimate:
    """Bytes moved per step by the traffic model of seed 002 (see collectors/workloads/accounting.py)."""

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.params_bytes + self.grads_bytes + self.optimizer_bytes + self.activations_bytes


@dataclass(frozen=True)
class MemoryUse:
    """Peak memory of a step: torch's allocator (allocated, reserved) and the device as NVML sees it."""

    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    device_used_bytes: int | None = None


@dataclass(frozen=True)
class DeviceSamples:
    """NVML readings sampled through the timed loop: GPU utilisation (0-1) and power draw."""

    utilization: Stat | None = None
    power_w: Stat | None = None


# The variants that run the model as written (cudnn.benchmark on or off): a batch sweep's own points.
PLAIN_VARIANTS = ("default", "no_cudnn_benchmark")
KNEE = 0.05   # the throughput knee: the smallest batch within this of the best measured
# The precision the batch sweeps run in, and the batch each reference workload is judged at (acceptance: gpt-small
# 32, resnet50 256 on an H100): the collectors time them, the planner reads them; defined here, once, for both.
MAIN_PRECISION = "bf16"
# The precisions a workload runs in (DESIGN.md's variants; fp8 matmuls in the ceilings): a point in any other is
# refused, naming its field.
Precision = Literal["fp32", "tf32", "fp16", "bf16", "fp8"]
MAIN_BATCH = {"gpt-small": 32, "resnet50": 256, "mlp-stgan": 4096, "conv-rollout": 40}


def knee_batch(throughput: dict[int, float], tolerance: float = KNEE) -> int | None:
    """The smallest batch within `tolerance` of the best throughput measured (batch → samples/s); None if empty.
    The one definition of the knee: the plan's recommended batch, the batch the roofline collector profiles and
    the one the workloads collector times its trials at again (sweep "knee")."""
    if not throughput:
        return None
    best = max(throughput.values())
    return min(b for b, t in throughput.items() if t >= (1 - tolerance) * best)


# A workload variant's name (`compile+contiguous+no_cudnn_benchmark`, `default`, ...): its parts, joined by "+" in
# this order. The collector writes it (collectors/workloads/training.py Variant.name); every reader parses it here.
EXPANDABLE = "expandable_segments"   # the allocator's setting, a boundary probe's part
VARIANT_PARTS = ("compile", "channels_last", "contiguous", "no_cudnn_benchmark", EXPANDABLE)
Layout = Literal["default", "channels_last", "contiguous"]


@dataclass(frozen=True)
class VariantSettings:
    """The typed settings a variant's name stands for; `layout` "default" is the workload's own choice."""

    compile: bool
    layout: Layout
    cudnn_benchmark: bool
    allocator: Allocator


def variant_settings(name: str) -> VariantSettings:
    """The settings of a variant's name. An unknown part raises ValueError naming it, so that a newer collector's
    setting is never read as the default."""
    parts = set(name.split("+")) - {"default"}
    unknown = parts - set(VARIANT_PARTS)
    if unknown:
        raise ValueError(f"variant {name!r} has parts this gpuplan does not know: {sorted(unknown)}")
    layout: Layout = next((p for p in ("channels_last", "contiguous") if p in parts), "default")  # type: ignore
    return VariantSettings("compile" in parts, layout, "no_cudnn_benchmark" not in parts,
                           EXPANDABLE if EXPANDABLE in parts else "default")


def point_key(sweep: str, precision: str, batch: int, variant: str, seq_len: int | None = None) -> tuple:
    """What makes two points the same configuration (WorkloadPoint.key; the collector also keys points it is
    about to measure by it)."""
    return sweep, precision, batch, variant, seq_len


@dataclass(frozen=True)
class WorkloadPoint:
    """One measured configuration. `sweep` says why it was measured: batch, sequence, variant (a trial at the
    main batch), knee (the same trials at the batch sweep's knee, where it is not the main batch: workloads
    collector 6), repeat, or probe (an untimed run of the out-of-memory boundary search: status and peak memory
    only).

    Host and device shares of a timed step (collectors/core/host_time.py; None in documents of workloads
    collector 2 and before, and for probes): `host_issue_s` is the host's wall time to issue one step
    (its Python call, no synchronisation), `gpu_busy_s` the device time of its kernels per step
    (torch.profiler; None on a CPU), `step_syncs` the synchronising CUDA calls in one step (0: the
    host runs ahead of the GPU; more: it waits for it inside the step, so host_issue_s ≈ step_s).
    """

    sweep: Literal["batch", "sequence", "variant", "knee", "repeat", "probe"]
    precision: Precision
    batch: int
    variant: str
    status: Status
    reason: str | None = None
    seq_len: int | None = None
    step_s: Stat | None = None
    throughput_per_s: float | None = None
    tokens_per_s: float | None = None
    memory: MemoryUse | None = None
    flops_per_step: float | None = None
    # of flops_per_step, the dense 3x3 stride-1 convolutions' forward and input gradient: what cuDNN runs as
    # Winograd on CUDA cores (collectors/core/winograd_flops.py); None: not counted (documents before 2026-11-29)
    winograd_flops_per_step: float | None = None
    traffic: TrafficEstimate | None = None
    achieved_flops_fraction: float | None = None
    achieved_bytes_fraction: float | None = None
    device_samples: DeviceSamples | None = None
    compile_s: float | None = None
    first_step_s: float | None = None  # wall time of the first step: allocation, cudnn autotuning, compiling
    wall_s: float | None = None        # wall time the collector spent on this point, all included
    host_issue_s: Stat | None = None
    gpu_busy_s: float | None = None
    step_syncs: int | None = None
    host_share_problem: str | None = None  # why gpu_busy_s or step_syncs is missing on a GPU
    quick_step_s: Stat | None = None
    steady_rounds: int | None = None

    @property
    def allocator(self) -> Allocator:
        """The allocator the point ran with (a boundary probe's may be expandable segments), from its variant."""
        return variant_settings(self.variant).allocator

    @property
    def key(self) -> tuple:
        """What makes two points the same configuration (point_key)."""
        return point_key(self.sweep, self.precision, self.batch, self.variant, self.seq_len)

    def check(self) -> str | None:
        if self.batch < 1:
            return f"batch is {self.batch}; a point's batch is at least 1"
        if self.steady_rounds is not None and (self.steady_rounds < 1 or self.quick_step_s is None):
            return "steady_rounds is set but is below 1 or quick_step_s (the sweep's timing) is missing"
        if self.status == "ok" and self.sweep != "probe" and (self.step_s is None or self.throughput_per_s is None):
            return "status is ok but a timed point's step_s or throughput_per_s is missing"
        return None


@dataclass(frozen=True)
class OomBoundary:
    """The largest batch that runs at a precision, to within `tolerance` of the first that does not."""

    precision: Precision
    status: Status
    max_batch: int | None = None
    first_oom_batch: int | None = None
    capped: bool = False
    reason: str | None = None
    allocator: Allocator = "default"
    # searched in a process of its own (collectors/workloads/boundary_process.py, workloads collector 5), as a job
    # started on its own meets it; False: in the collection's process, after everything it ran before
    fresh_process: bool = False
    # each probe on a workload built anew (workloads collector 8): before, a search's probes ran one after another on
    # one model, whose gradients and own tensors (Transformer-XL's `mems`) pinned the segments the next probe was
    # carved from: the H200's Transformer-XL ran fp32 at 174 so and failed at 148 started alone
    # (results/h200/diagnostics/probe-chain-2026-11-29)
    fresh_probes: bool = False

    def check(self) -> str | None:
        return "status is ok but max_batch is missing" if self.status == "ok" and self.max_batch is None else None


TRACE_PROFILE = "trace"   # the profile of a workload document predicted from a trace: nothing of it measured


@dataclass(frozen=True)
class StageRecord:
    """One stage of a workload's collection (collectors/workloads/stages.py, workloads collector 7), in the order the
    answer needs them: `done` (every point of it measured, in `seconds` over all the runs that worked on it), or
    `skipped` and why (it did not fit the time budget; the next run without one measures it)."""

    name: str
    status: Literal["done", "skipped"]
    seconds: float
    reason: str | None = None


@dataclass(frozen=True)
class WorkloadPayload:
    workload: str
    source: str
    unit: str
    training: bool
    device: Literal["cuda", "cpu"]
    profile: str
    parameters: int
    points: list[WorkloadPoint]
    boundaries: list[OomBoundary]
    elapsed_s: float
    tokens_per_sample: int | None = None
    scale: str = "reference"
    complete: bool = True  # False while the collection runs (or after it was stopped): resume to finish
    # the stages done or skipped so far (None: a document of workloads collector 6 or before, which has none)
    stages: list[StageRecord] | None = None
    # sha256 of the workload file's source when it is a user file (None: a built-in, or an older document): a rerun
    # measures a document again whose file changed since
    source_sha256: str | None = None

    def stage(self, name: str) -> StageRecord | None:
        return next((s for s in self.stages or [] if s.name == name), None)

    @property
    def from_trace(self) -> bool:
        """Predicted from a trace (planner/trace/machine.py writes these), not measured on a GPU."""
        return self.profile == TRACE_PROFILE

    @property
    def known(self) -> str:
        """How its figures are known, the word every reason uses: 'predicted' (from a trace) or 'measured'."""
        return "predicted" if self.from_trace else "measured"

    def boundary(self, precision: str, allocator: Allocator = "default") -> OomBoundary | None:
        """The precision's boundary searched with `allocator`, where there is one."""
        return next((b for b in self.boundaries if b.precision == precision and b.allocator == allocator), None)

    @property
    def default_boundaries(self) -> list[OomBoundary]:
        """The boundaries with PyTorch's default allocator: what a job run as it is will meet."""
        return [b for b in self.boundaries if b.allocator == "default"]

    def sweep_throughput(self, precision: str) -> dict[int, float]:
        """The batch sweep at `precision`, plain variants only (no torch.compile): batch → samples/s."""
        return {p.batch: p.throughput_per_s for p in self.points if p.sweep == "batch" and p.precision == precision
                and p.status == "ok" and p.throughput_per_s and p.variant in PLAIN_VARIANTS}

    def sweep_knee(self, precision: str, tolerance: float = KNEE, limit: int | None = None) -> int | None:
        """The throughput knee of the batch sweep: the smallest batch within `tolerance` of the best measured
        (among batches up to `limit`). The batch the planner recommends, and the one the roofline collector
        profiles so that the bound is judged where the user will run."""
        return knee_batch({b: t for b, t in self.sweep_throughput(precision).items() if limit is None or b <= limit},
                          tolerance)

    def expandable_gain(self, precision: str) -> float | None:
        """How much larger the boundary searched with expandable segments is than the default allocator's
        (0.46: 46 % more fits); None unless both were found (a capped default is not searched again)."""
        default, expandable = self.boundary(precision), self.boundary(precision, "expandable_segments")
        if default and expandable and default.max_batch and expandable.max_batch and not default.capped:
            return expandable.max_batch / default.max_batch - 1
        return None
