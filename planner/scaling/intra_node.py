"""Data-parallel efficiency inside one instance, from the job's gradient and step and what was measured.

The model across nodes (planner/scaling/network.py) at one node:

    efficiency = c / (c + k · t(1, G, S, link))

c: the job's compute step on the instance's GPU (its per-GPU prediction: batch ÷ samples/s); S: gradient
bytes (parameters × 4: DDP reduces fp32 gradients under autocast); G: the instance's GPUs; t: the ring
all-reduce over the instance's GPU-to-GPU path; k: the share of it DDP leaves exposed, fitted where measured
(the workload's own k where it was measured, else that of the measured workload nearest in gradient size).
Two paths were measured on one 2-GPU machine:

- NVLink (`nvlink`, an `nvlink-bridge` pair, `infinity-fabric`): its DDP and all_reduce documents; another
  GPU's bus bandwidth is the measured one × the datasheet peer-bandwidth ratio;
- PCIe: the same DDP with NCCL's peer-to-peer off (`diagnostics/ddp-no-p2p/` of that machine), so the
  gradients cross host memory as on cloud PCIe instances without peer-to-peer; used as measured.

The band: published hosts (planner/specs/published_scaling.json) synchronised far slower than the machine we
measured, each at about one effective bandwidth for every model (planner/check/scaling_check.py); the low end
of an efficiency is a host at the 10th percentile of that bandwidth over the published rows of its path (9 in
10 were faster), the high end 1.0 (nothing exposed).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload
from gpuplan_schema.results import MachineResults, load_machine
from planner.scaling.assumed_scaling import GRADIENT_BYTES_PER_PARAMETER, Scaling, SyncLoad
from planner.scaling.network import (
    Link,
    OverlapFit,
    all_reduce_time,
    fit_overlap,
    intra_link,
)
from planner.scaling.scaling import build_bus_bandwidth, gpu_ddp_run
from planner.specs import GpuSpec, InstanceSpec, match_gpu

NO_P2P_FOLDER = Path("diagnostics") / "ddp-no-p2p"
NVLINK_CLASS = ("nvlink", "nvlink-bridge", "infinity-fabric")
SLOW_HOST_QUANTILE = 0.9


@dataclass(frozen=True)
class LinkRun:
    """One measured way the GPUs of a node synchronise: the all_reduce link at DDP's bucket and DDP's k."""

    path: str                        # "nvlink" or "pcie"
    machine: str                     # where it was measured, as the notes cite it
    link: Link
    peer_bytes_per_s: float | None   # the measured GPU's datasheet peer bandwidth (NVLink: scale by it)
    fit: OverlapFit
    gradient_bytes: Mapping[str, float]   # of each workload the DDP run measured

    def k_for(self, load: SyncLoad) -> tuple[float, str]:
        """The workload's own k where measured, else that of the measured workload nearest in gradient size:
        a small gradient leaves DDP's fixed per-step costs exposed (resnet50's k is several times gpt-small's),
        so size, not the median, says which measurement a new model is like."""
        if load.workload in self.gradient_bytes:
            return self.fit.for_workload(load.workload), f"{load.workload}'s own"
        def distance(w: str) -> tuple[float, str]:
            return abs(math.log(self.gradient_bytes[w] / load.gradient_bytes)), w
        nearest = min(self.gradient_bytes, key=distance)
        return self.fit.for_workload(nearest), f"{nearest}'s, the nearest gradient measured"


def exposed_sync_s(run: LinkRun, link: Link, gpus: int, load: SyncLoad) -> float:
    """k × the ring all-reduce of the gradient over `link` on `gpus` GPUs (one node)."""
    return run.k_for(load)[0] * all_reduce_time(1, gpus, load.gradient_bytes, link, None).total_s


def path_of(interconnect: str | None, gpus: int) -> str:
    """The measured path an instance's GPUs use: an NVLink-bridged pair is NVLink, four of them are not."""
    if interconnect in NVLINK_CLASS and not (interconnect == "nvlink-bridge" and gpus > 2):
        return "nvlink"
    return "pcie"


def link_for(runs: Mapping[str, LinkRun], gpu: GpuSpec, path: str) -> tuple[LinkRun, Link] | None:
    run = runs.get(path)
    if run is None:
        return None
    if path == "nvlink" and run.peer_bytes_per_s and gpu.peer_bytes_per_s:
        ratio = gpu.peer_bytes_per_s / run.peer_bytes_per_s
        return run, Link(run.link.bytes_per_s * ratio, run.link.alpha_s)
    return run, run.link


def modelled_efficiency(runs: Mapping[str, LinkRun], gpu: GpuSpec, gpus: int, path: str,
                        load: SyncLoad) -> tuple[float, float, LinkRun, Link] | None:
    """(efficiency, exposed seconds, the run, the link) of `gpus` GPUs on `path`; None where the path was
    not measured."""
    found = link_for(runs, gpu, path)
    if found is None:
        return None
    run, link = found
    exposed = exposed_sync_s(run, link, gpus, load)
    return load.compute_s / (load.compute_s + exposed), exposed, run, link


@dataclass(frozen=True)
class SyncModel:
    """The measured paths and, per path, the sync bandwidth of a slow published host (the band's low end)."""

    runs: Mapping[str, LinkRun]
    slow_host: Mapping[str, float]   # path → the sync bandwidth 9 in 10 published rows beat (bytes/s)

    def scaling(self, instance: InstanceSpec, load: SyncLoad) -> Scaling | None:
        n = instance.gpu_count
        path = path_of(instance.gpu_interconnect, n)
        found = modelled_efficiency(self.runs, instance.gpu_spec, n, path, load)
        if found is None:
            return None
        efficiency, exposed, run, link = found
        k, whose = run.k_for(load)
        slow_bytes = self.slow_host.get(path)
        low = low_efficiency(load, n, exposed, slow_bytes) if slow_bytes else efficiency
        slow = (f"; on a host syncing at {slow_bytes / 1e9:.2g} GB/s, as slow as the slowest tenth of published "
                f"{'NVLink' if path == 'nvlink' else 'PCIe'} rows (planner/specs/published_scaling.json): "
                f"{low:.2f}") if slow_bytes else ""
        note = (f"modelled: {exposed * 1e3:.3g} ms of gradient sync exposed per {load.compute_s * 1e3:.3g} ms step "
                f"({load.gradient_bytes / 1e9:.3g} GB over {_link_words(path)} at {link.bytes_per_s / 1e9:.3g} GB/s, "
                f"k {k:.2f}, {whose} on {run.machine}) → {efficiency:.2f} on "
                f"{n} GPUs{slow} (planner/scaling/intra_node.py)")
        return Scaling(efficiency, note, measured=False, low=low, high=1.0)


def ring_bytes(gradient_bytes: float, gpus: int) -> float:
    """What each GPU sends in a ring all-reduce of the gradient (reduce-scatter, then all-gather)."""
    return 2 * (gpus - 1) / gpus * gradient_bytes


def low_efficiency(load: SyncLoad, gpus: int, exposed_s: float, slow_bytes_per_s: float) -> float:
    """The efficiency on a host whose sync runs at `slow_bytes_per_s` (never above the model's own)."""
    slow = max(exposed_s, ring_bytes(load.gradient_bytes, gpus) / slow_bytes_per_s)
    return load.compute_s / (load.compute_s + slow)


def _link_words(path: str) -> str:
    return "NVLink" if path == "nvlink" else "PCIe through host memory"


def load_link_runs(machines: Iterable[MachineResults]) -> dict[str, LinkRun]:
    """The NVLink run of the machine whose DDP measured the most workloads (then the most GPUs), and the
    PCIe run beside it (its diagnostics/ddp-no-p2p/), where they exist. CPU test runs never count."""
    best, best_key = None, (0, 0)
    for m in machines:
        docs = _ddp_and_collectives(m)
        gpu = match_gpu(m.gpu_name or "")
        if docs is None or gpu is None or not gpu.peer_bytes_per_s:
            continue
        key = (len(docs[0].workloads), docs[1].world_size)
        if key > best_key:
            best, best_key = (m, docs, gpu), key
    if best is None:
        return {}
    machine, (ddp, collectives), gpu = best
    runs = {}
    if (nvlink := _run("nvlink", machine.machine, ddp, collectives, gpu.peer_bytes_per_s)) is not None:
        runs["nvlink"] = nvlink
    folder = machine.folder / NO_P2P_FOLDER
    if folder.is_dir() and (docs := _ddp_and_collectives(load_machine(folder))) is not None:
        pcie = _run("pcie", f"{machine.machine} with NCCL's peer-to-peer off", *docs, None)
        if pcie is not None:
            runs["pcie"] = pcie
    return runs


def _ddp_and_collectives(machine: MachineResults) -> tuple[DdpPayload, CollectivesPayload] | None:
    """One node's DDP run on GPUs: a run across nodes measures the network too."""
    run = gpu_ddp_run(machine)
    return run if run is not None and run[0].launch.node_count == 1 else None


def _run(path: str, machine: str, ddp: DdpPayload, collectives: CollectivesPayload,
         peer: float | None) -> LinkRun | None:
    fit = fit_overlap(ddp, collectives)
    bus = build_bus_bandwidth(collectives).get("all_reduce")
    if fit is None or bus is None:
        return None
    measured = {p.workload for p in ddp.points if p.gpus > 1 and p.status == "ok"}
    gradients = {w.workload: w.parameters * GRADIENT_BYTES_PER_PARAMETER for w in ddp.workloads
                 if w.workload in measured}
    return LinkRun(path, machine, intra_link(bus), peer, fit, gradients)

