"""All-reduce across nodes and the DDP efficiency it leaves, from measurements and the catalog's network.

Hierarchical ring, as NCCL runs it on N nodes × G GPUs (S = bytes all-reduced per GPU):

    t(N, G, S) = 2 (G-1)/G · S / B_intra            reduce-scatter, then all-gather, inside the node (NVLink)
               + 2 (N-1)/N · S / B_net              ring all-reduce across nodes: each of the G GPU-rails
                                                    carries S/G over B_net/G, the node's NIC share
               + b · [2 (G-1) α_intra + 2 (N-1) α_net]   one latency per ring step, per DDP bucket (b buckets)

B_intra is the measured all_reduce bus bandwidth at DDP's bucket size (collectives document); B_net
the catalog's bytes/s per node × NET_EFFICIENCY. DDP exposes k · t of it per step, k fitted on one
node from the ddp document: k = (step - compute step) / t(1, G, S) (k < 1: overlap with backward;
k > 1: DDP's bucket copies cost more than the ring alone). Efficiency = c / (c + k · t), c = compute step.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload
from planner.scaling.assumed_scaling import GRADIENT_BYTES_PER_PARAMETER
from planner.scaling.scaling import DDP_BUCKET_BYTES, BusBandwidth, build_bus_bandwidth

NET_EFFICIENCY = 0.8       # NCCL's bus bandwidth over the nominal NIC rate (assumed; the emulation measures it)
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


def ddp_efficiency(compute_s: float, comm: AllReduce, exposed_fraction: float) -> float:
    return compute_s / (compute_s + exposed_fraction * comm.total_s)


def intra_link(bus: BusBandwidth, size_bytes: int = DDP_BUCKET_BYTES) -> Link:
    """From a measured all_reduce: bus bandwidth at the bucket size, α from the smallest message's time."""
    g = bus.gpus
    busbw = bus.algbw_at(size_bytes) * 2 * (g - 1) / g
    return Link(busbw, bus.latency_s / (2 * (g - 1)))


def network_link(bytes_per_s: float, technology: str, efficiency: float = NET_EFFICIENCY) -> Link:
    kind = "tcp" if technology in ("Ethernet", "GPUDirect-TCPX", "GPUDirect-TCPXO", "Socket") else "rdma"
    return Link(bytes_per_s * efficiency, ALPHA_NET_S[kind])


@dataclass(frozen=True)
class OverlapFit:
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


@dataclass(frozen=True)
class TransferCheck:
    """The emulation's validation: run B's DDP step predicted from run A's and B's measured bandwidth."""

    workload: str
    exposed_fraction: float      # k, fitted on run A
    link_a: Link
    link_b: Link
    compute_s: float             # run A's step without gradient sync
    predicted_step_s: float
    measured_step_s: float
    compute_b_s: float           # run B's own step without gradient sync (same run, same CPU/GPU load)
    comm_b_s: float              # k × the modelled all-reduce over B's link

    @property
    def error(self) -> float:
        """Prediction from run A's compute step (the GPU emulation's headline figure)."""
        return self.predicted_step_s / self.measured_step_s - 1

    @property
    def error_own_compute(self) -> float:
        """Prediction from B's own compute step: the network part alone, without run-to-run compute drift
        (the shared CPU of CI drifts 2× between runs)."""
        return (self.compute_b_s + self.comm_b_s) / self.measured_step_s - 1


def validate_transfer(ddp_a: DdpPayload, coll_a: CollectivesPayload, ddp_b: DdpPayload,
                      coll_b: CollectivesPayload, gpus: int = 2) -> list[TransferCheck]:
    """For each workload measured on `gpus` ranks in both runs: k from A, then B's step from A's compute
    step plus k × the all-reduce over B's measured link (its all_reduce bus bandwidth at the bucket size)."""
    params = {w.workload: w.parameters for w in ddp_a.workloads}
    checks = []
    for a in (p for p in ddp_a.points if p.gpus == gpus and p.status == "ok" and p.compute_step_s):
        b = next((p for p in ddp_b.points if (p.workload, p.gpus, p.status) == (a.workload, gpus, "ok")), None)
        if b is None or a.workload not in params or a.step_s is None or b.step_s is None:
            continue
        size = params[a.workload] * GRADIENT_BYTES_PER_PARAMETER
        bucket = min(size, DDP_BUCKET_BYTES)
        links = [intra_link(build_bus_bandwidth(c)["all_reduce"], bucket) for c in (coll_a, coll_b)]
        t_a, t_b = (all_reduce_time(1, gpus, size, link, None).total_s for link in links)
        compute = a.compute_step_s.median
        k = max(0.0, a.step_s.median - compute) / t_a
        own = b.compute_step_s.median if b.compute_step_s else compute
        checks.append(TransferCheck(a.workload, k, links[0], links[1], compute, compute + k * t_b, b.step_s.median,
                                    own, k * t_b))
    return checks
