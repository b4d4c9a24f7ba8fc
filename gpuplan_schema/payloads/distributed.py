"""Payloads of the documents of several GPUs (collectors/distributed/): `collectives` (collective
bandwidth) and `ddp` (data-parallel scaling)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuplan_schema.payloads.common import Status
from gpuplan_schema.payloads.topology import Topology
from gpuplan_schema.stats import Stat

Transport = Literal["NET/Socket", "NET/IB", "P2P/NVLink", "P2P", "SHM", "gloo/tcp", "unknown"]


@dataclass(frozen=True)
class NodeLayout:
    """Where the ranks ran: `nodes` launcher processes (torchrun's GROUP_RANK 0..nodes-1), each with
    `gpus_per_node` ranks; `hostnames[i]` is node i's host (two emulated nodes on one host share it).
    `transport` is what carried data between nodes: from NCCL_DEBUG=INFO's "via ..." lines of channels
    joining ranks on different nodes (`transport_source` "nccl-debug"), from NCCL_* switches when those
    lines were not available ("environment"), or gloo's TCP pairs ("backend"); None with one node."""

    nodes: int
    gpus_per_node: int
    hostnames: list[str]
    rendezvous: Literal["standalone", "static", "c10d"]
    transport: Transport | None = None
    transport_source: Literal["nccl-debug", "environment", "backend"] | None = None
    intra_node_transport: Transport | None = None


@dataclass(frozen=True)
class LaunchInfo:
    """How the rank processes were started and what each saw: `multicast_env` holds, per rank, the
    NVLink-multicast switches (NCCL_NVLS_ENABLE, ...) as found in its environment at start-up."""

    launcher: str
    backend: str
    world_size: int
    multicast_env: list[dict[str, str | None]]
    nccl_version: str | None = None
    # Documents written before multi-node collection have none: one node, every rank on it.
    nodes: NodeLayout | None = None

    @property
    def node_count(self) -> int:
        return self.nodes.nodes if self.nodes else 1


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
