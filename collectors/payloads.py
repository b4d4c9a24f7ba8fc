"""Typed payloads of each document kind. Units are SI and named in the field names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from collectors.distributed.topology import Topology
from collectors.stats import Stat

Status = Literal["ok", "oom", "skipped", "error"]
# The CUDA caching allocator a boundary was searched with: PyTorch's default, or with expandable
# segments (collectors/allocator.py), where fragmentation no longer sets the boundary.
Allocator = Literal["default", "expandable_segments"]


@dataclass(frozen=True)
class CpuInfo:
    model: str
    logical_cores: int
    physical_cores: int | None
    ram_bytes: int | None


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as NVML (and torch) describe it. A field is None when it could not be read;
    `unavailable` then says why, keyed by the field name."""

    index: int
    name: str
    memory_bytes: int | None = None
    sm_count: int | None = None
    l2_bytes: int | None = None
    compute_capability: str | None = None
    sm_clock_max_hz: float | None = None
    sm_clock_hz: float | None = None
    memory_clock_max_hz: float | None = None
    memory_clock_hz: float | None = None
    power_limit_w: float | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    ecc_enabled: bool | None = None
    mig_enabled: bool | None = None
    other_processes: int | None = None
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentPayload:
    hostname: str
    os: str
    kernel: str
    cpu: CpuInfo
    python: str
    torch: str
    cuda_runtime: str | None
    cudnn: str | None
    driver: str | None
    gpus: list[GpuInfo]
    gpu_absent_reason: str | None = None
    allocator_config: str | None = None  # PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF) as the run was given it


@dataclass(frozen=True)
class MatmulShape:
    m: int
    n: int
    k: int
    flops_per_s: Stat


@dataclass(frozen=True)
class MatmulCeiling:
    """Best dense matmul throughput for one dtype over the shapes searched.

    `flops_per_s` is the peak: short bursts after an idle pause, at the clock a GPU holds for
    its first ~100 ms of full load (what datasheets and mamf-finder quote). `sustained_flops_per_s`
    is the best shape run without pause for about a second, once power capping has set the clock
    (`sustained_sm_clock_hz`, read through NVML at its end): what a long training step sees.
    """

    dtype: str
    status: Status
    reason: str | None = None
    flops_per_s: Stat | None = None
    best_shape: list[int] | None = None
    shapes: list[MatmulShape] = field(default_factory=list)
    sustained_flops_per_s: Stat | None = None
    sustained_sm_clock_hz: float | None = None

    def check(self) -> str | None:
        if self.status == "ok" and self.flops_per_s is None:
            return "status is ok but flops_per_s is missing"
        return None


@dataclass(frozen=True)
class BandwidthCeiling:
    """Bytes per second of one kind of transfer. `name` is e.g. copy, read, write,
    h2d_pinned, d2h_pageable; copy counts bytes read plus bytes written."""

    name: str
    status: Status
    reason: str | None = None
    bytes_per_s: Stat | None = None
    buffer_bytes: int | None = None

    def check(self) -> str | None:
        if self.status == "ok" and self.bytes_per_s is None:
            return "status is ok but bytes_per_s is missing"
        return None


@dataclass(frozen=True)
class CeilingsPayload:
    device: Literal["cuda", "cpu"]
    device_name: str
    matmul: list[MatmulCeiling]
    memory: list[BandwidthCeiling]
    host_device: list[BandwidthCeiling]
    launch_latency_s: Stat | None
    elapsed_s: float
    l2_bytes: int | None = None
    threads: int | None = None


@dataclass(frozen=True)
class TrafficEstimate:
    """Bytes moved per step by the traffic model of seed 002 (see collectors/accounting.py)."""

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


@dataclass(frozen=True)
class WorkloadPoint:
    """One measured configuration. `sweep` says why it was measured: batch, sequence, variant, repeat, or
    probe (an untimed run of the out-of-memory boundary search: status and peak memory only)."""

    sweep: Literal["batch", "sequence", "variant", "repeat", "probe"]
    precision: str
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
    traffic: TrafficEstimate | None = None
    achieved_flops_fraction: float | None = None
    achieved_bytes_fraction: float | None = None
    device_samples: DeviceSamples | None = None
    compile_s: float | None = None
    first_step_s: float | None = None  # wall time of the first step: allocation, cudnn autotuning, compiling
    wall_s: float | None = None        # wall time the collector spent on this point, all included

    def check(self) -> str | None:
        if self.batch < 1:
            return f"batch is {self.batch}; a point's batch is at least 1"
        if self.status == "ok" and self.sweep != "probe" and (self.step_s is None or self.throughput_per_s is None):
            return "status is ok but a timed point's step_s or throughput_per_s is missing"
        return None


@dataclass(frozen=True)
class OomBoundary:
    """The largest batch that runs at a precision, to within `tolerance` of the first that does not."""

    precision: str
    status: Status
    max_batch: int | None = None
    first_oom_batch: int | None = None
    capped: bool = False
    reason: str | None = None
    allocator: Allocator = "default"

    def check(self) -> str | None:
        return "status is ok but max_batch is missing" if self.status == "ok" and self.max_batch is None else None


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

    def boundary(self, precision: str, allocator: Allocator = "default") -> OomBoundary | None:
        """The precision's boundary searched with `allocator`, where there is one."""
        return next((b for b in self.boundaries if b.precision == precision and b.allocator == allocator), None)

    @property
    def default_boundaries(self) -> list[OomBoundary]:
        """The boundaries with PyTorch's default allocator: what a job run as it is will meet."""
        return [b for b in self.boundaries if b.allocator == "default"]


OpClass = Literal["math-bound", "memory-bound", "latency-bound", "unclassified"]


@dataclass(frozen=True)
class KernelTime:
    """One device kernel (or, on a CPU, the op itself) launched by an op: time and launches per step."""

    name: str
    time_s: float
    calls: float


@dataclass(frozen=True)
class OpRoofline:
    """One aten operator of a profiled step, all its calls summed (per step); see collectors/op_roofline.py.

    `flops` is None when the op has no FLOP formula. `math_s` and `memory_s` are the times the op
    would take at the roofs (FLOPs / peak of its dtype, bytes / copy bandwidth), `expected_s` the sum
    over its calls of the larger of the two; `efficiency` = expected / measured median.
    """

    name: str
    calls: float
    time_s: Stat
    read_bytes: float
    written_bytes: float
    op_class: OpClass
    flops: float | None = None
    dtype: str | None = None
    math_s: float | None = None
    memory_s: float | None = None
    expected_s: float | None = None
    efficiency: float | None = None
    kernels: list[KernelTime] = field(default_factory=list)

    @property
    def bytes(self) -> float:
        return self.read_bytes + self.written_bytes

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity, FLOP per byte read or written."""
        return self.flops / self.bytes if self.flops is not None and self.bytes else None

    @property
    def lost_s(self) -> float | None:
        """Time spent beyond the roofline's expectation (never negative)."""
        return None if self.expected_s is None else max(0.0, self.time_s.median - self.expected_s)


@dataclass(frozen=True)
class RooflineRoofs:
    """The ceilings the classification used, copied from the machine's ceilings document, and what
    was missing from it (each missing roof is said here, never silently assumed)."""

    source: str
    flops_per_s: dict[str, float] = field(default_factory=dict)   # peak dense matmul per dtype
    memory_bytes_per_s: float | None = None                        # device copy, read + written
    launch_latency_s: float | None = None
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RooflinePayload:
    """Per-operation roofline of one workload at its main configuration (batch, bf16).

    `timer` says what the op times are: "cuda" is device time of each op's kernels (CUPTI through
    torch.profiler), "cpu" the op's wall time on the CPU. `step_s` is the step timed without the
    profiler; `unattributed_s` is device time per step in kernels launched outside any recorded op.
    """

    workload: str
    source: str
    device: Literal["cuda", "cpu"]
    precision: str
    batch: int
    training: bool
    status: Status
    roofs: RooflineRoofs
    elapsed_s: float
    reason: str | None = None
    scale: str = "reference"
    timer: Literal["cuda", "cpu"] = "cuda"
    steps: int = 0
    step_s: Stat | None = None
    unattributed_s: float = 0.0
    unmatched_calls: int = 0
    ops: list[OpRoofline] = field(default_factory=list)

    @property
    def op_time_s(self) -> float:
        """Measured time of all recorded ops per step (medians summed)."""
        return sum(op.time_s.median for op in self.ops)

    @property
    def no_flop_formula(self) -> list[str]:
        return [op.name for op in self.ops if op.flops is None]
@dataclass(frozen=True)
class SyntheticImages:
    """The JPEG files the loader read (collectors/jpeg_dataset.py): cached, ImageNet-like sizes."""

    count: int
    generator_version: str
    quality: int
    mean_file_bytes: float
    mean_pixels: float
    generated_s: float | None          # None: taken from the cache
    decode_s: Stat | None = None       # one Pillow decode in the main process, over a sample of the files


@dataclass(frozen=True)
class LoaderPoint:
    """One DataLoader configuration. Throughput is timed over `timed_batches` after the first wave of
    batches (each worker's first batch, built in parallel from the start), in blocks of one wave each;
    `samples_per_s` summarises the blocks. Memory is PSS (or RSS, see the payload) summed over the main
    process and its workers: `memory_peak_bytes` while batches stream, `memory_full_bytes` once consumption
    has paused until every prefetch slot holds a batch (`buffer_full` says whether the workers went idle).
    Both include batches queued in shared memory that no process maps (collectors/process_group.py)."""

    workers: int
    prefetch: int | None               # None with 0 workers: the main process loads, nothing is prefetched
    pin_memory: bool
    status: Status
    reason: str | None = None
    samples_per_s: Stat | None = None
    batches_per_s: float | None = None
    time_to_first_batch_s: float | None = None
    timed_batches: int | None = None
    cpu_cores_busy: float | None = None        # CPU seconds per second, main process + workers
    cpu_utilization: float | None = None       # cpu_cores_busy over the usable logical cores
    memory_baseline_bytes: int | None = None   # the main process alone, before the loader starts
    memory_peak_bytes: int | None = None
    memory_samples: int | None = None
    memory_full_bytes: int | None = None
    memory_full_queued_bytes: int | None = None  # of which batches queued in shared memory, mapped by no process
    buffer_full: bool | None = None
    buffer_fill_s: float | None = None
    pinned_bytes: int | None = None            # torch's pinned host allocator, peak during the point
    formula_bytes: int = 0                     # workers × prefetch × batch bytes (seed 004's buffer)

    def check(self) -> str | None:
        return "status is ok but samples_per_s is missing" if self.status == "ok" and not self.samples_per_s else None


@dataclass(frozen=True)
class EpochBoundary:
    """What `persistent_workers` changes: the gap between the last batch of a first epoch and the first
    batch of the second (non-persistent workers are shut down and started again in it)."""

    workers: int
    prefetch: int
    pin_memory: bool
    persistent: bool
    status: Status
    reason: str | None = None
    epoch_batches: int | None = None
    first_epoch_first_batch_s: float | None = None
    second_epoch_first_batch_s: float | None = None   # from iter() of epoch 2 to its first batch
    epoch_gap_s: float | None = None                  # from the last batch of epoch 1 to that batch


@dataclass(frozen=True)
class DataloaderPayload:
    device: Literal["cuda", "cpu"]
    device_name: str
    profile: str
    status: Status
    logical_cores: int                 # usable by this process (its CPU affinity)
    batch: int
    image_size: int
    batch_bytes: int                   # one collated batch: float32 images and int64 labels
    copy: str                          # how batches reach the device, in words
    memory_measure: str                # "pss", "rss", or why there are no memory figures
    start_method: str
    ram_bytes: int | None
    points: list[LoaderPoint]
    epochs: list[EpochBoundary]
    elapsed_s: float
    reason: str | None = None
    dataset: SyntheticImages | None = None
    scale: str = "reference"           # "tiny" on a CPU: small batches, for testing the path
    main_threads: int | None = None    # torch's intra-op threads in the main process (workers use one each)
    shm_bytes: int | None = None       # size of /dev/shm, where workers hand batches to the main process


# ---- Several GPUs (collectors/distributed/): collective bandwidth and data-parallel scaling ----

@dataclass(frozen=True)
class LaunchInfo:
    """How the rank processes were started and what each saw: `multicast_env` holds, per rank, the
    NVLink-multicast switches (NCCL_NVLS_ENABLE, ...) as found in its environment at start-up."""

    launcher: str
    backend: str
    world_size: int
    multicast_env: list[dict[str, str | None]]
    nccl_version: str | None = None


@dataclass(frozen=True)
class CollectivePoint:
    """One collective at one message size. `size_bytes` follows nccl-tests: the whole buffer of
    all_reduce and broadcast, and the whole gathered (all_gather) or scattered (reduce_scatter) buffer,
    i.e. n × each rank's shard. `time_s` is one operation, the slowest rank's in each sample."""

    op: Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast"]
    size_bytes: int
    status: Status
    reason: str | None = None
    time_s: Stat | None = None
    algbw_bytes_per_s: Stat | None = None
    busbw_bytes_per_s: Stat | None = None
    ops_per_sample: int | None = None

    def check(self) -> str | None:
        if self.status == "ok" and None in (self.time_s, self.algbw_bytes_per_s, self.busbw_bytes_per_s):
            return "status is ok but time_s, algbw_bytes_per_s or busbw_bytes_per_s is missing"
        return None


@dataclass(frozen=True)
class CollectivesPayload:
    backend: str
    device: Literal["cuda", "cpu"]
    world_size: int
    dtype: str
    profile: str
    points: list[CollectivePoint]
    launch: LaunchInfo
    elapsed_s: float
    topology: Topology | None = None
    topology_absent_reason: str | None = None
    scale: str = "reference"


@dataclass(frozen=True)
class RankStep:
    """One rank's step times: with the gradient all-reduce (DDP) and without it (`no_sync`)."""

    rank: int
    step_s: Stat | None
    compute_step_s: Stat | None


@dataclass(frozen=True)
class DdpPoint:
    """A workload trained with DistributedDataParallel on `gpus` GPUs (ranks 0..gpus-1) at a per-GPU batch.

    `step_s` is the slowest rank's step (the all-reduce keeps the ranks in step, so they nearly agree);
    `compute_step_s` the slowest rank's step without gradient synchronisation: the straggler's own pace.
    `scaling_efficiency` = throughput / (gpus × the 1-GPU throughput)."""

    workload: str
    gpus: int
    per_gpu_batch: int
    precision: str
    status: Status
    reason: str | None = None
    step_s: Stat | None = None
    compute_step_s: Stat | None = None
    throughput_per_s: float | None = None
    tokens_per_s: float | None = None
    scaling_efficiency: float | None = None
    straggler_rank: int | None = None
    ranks: list[RankStep] = field(default_factory=list)

    def check(self) -> str | None:
        if self.status == "ok" and (self.step_s is None or self.throughput_per_s is None):
            return "status is ok but step_s or throughput_per_s is missing"
        return None


@dataclass(frozen=True)
class DdpWorkload:
    """What the planner's multi-GPU table needs of a workload: one per-GPU batch's bytes of inputs
    and targets (the host RAM a loader buffers per batch) and the optimizer's learning rate at 1 GPU."""

    workload: str
    unit: str
    parameters: int
    per_gpu_batch: int
    batch_bytes: int
    base_lr: float
    tokens_per_sample: int | None = None


@dataclass(frozen=True)
class GpuMatmul:
    """A bf16 matmul timed on every GPU at once: a slow GPU shows here before it slows a step."""

    rank: int
    gpu: str
    flops_per_s: Stat
    shape: list[int]


@dataclass(frozen=True)
class DdpPayload:
    backend: str
    device: Literal["cuda", "cpu"]
    world_size: int
    precision: str
    profile: str
    workloads: list[DdpWorkload]
    points: list[DdpPoint]
    matmul: list[GpuMatmul]
    launch: LaunchInfo
    elapsed_s: float
    bucket_cap_mb: float = 25.0
    scale: str = "reference"

    @property
    def matmul_spread(self) -> float | None:
        """Slowest GPU's matmul against the fastest: max/min - 1 of the medians."""
        rates = [m.flops_per_s.median for m in self.matmul]
        return max(rates) / min(rates) - 1 if len(rates) > 1 and min(rates) > 0 else None


PAYLOADS: dict[str, type] = {
    "environment": EnvironmentPayload,
    "ceilings": CeilingsPayload,
    "workload": WorkloadPayload,
    "roofline": RooflinePayload,
    "dataloader": DataloaderPayload,
    "collectives": CollectivesPayload,
    "ddp": DdpPayload,
}
