"""The "Several GPUs" part of the report, from the `ddp` and `collectives` documents.

A table per workload in the style of seed 004's multi-GPU table (GPUs, total batch, workers, RAM
buffer, learning rate), with the measured throughput and scaling efficiency beside the settings;
the bus bandwidth of each collective (chart against message size, peak and small-message latency);
the GPU-to-GPU topology; each GPU's matmul rate. Values stay SI; the template formats them.

The settings columns follow seed 004's rules, stated in the section: data-loader workers are 75 % of
the host's logical cores shared between its GPUs; each worker holds PREFETCH batches in RAM; the
learning rate scales linearly with the total batch from the 1-GPU run's.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload, DdpWorkload, GpuMatmul
from gpuplan_schema.payloads.topology import GpuPair, describe_topology
from gpuplan_schema.results import MachineResults
from gpuplan_schema.stats import Stat
from planner.charts.multigpu import build_busbw_chart
from planner.report.sections import SectionBase

WORKER_CORE_SHARE = 0.75  # seed 004: num_workers = 75 % of the CPU cores
PREFETCH = 3              # seed 004: prefetch_factor 3 ("conservative buffering")


@dataclass(frozen=True)
class ScalingRow:
    gpus: int
    per_gpu_batch: int
    total_batch: int
    workers_per_gpu: int | None
    ram_buffer_bytes: int | None
    lr: float
    status: str
    reason: str | None = None
    throughput: float | None = None
    tokens_per_s: float | None = None
    speedup: float | None = None
    efficiency: float | None = None
    step: Stat | None = None
    compute_step: Stat | None = None
    straggler_rank: int | None = None

    @property
    def workers(self) -> int | None:
        return None if self.workers_per_gpu is None else self.workers_per_gpu * self.gpus


@dataclass(frozen=True)
class ScalingTable:
    workload: DdpWorkload
    precision: str
    rows: list[ScalingRow]


@dataclass(frozen=True)
class BusRow:
    op: str
    peak_busbw: Stat
    peak_size_bytes: int
    peak_algbw: Stat
    latency: Stat
    latency_size_bytes: int


@dataclass(frozen=True)
class MultiGpuSection(SectionBase, kind="multigpu", title="Several GPUs"):
    world_size: int
    tiny: bool
    not_collected: list[str]
    launch_note: str | None
    tables: list[ScalingTable]
    cores: int | None
    ram_bytes: int | None
    bus_rows: list[BusRow]
    busbw_chart: dict | None
    topology: str | None
    pairs: list[GpuPair]
    matmul: list[GpuMatmul]
    matmul_spread: float | None
    worker_share: float = WORKER_CORE_SHARE
    prefetch: int = PREFETCH
    anchor: str = "multigpu"
    nodes_note: str | None = None   # several nodes: N × G, hosts, the transport between them
    gpus_per_node: int | None = None  # several nodes: G (None on one node)

    def gpus_words(self, gpus: int) -> str:
        """'2 nodes × 1 GPU' where `gpus` ranks spanned several nodes (ranks fill node 0 first), else '4 GPUs'."""
        per = self.gpus_per_node
        if per and gpus > per:
            return f"{-(-gpus // per)} nodes × {per} GPU{'s' if per > 1 else ''}"
        return f"{gpus} GPU{'s' if gpus > 1 else ''}"


def _payload(machine: MachineResults, kind: str):  # noqa: ANN202 - the payload type follows the kind
    return next((d.payload for d in machine.documents.values() if d.kind == kind), None)


def build_multigpu_section(machine: MachineResults) -> MultiGpuSection | None:
    """None when the machine has neither document (the report's "Not collected" line says so)."""
    ddp: DdpPayload | None = _payload(machine, "ddp")
    collectives: CollectivesPayload | None = _payload(machine, "collectives")
    if ddp is None and collectives is None:
        return None
    env = machine.environment
    cores = env.cpu.logical_cores if env else None
    tables = [build_scaling_table(w, ddp, cores) for w in ddp.workloads] if ddp else []
    topology = collectives.topology if collectives else None
    return MultiGpuSection(
        world_size=max(p.world_size for p in (ddp, collectives) if p is not None),
        tiny=any(p.scale == "tiny" for p in (ddp, collectives) if p is not None),
        not_collected=[kind for kind, p in (("collectives", collectives), ("ddp", ddp)) if p is None],
        launch_note=launch_note(ddp or collectives), tables=tables, cores=cores,
        ram_bytes=env.cpu.ram_bytes if env else None,
        bus_rows=build_bus_rows(collectives) if collectives else [],
        busbw_chart=build_busbw_chart(collectives) if collectives else None,
        topology=describe_topology(topology) if topology else (collectives.topology_absent_reason if collectives
                                                               else None),
        pairs=topology.pairs if topology else [], matmul=ddp.matmul if ddp else [],
        matmul_spread=ddp.matmul_spread if ddp else None, nodes_note=nodes_note(ddp or collectives),
        gpus_per_node=_gpus_per_node(ddp or collectives))


def _gpus_per_node(payload: DdpPayload | CollectivesPayload) -> int | None:
    layout = payload.launch.nodes
    return layout.gpus_per_node if layout and layout.nodes > 1 else None


TRANSPORT_SOURCE = {"nccl-debug": "NCCL_DEBUG=INFO's connection lines", "environment": "the NCCL_* switches set",
                    "backend": "gloo pairs ranks over TCP"}


def nodes_note(payload: DdpPayload | CollectivesPayload) -> str | None:
    """'2 nodes × 1 GPU (hosts a, b; static rendezvous); between nodes NET/Socket (from …)' or None for one node."""
    layout = payload.launch.nodes
    if layout is None or layout.nodes < 2:
        return None
    hosts = ", ".join(dict.fromkeys(layout.hostnames))
    unit = "GPU" if payload.device == "cuda" else "rank"
    text = (f"{layout.nodes} nodes × {layout.gpus_per_node} {unit}{'s' if layout.gpus_per_node > 1 else ''} "
            f"(host{'s' if len(set(layout.hostnames)) > 1 else ''} {hosts}; {layout.rendezvous} rendezvous); "
            f"between nodes {layout.transport or 'not named'}")
    if layout.transport_source:
        text += f" (from {TRANSPORT_SOURCE[layout.transport_source]})"
    return text + (f"; within a node {layout.intra_node_transport}" if layout.intra_node_transport else "")


def launch_note(payload: DdpPayload | CollectivesPayload) -> str | None:
    """How the ranks ran, and whether every rank found NVLink multicast off as the launcher sets it."""
    launch = payload.launch
    off = all(env.get("NCCL_NVLS_ENABLE") == "0" and env.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") == "1"
              and env.get("NVSHMEM_DISABLE_NVLS") == "1" for env in launch.multicast_env)
    nccl = f" {launch.nccl_version}" if launch.nccl_version else ""
    multicast = ("NVLink multicast off in every rank" if off
                 else "NVLink multicast switches not set by the launcher in some rank (the rank set them itself)")
    return f"{launch.world_size} ranks started by {launch.launcher}, {launch.backend.upper()}{nccl}; {multicast}"


def workers_per_gpu(cores: int | None, gpus: int) -> int | None:
    """75 % of the host's logical cores, shared between the GPUs in use (at least one worker each)."""
    return None if not cores else max(1, int(WORKER_CORE_SHARE * cores) // gpus)


def build_scaling_table(workload: DdpWorkload, ddp: DdpPayload, cores: int | None) -> ScalingTable:
    rows = []
    mine = sorted((p for p in ddp.points if p.workload == workload.workload), key=lambda p: p.gpus)
    one = next((p.throughput_per_s for p in mine if p.gpus == 1 and p.throughput_per_s), None)
    for p in mine:
        per_gpu = workers_per_gpu(cores, p.gpus)
        buffer = per_gpu * p.gpus * PREFETCH * workload.batch_bytes if per_gpu else None
        rows.append(ScalingRow(
            p.gpus, p.per_gpu_batch, p.gpus * p.per_gpu_batch, per_gpu, buffer,
            workload.base_lr * p.gpus * p.per_gpu_batch / workload.per_gpu_batch, p.status, p.reason,
            p.throughput_per_s, p.tokens_per_s,
            p.throughput_per_s / one if one and p.throughput_per_s else None, p.scaling_efficiency,
            p.step_s, p.compute_step_s, p.straggler_rank))
    return ScalingTable(workload, ddp.precision, rows)


def build_bus_rows(payload: CollectivesPayload) -> list[BusRow]:
    rows = []
    for op in dict.fromkeys(p.op for p in payload.points):
        ok = sorted((p for p in payload.points if p.op == op and p.status == "ok" and p.busbw_bytes_per_s
                     and p.algbw_bytes_per_s and p.time_s), key=lambda p: p.size_bytes)
        if ok:
            peak = max(ok, key=lambda p: p.busbw_bytes_per_s.median)
            rows.append(BusRow(op, peak.busbw_bytes_per_s, peak.size_bytes, peak.algbw_bytes_per_s,
                               ok[0].time_s, ok[0].size_bytes))
    return rows
