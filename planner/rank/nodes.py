"""Rank by nodes: 1, 2, 4, … nodes of every multi-node instance, around `rank_instances` (left as it is).

Each node count becomes a virtual catalog entry (`replace(instance, gpu_count=G·n, price ×n)`) and a
scaling provider that knows its nodes: efficiency(n) = efficiency(1 node, as the ranking would give it)
× the network factor ddp_efficiency(n) / ddp_efficiency(1) of planner/scaling/network.py, with the
compute step of the job's own per-GPU prediction and the per-step cost F fitted on the measured node
(planner/scaling/overlap.py). An Ethernet fabric is held to what NCCL's socket transport was measured to move
per GPU, where a two-node run over sockets is loaded (`socket_of`). Node counts double up to MAX_NODES, and
stop after the first count whose network factor is below MIN_EFFICIENCY.

Adding nodes stops paying at the first count where the cost rises by a larger fraction than the time
falls, or the efficiency is below MIN_EFFICIENCY; that row is marked `knee`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from gpuplan_schema.results import MachineResults
from planner.rank.jobs import Job
from planner.rank.ranking import (
    OK,
    Estimate,
    FeedProvider,
    Predictor,
    RankedInstance,
    no_feed_limit,
    rank_instances,
)
from planner.scaling.assumed_scaling import Scaling, ScalingProvider, SyncLoad, assumed_scaling
from planner.scaling.network import (
    GRADIENT_BYTES_PER_PARAMETER,
    NET_EFFICIENCY,
    Link,
    MeasuredNode,
    SocketLink,
    all_reduce_time,
    ddp_efficiency,
    intra_links,
    network_link,
    socket_link,
)
from planner.scaling.overlap import iter_sync_points
from planner.scaling.scaling import gpu_ddp_run
from planner.specs import GpuSpec, InstanceSpec, load_gpu_catalog, load_instances, match_gpu

MAX_NODES = 16
MIN_EFFICIENCY = 0.5


@dataclass(frozen=True)
class NetworkInputs:
    """What the network model needs for a job: the gradient, DDP's per-step cost F, the intra-node link of a
    GPU and, where measured, NCCL's socket transport."""

    parameters: int
    fixed_s: float                  # F, fitted on the measured node (planner/scaling/overlap.py)
    intra_by_gpu: dict[str, Link]   # measured or scaled per GPU model
    default_intra: Link             # for a GPU with neither
    socket: SocketLink | None = None

    def words(self, fitted_on: str) -> str:
        """The assumptions, for the line above the table: 'gradient 652 MB fp32; F 2.6 ms …'."""
        socket = (f"; Ethernet fabrics at most {self.socket.bytes_per_s / 1e9:.2g} GB/s per GPU, NCCL's socket "
                  f"transport as measured on {self.socket.machine}") if self.socket else ""
        return (f"gradient {self.parameters * GRADIENT_BYTES_PER_PARAMETER / 1e6:.0f} MB fp32; DDP's per-step cost "
                f"F {self.fixed_s * 1e3:.2g} ms (fitted on {fitted_on}); NCCL reaches {NET_EFFICIENCY:.0%} of the "
                f"NIC rate (assumed){socket}")


@dataclass(frozen=True)
class NodeRow:
    ranked: RankedInstance
    base: str
    nodes: int
    gpus_total: int
    network: str
    knee: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {**self.ranked.to_dict(), "base_instance": self.base, "nodes": self.nodes,
                "gpus_total": self.gpus_total, "efficiency": self.ranked.scaling_efficiency,
                "network": self.network, "knee": self.knee}


def network_factor(inputs: NetworkInputs, spec: InstanceSpec, nodes: int, compute_s: float) -> float:
    g = spec.gpu_count
    intra = inputs.intra_by_gpu.get(spec.gpu, inputs.default_intra)
    assert spec.network is not None
    net = network_link(spec.network.bytes_per_s, spec.network.technology, gpus_per_node=g, socket=inputs.socket)
    size = inputs.parameters * GRADIENT_BYTES_PER_PARAMETER
    one = ddp_efficiency(compute_s, all_reduce_time(1, g, size, intra, None), inputs.fixed_s)
    many = ddp_efficiency(compute_s, all_reduce_time(nodes, g, size, intra, net), inputs.fixed_s)
    return many / one


def _network_text(spec: InstanceSpec) -> str:
    if spec.network is None:
        return "–"
    return f"{spec.network.bytes_per_s * 8 / 1e9:.0f} Gb/s {spec.network.technology}"


def expand_nodes(job: Job, predict: Predictor, inputs: NetworkInputs, *,
                 instances: tuple[InstanceSpec, ...] | None = None, scaling: ScalingProvider = assumed_scaling,
                 max_nodes: int = MAX_NODES, sort_by: str = "cost", feed: FeedProvider = no_feed_limit
                 ) -> list[NodeRow]:
    """The ranking over node counts: every instance at one node, multi-node ones at 2, 4, … nodes."""
    base = load_instances() if instances is None else instances
    estimates: dict[str, Estimate | None] = {}

    def remember(gpu: GpuSpec) -> Estimate | None:
        estimates[gpu.name] = predict(gpu)
        return estimates[gpu.name]

    virtual: dict[str, tuple[InstanceSpec, int]] = {}
    for spec in base:
        virtual[spec.name] = (spec, 1)
        n = 2
        while spec.multi_node and n <= max_nodes:
            virtual[f"{n} × {spec.name}"] = (spec, n)
            n *= 2

    def provider(spec: InstanceSpec, load: SyncLoad | None = None) -> Scaling:
        original, n = virtual[spec.name]
        one = scaling(original, load)
        estimate = estimates.get(original.gpu_spec.name)
        if n == 1 or estimate is None:
            return one
        factor = network_factor(inputs, original, n, estimate.batch / estimate.samples_per_s)
        return Scaling(one.efficiency * factor, f"{one.note}; × {factor:.3f} for {n} nodes over "
                       f"{_network_text(original)} (planner/scaling/network.py)", one.measured,
                       *(None if b is None else b * factor for b in (one.low, one.high)))

    specs = [spec if n == 1 else replace(spec, name=name, gpu_count=spec.gpu_count * n,
                                         price_usd_per_hour=spec.price_usd_per_hour * n, vcpus=spec.vcpus * n)
             for name, (spec, n) in virtual.items()]
    # the same vCPU feed limit as the main ranking: one instance, one figure per job
    ranked = rank_instances(job, remember, instances=specs, scaling=provider, sort_by=sort_by, feed=feed)
    rows = [NodeRow(r, virtual[r.instance][0].name, virtual[r.instance][1], r.gpu_count,
                    _network_text(virtual[r.instance][0])) for r in ranked]
    return _trim_and_mark(rows)


def _trim_and_mark(rows: list[NodeRow]) -> list[NodeRow]:
    """Per instance: drop node counts after the first below MIN_EFFICIENCY; mark where adding stops paying."""
    by_base: dict[str, list[NodeRow]] = {}
    for row in rows:
        by_base.setdefault(row.base, []).append(row)
    keep: dict[int, NodeRow] = {}
    for group in by_base.values():
        ok = sorted((r for r in group if r.ranked.status == OK), key=lambda r: r.nodes)
        knee_found = False
        for prev, row in zip([None, *ok], ok, strict=False):
            if knee_found:
                break
            knee = prev is not None and _stops_paying(prev.ranked, row.ranked)
            keep[id(row)] = replace(row, knee=knee)
            knee_found = knee
        keep.update({id(r): r for r in group if r.ranked.status != OK and r.nodes == 1})
    return [keep[id(r)] for r in rows if id(r) in keep]


def _stops_paying(prev: RankedInstance, row: RankedInstance) -> bool:
    assert prev.hours and row.hours and prev.cost_usd and row.cost_usd and row.scaling_efficiency
    time_falls = 1 - row.hours / prev.hours
    cost_rises = row.cost_usd / prev.cost_usd - 1
    return cost_rises > time_falls or row.scaling_efficiency < MIN_EFFICIENCY


def node_inputs(measured: MeasuredNode, workload: str, socket: SocketLink | None = None) -> NetworkInputs | None:
    """NetworkInputs for `workload` from a GPU machine's ddp + collectives documents: F of the workload's own
    points (the median over their GPU counts) where it was measured, else of every point."""
    points = list(iter_sync_points(measured.ddp, measured.collectives))
    params = {w.workload: w.parameters for w in measured.ddp.workloads}
    if not points or workload not in params:
        return None
    own = [p.fixed_s for p in points if p.workload == workload] or [p.fixed_s for p in points]
    source = match_gpu(measured.gpu)
    catalog = [(g.name, g.peer_bytes_per_s) for g in load_gpu_catalog()]
    links = intra_links(measured, catalog, source.peer_bytes_per_s if source else None)
    default = links.get(source.name if source else "", next(iter(links.values())))
    return NetworkInputs(params[workload], statistics.median(own), links, default, socket)


def socket_of(machines: Iterable[MachineResults]) -> SocketLink | None:
    """NCCL's socket transport from a loaded run whose nodes it joined (the two-node emulation), the slowest
    where several were loaded; None where none was."""
    found = [link for m in machines if (run := gpu_ddp_run(m)) is not None
             and (link := socket_link(m.machine, run[1])) is not None]
    return min(found, key=lambda link: (link.bytes_per_s, link.machine), default=None)


def measured_node(machines: Iterable[MachineResults]) -> MeasuredNode | None:
    """The machine with the most GPUs whose ddp and collectives ran on GPUs on one node (never a CPU test run,
    never a run across nodes, which measured the network too)."""
    best = None
    for m in machines:
        run, env = gpu_ddp_run(m), m.environment
        if run is None or not env or not env.gpus or run[0].launch.node_count > 1:
            continue
        ddp, coll = run
        if best is None or coll.world_size > best.collectives.world_size:
            spec = match_gpu(env.gpus[0].name)  # NVML's "NVIDIA H200" → the catalog's "H200 SXM"
            best = MeasuredNode(spec.name if spec else env.gpus[0].name, ddp, coll)
    return best


def build_node_ranking(job: Job, predict: Predictor, machines: Iterable[MachineResults],
                       scaling: ScalingProvider = assumed_scaling, feed: FeedProvider = no_feed_limit
                       ) -> list[NodeRow]:
    """The plan's hook: `--job` ranked over node counts, from the loaded machines (empty when none has
    multi-GPU measurements on GPUs for the job's workload)."""
    machines = list(machines)
    measured = measured_node(machines)
    inputs = node_inputs(measured, job.workload, socket_of(machines)) if measured else None
    return expand_nodes(job, predict, inputs, scaling=scaling, feed=feed) if inputs else []
