"""Multi-GPU scaling for the planner: what `ddp` and `collectives` measured, typed, and a stated
fallback where nothing was measured.

    scaling = load_scaling(machine)                  # MachineScaling; empty when neither document exists
    estimate = scaling.efficiency("gpt-small", 4)    # ScalingEstimate(value, source, note)
    estimate.source                                  # "measured", "modelled" or "assumed"
    scaling.bus["all_reduce"].algbw_at(25 << 20)     # B/s at a message size (log-log interpolation)

Order of preference for an efficiency on `gpus` GPUs:
1. measured: the `ddp` document's scaling efficiency of that workload on that many GPUs;
2. modelled: from the measured all_reduce bandwidth on that many GPUs, the workload's gradient bytes
   and its 1-GPU step, assuming no overlap of communication with the backward pass (a lower bound:
   DDP overlaps most of it): step / (step + gradient_bytes / algbw at DDP's bucket size);
3. assumed: ASSUMED_EFFICIENCY, the seed analyses' "4 GPUs give 3-4×" (its midpoint, 3.5/4).
A CPU test run (gloo, tiny sizes) is never used as a measurement for planning.

For the instance ranking, `build_scaling(gather_efficiencies(machines))` takes every measured DDP efficiency
of the loaded machines by GPU model and count, and answers an instance with k GPUs from a measurement at exactly
k GPUs where one exists, else per doubling from the largest count measured (see `measured_scaling`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload
from gpuplan_schema.payloads.topology import describe_topology
from gpuplan_schema.results import MachineResults
from gpuplan_schema.stats import Stat
from planner.scaling.assumed_scaling import Scaling, ScalingProvider, SyncLoad, assumed_scaling
from planner.specs import InstanceSpec, match_gpu
from planner.units import short_rate

if TYPE_CHECKING:  # intra_node imports this module
    from planner.scaling.intra_node import SyncModel

ASSUMED_EFFICIENCY = 0.875
ASSUMED_NOTE = "assumed: the seed analyses' 4 GPUs → 3–4× (0.875, the midpoint); not measured on this machine"
DDP_BUCKET_BYTES = 25 << 20
Source = Literal["measured", "modelled", "assumed"]


@dataclass(frozen=True)
class ScalingEstimate:
    value: float
    source: Source
    note: str


@dataclass(frozen=True)
class ScalingPoint:
    gpus: int
    per_gpu_batch: int
    throughput_per_s: float
    efficiency: float | None
    step: Stat
    compute_step: Stat | None
    straggler_rank: int | None


@dataclass(frozen=True)
class WorkloadScaling:
    workload: str
    precision: str
    points: dict[int, ScalingPoint]   # by GPU count; only the points that ran


@dataclass(frozen=True)
class BusBandwidth:
    """One collective on `gpus` GPUs over the measured message sizes (ascending)."""

    op: str
    gpus: int
    sizes_bytes: list[int]
    busbw: list[Stat]
    algbw: list[Stat]
    time: list[Stat]

    @property
    def peak_busbw_bytes_per_s(self) -> float:
        return max(s.median for s in self.busbw)

    @property
    def latency_s(self) -> float:
        """Time of one operation at the smallest size measured (8 KiB on a GPU)."""
        return self.time[0].median

    def algbw_at(self, size_bytes: int) -> float:
        """Algorithm bandwidth at `size_bytes`, interpolated linearly in log size and log bandwidth,
        held flat beyond the measured sizes."""
        xs = [math.log(s) for s in self.sizes_bytes]
        ys = [math.log(s.median) for s in self.algbw]
        x = math.log(size_bytes)
        if x <= xs[0] or len(xs) == 1:
            return math.exp(ys[0])
        for i in range(1, len(xs)):
            if x <= xs[i]:
                t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
                return math.exp(ys[i - 1] + t * (ys[i] - ys[i - 1]))
        return math.exp(ys[-1])

    def time_at(self, size_bytes: float) -> float:
        """One operation's time at `size_bytes`, interpolated linearly in log size and log time; below the
        smallest size measured, that size's time (latency); beyond the largest, the largest's bandwidth."""
        xs = [math.log(s) for s in self.sizes_bytes]
        ys = [math.log(t.median) for t in self.time]
        x = math.log(size_bytes)
        if x <= xs[0] or len(xs) == 1:
            return self.time[0].median if x <= xs[0] else self.time[0].median * size_bytes / self.sizes_bytes[0]
        for i in range(1, len(xs)):
            if x <= xs[i]:
                t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
                return math.exp(ys[i - 1] + t * (ys[i] - ys[i - 1]))
        return self.time[-1].median * size_bytes / self.sizes_bytes[-1]


@dataclass(frozen=True)
class MachineScaling:
    machine: str
    workloads: dict[str, WorkloadScaling] = field(default_factory=dict)
    bus: dict[str, BusBandwidth] = field(default_factory=dict)   # by op, at the collectives' GPU count
    topology: str | None = None
    matmul_spread: float | None = None
    cpu_test_only: bool = False       # the documents come from a gloo run on CPU processes

    @property
    def measured(self) -> bool:
        return bool(self.workloads or self.bus)

    def efficiency(self, workload: str, gpus: int, *, step_s: float | None = None,
                   gradient_bytes: float | None = None) -> ScalingEstimate:
        """Scaling efficiency of `workload` on `gpus` GPUs: measured, else modelled, else assumed."""
        if gpus == 1:
            return ScalingEstimate(1.0, "measured", "one GPU: nothing to scale")
        point = self.workloads.get(workload, WorkloadScaling(workload, "", {})).points.get(gpus)
        if point is not None and point.efficiency is not None:
            return ScalingEstimate(point.efficiency, "measured",
                                   f"measured: DDP on {gpus} GPUs at per-GPU batch {point.per_gpu_batch}, "
                                   f"{short_rate(point.throughput_per_s)} samples/s")
        all_reduce = self.bus.get("all_reduce")
        if all_reduce is not None and all_reduce.gpus == gpus and step_s and gradient_bytes:
            comm_s = gradient_bytes / all_reduce.algbw_at(DDP_BUCKET_BYTES)
            return ScalingEstimate(step_s / (step_s + comm_s), "modelled",
                                   f"modelled from the measured all_reduce on {gpus} GPUs: "
                                   f"{comm_s * 1e3:.3g} ms of gradient reduction per {step_s * 1e3:.3g} ms step, "
                                   "no overlap assumed (a lower bound)")
        return ScalingEstimate(ASSUMED_EFFICIENCY, "assumed", ASSUMED_NOTE)


def load_scaling(machine: MachineResults) -> MachineScaling:
    """The machine's multi-GPU measurements (empty when it has neither a ddp nor a collectives document)."""
    ddp = _payload(machine, "ddp")
    collectives = _payload(machine, "collectives")
    tiny = any(p is not None and p.scale == "tiny" for p in (ddp, collectives))
    if tiny:  # a test of the path on CPU processes: nothing in it may drive a GPU plan
        return MachineScaling(machine.machine, cpu_test_only=True)
    return MachineScaling(
        machine.machine, workloads=build_workload_scaling(ddp) if ddp else {},
        bus=build_bus_bandwidth(collectives) if collectives else {},
        topology=describe_topology(collectives.topology) if collectives and collectives.topology else None,
        matmul_spread=ddp.matmul_spread if ddp else None)


def _payload(machine: MachineResults, kind: str):  # noqa: ANN202 - the payload type follows the kind
    return next((d.payload for d in machine.documents.values() if d.kind == kind), None)


def gpu_ddp_run(machine: MachineResults) -> tuple[DdpPayload, CollectivesPayload] | None:
    """The machine's ddp and collectives documents where both exist and DDP ran on GPUs (never a CPU test run)."""
    ddp, collectives = _payload(machine, "ddp"), _payload(machine, "collectives")
    if ddp is None or collectives is None or ddp.device != "cuda":
        return None
    return ddp, collectives


def build_workload_scaling(ddp: DdpPayload) -> dict[str, WorkloadScaling]:
    result: dict[str, WorkloadScaling] = {}
    for p in ddp.points:
        if p.status != "ok" or p.step_s is None or p.throughput_per_s is None:
            continue
        scaling = result.setdefault(p.workload, WorkloadScaling(p.workload, p.precision, {}))
        scaling.points[p.gpus] = ScalingPoint(p.gpus, p.per_gpu_batch, p.throughput_per_s, p.scaling_efficiency,
                                              p.step_s, p.compute_step_s, p.straggler_rank)
    return result


def build_bus_bandwidth(payload: CollectivesPayload) -> dict[str, BusBandwidth]:
    result = {}
    for op in dict.fromkeys(p.op for p in payload.points):
        ok = sorted((p for p in payload.points if p.op == op and p.status == "ok" and p.busbw_bytes_per_s
                     and p.algbw_bytes_per_s and p.time_s), key=lambda p: p.size_bytes)
        if ok:
            result[op] = BusBandwidth(op, payload.world_size, [p.size_bytes for p in ok],
                                      [p.busbw_bytes_per_s for p in ok], [p.algbw_bytes_per_s for p in ok],
                                      [p.time_s for p in ok])
    return result


@dataclass(frozen=True)
class MeasuredEfficiency:
    """One workload's measured DDP efficiency on `gpus` GPUs of a catalog GPU model, and where."""

    gpu: str          # catalog GPU name (match_gpu), so that "NVIDIA H200" meets an instance's "H200 SXM"
    gpus: int
    efficiency: float
    workload: str
    machine: str


def gather_efficiencies(machines: Iterable[MachineResults]) -> list[MeasuredEfficiency]:
    """Every measured multi-GPU DDP efficiency of the given machines (loaded once by the caller, who
    refuses a broken folder with its one-line error rather than planning without it)."""
    found = []
    for machine in machines:
        gpu = match_gpu(machine.gpu_name) if machine.gpu_name else None
        ddp = _payload(machine, "ddp")
        # A run across nodes (the two-node emulation, a cluster) measures the network too: not one instance.
        if gpu is None or (ddp is not None and ddp.launch.node_count > 1):
            continue
        found += [MeasuredEfficiency(gpu.name, n, pt.efficiency, w.workload, machine.machine)
                  for w in load_scaling(machine).workloads.values() for n, pt in w.points.items()
                  if n > 1 and pt.efficiency]
    return found


def measured_scaling(measured: list[MeasuredEfficiency], instance: InstanceSpec) -> Scaling | None:
    """The instance's efficiency from the measurements of its GPU model: the lowest among workloads and
    machines at exactly its GPU count where that was measured (a workload's own figure is not known to
    the ranking, so the cautious one), else that lowest at the largest measured count compounded per
    doubling (efficiency(k) = e_n ** (log2 k / log2 n)). None where the GPU model has no measurement."""
    mine = [m for m in measured if m.gpu == instance.gpu_spec.name]
    if not mine or instance.gpu_count == 1:
        return None
    k = instance.gpu_count
    exact = k in {m.gpus for m in mine}
    n = k if exact else max(m.gpus for m in mine)
    peers = [m for m in mine if m.gpus == n]
    low = min(peers, key=lambda m: (m.efficiency, m.machine, m.workload))
    value = low.efficiency ** (math.log2(k) / math.log2(n))
    how = "measured" if exact else f"extrapolated per doubling from the measured {n}-GPU"
    return Scaling(value, f"{how} DDP efficiency on {low.machine} ({low.efficiency:.3f} on {n} GPUs, "
                          f"{_which(low, peers)}) → {value:.2f} on {k}", measured=True)


def _which(low: MeasuredEfficiency, peers: list[MeasuredEfficiency]) -> str:
    """Which figure among those at its count: 'gpt-small's, the lower of gpt-small and resnet50'."""
    if len(peers) == 1:
        return f"{low.workload}'s, the only one measured"
    workloads = _and(sorted({m.workload for m in peers}))
    machines = sorted({m.machine for m in peers})
    where = f" on {_and(machines)}" if len(machines) > 1 else ""
    return f"{low.workload}'s, the {'lower' if len(peers) == 2 else 'lowest'} of {workloads}{where}"


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def build_scaling(measured: list[MeasuredEfficiency], model: SyncModel | None = None) -> ScalingProvider:
    """The ranking's scaling provider. With the job's load and a measured intra-node model: the job's own DDP
    efficiency where it was measured on the instance's GPU model and count, else the model
    (planner/scaling/intra_node.py), each with the band published hosts set. Without them: the lowest
    measured figure of the GPU model (`measured_scaling`), else the labelled assumption."""
    def provider(instance: InstanceSpec, load: SyncLoad | None = None) -> Scaling:
        if instance.gpu_count == 1:
            return assumed_scaling(instance)
        modelled = model.scaling(instance, load) if model and load else None
        if modelled is None:
            return measured_scaling(measured, instance) or assumed_scaling(instance)
        own = _own_measurement(measured, instance, load.workload)
        if own is None:
            return modelled
        return Scaling(own.efficiency, f"measured: {own.workload}'s DDP efficiency on {own.machine} "
                                       f"({own.efficiency:.3f} on {own.gpus} GPUs); {modelled.note}",
                       measured=True, low=min(modelled.low or own.efficiency, own.efficiency), high=1.0)
    return provider


def _own_measurement(measured: list[MeasuredEfficiency], instance: InstanceSpec,
                     workload: str) -> MeasuredEfficiency | None:
    mine = [m for m in measured if (m.gpu, m.gpus, m.workload) == (instance.gpu_spec.name, instance.gpu_count,
                                                                      workload)]
    return min(mine, key=lambda m: (m.efficiency, m.machine)) if mine else None
