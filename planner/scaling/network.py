"""All-reduce across nodes and the DDP efficiency it leaves, from measurements and the catalog's network.

Hierarchical ring, as NCCL runs it on N nodes × G GPUs (S = bytes all-reduced per GPU):

    t(N, G, S) = 2 (G-1)/G · S / B_intra            reduce-scatter, then all-gather, inside the node (NVLink)
               + 2 (N-1)/N · S / B_net              ring all-reduce across nodes: each of the G GPU-rails
                                                    carries S/G over B_net/G, the node's NIC share
               + b · [2 (G-1) α_intra + 2 (N-1) α_net]   one latency per ring step, per DDP bucket (b buckets)

B_intra is the measured all_reduce bus bandwidth at DDP's bucket size (collectives document); B_net the
catalog's bytes/s per node × NET_EFFICIENCY, and for an Ethernet fabric (NCCL's socket transport) at most G ×
the bus bandwidth NCCL's socket transport reached per GPU where that was measured (`SocketLink`: the two-node
emulation). DDP shows F + ρ · min(t, W) + max(0, t − W) of it per step (planner/scaling/overlap.py: W = β · c,
the backward window of the compute step c; F the per-step cost fitted on the measured node).
Efficiency = c / (c + that).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload
from planner.scaling.assumed_scaling import GRADIENT_BYTES_PER_PARAMETER
from planner.scaling.overlap import exposed_s
from planner.scaling.scaling import DDP_BUCKET_BYTES, BusBandwidth, build_bus_bandwidth

NET_EFFICIENCY = 0.8       # NCCL's bus bandwidth over the nominal NIC rate (assumed: the loopback emulation has no NIC)
ALPHA_NET_S = {"tcp": 30e-6, "rdma": 10e-6}   # one ring step across nodes: TCP stacks vs EFA/IB/RoCE (assumed)


@dataclass(frozen=True)
class Link:
    """A path all-reduce data takes: bus bandwidth (B/s) and the latency of one ring step (s)."""

    bytes_per_s: float
    alpha_s: float


@dataclass(frozen=True)
class AllReduce:
    intra_s: float
    inter_s: float
    latency_s: float

    @property
    def total_s(self) -> float:
        return self.intra_s + self.inter_s + self.latency_s


def all_reduce_time(nodes: int, gpus_per_node: int, size_bytes: float, intra: Link, net: Link | None,
                    bucket_bytes: float = DDP_BUCKET_BYTES) -> AllReduce:
    """The formula of the module docstring; `net` may be None only with one node."""
    n, g = nodes, gpus_per_node
    if n > 1 and net is None:
        raise ValueError("several nodes need a network link")
    buckets = max(1, math.ceil(size_bytes / bucket_bytes))
    intra_s = 2 * (g - 1) / g * size_bytes / intra.bytes_per_s if g > 1 else 0.0
    inter_s = 2 * (n - 1) / n * size_bytes / net.bytes_per_s if n > 1 and net else 0.0
    latency = buckets * (2 * (g - 1) * intra.alpha_s + (2 * (n - 1) * net.alpha_s if n > 1 and net else 0.0))
    return AllReduce(intra_s, inter_s, latency)


def ddp_efficiency(compute_s: float, comm: AllReduce, fixed_s: float) -> float:
    """c / (c + what DDP shows of the all-reduce): planner/scaling/overlap.py's exposed time."""
    return compute_s / (compute_s + exposed_s(comm.total_s, compute_s, fixed_s))


def intra_link(bus: BusBandwidth, size_bytes: int = DDP_BUCKET_BYTES) -> Link:
    """From a measured all_reduce: bus bandwidth at the bucket size, α from the smallest message's time."""
    g = bus.gpus
    busbw = bus.algbw_at(size_bytes) * 2 * (g - 1) / g
    return Link(busbw, bus.latency_s / (2 * (g - 1)))


SOCKET_FABRICS = ("Ethernet", "Socket")   # no RDMA NIC and no net plugin: NCCL's own socket transport carries it


@dataclass(frozen=True)
class SocketLink:
    """NCCL's socket transport as measured between two one-GPU nodes: the all_reduce bus bandwidth at DDP's
    bucket size, per GPU (on loopback no NIC limits it: this is what NCCL's socket code itself moves)."""

    machine: str
    bytes_per_s: float


def network_link(bytes_per_s: float, technology: str, efficiency: float = NET_EFFICIENCY, gpus_per_node: int = 1,
                 socket: SocketLink | None = None) -> Link:
    """The network's link: the catalog rate × `efficiency`; over an Ethernet fabric at most `gpus_per_node` × the
    measured socket transport's rate per GPU, where one was measured."""
    kind = "tcp" if technology in ("Ethernet", "GPUDirect-TCPX", "GPUDirect-TCPXO", "Socket") else "rdma"
    rate = bytes_per_s * efficiency
    if socket is not None and technology in SOCKET_FABRICS:
        rate = min(rate, socket.bytes_per_s * gpus_per_node)
    return Link(rate, ALPHA_NET_S[kind])


def socket_link(machine: str, collectives: CollectivesPayload) -> SocketLink | None:
    """The socket link of a GPU run whose nodes were joined by NCCL's NET/Socket, else None."""
    layout = collectives.launch.nodes
    bus = build_bus_bandwidth(collectives).get("all_reduce")
    if layout is None or layout.nodes < 2 or layout.transport != "NET/Socket" or bus is None \
            or collectives.device != "cuda":
        return None
    return SocketLink(machine, bus.algbw_at(DDP_BUCKET_BYTES) * 2 * (bus.gpus - 1) / bus.gpus)


@dataclass(frozen=True)
class OverlapFit:
    """One exposed fraction k per measured DDP point: the intra-node model (intra_node.py) calibrates each measured
    path with its own k; across nodes, where the path changes, overlap.py's model replaces it."""

    exposed_fraction: float   # k, the median over every point
    points: list[tuple[str, int, float]]  # (workload, gpus, k of that point)

    def for_workload(self, workload: str) -> float:
        """The workload's own k where it was measured (resnet50's small gradient exposes fixed DDP costs
        that gpt-small's does not), else the median of all."""
        own = [k for w, _, k in self.points if w == workload]
        return statistics.median(own) if own else self.exposed_fraction


def fit_overlap(ddp: DdpPayload, collectives: CollectivesPayload) -> OverlapFit | None:
    """k from every multi-GPU DDP point of one node: measured exposed time over the modelled all-reduce."""
    bus = build_bus_bandwidth(collectives).get("all_reduce")
    params = {w.workload: w.parameters for w in ddp.workloads}
    if bus is None:
        return None
    link = intra_link(bus)
    fits = []
    for p in ddp.points:
        if p.gpus < 2 or p.status != "ok" or p.compute_step_s is None or p.step_s is None or p.workload not in params:
            continue
        comm = all_reduce_time(1, p.gpus, params[p.workload] * GRADIENT_BYTES_PER_PARAMETER, link, None)
        fits.append((p.workload, p.gpus, max(0.0, p.step_s.median - p.compute_step_s.median) / comm.total_s))
    if not fits:
        return None
    return OverlapFit(statistics.median(k for _, _, k in fits), fits)


PCIE_PEER_BYTES_PER_S = 25e9  # a GPU pair over PCIe 4.0 x16 without NVLink (assumed: ~80 % of 32 GB/s)


@dataclass(frozen=True)
class MeasuredNode:
    """One machine's multi-GPU documents, measured on GPUs: the base of the network model."""

    gpu: str
    ddp: DdpPayload
    collectives: CollectivesPayload


def intra_links(measured: MeasuredNode, gpus: list[tuple[str, float | None]], source_peer: float | None) -> dict:
    """Every catalog GPU's intra-node link: the measured one for the measured GPU, else the measured bus
    bandwidth scaled by the datasheet peer-bandwidth ratio (PCIe-only GPUs: PCIE_PEER_BYTES_PER_S)."""
    bus = build_bus_bandwidth(measured.collectives)["all_reduce"]
    base = intra_link(bus)
    out = {}
    for name, peer in gpus:
        ratio = (peer or PCIE_PEER_BYTES_PER_S) / source_peer if source_peer else 1.0
        out[name] = base if name == measured.gpu else Link(base.bytes_per_s * ratio, base.alpha_s)
    return out
