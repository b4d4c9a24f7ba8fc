"""How much of DDP's gradient all-reduce a training step shows, on a path it was not measured on.

    exposed = F + ρ · min(T, W) + max(0, T − W),      W = β · c

T: the all-reduce of the gradient as DDP issues it, bucket by bucket (each bucket its latency plus its bytes
over the link: `sync_time_s`); c: the compute step (the step under no_sync); W = β · c: the part of the step
during which buckets are ready to be sent, i.e. backward after its first bucket; ρ: the share of the overlapped
all-reduce that still lengthens the step (NCCL's kernels take SMs and memory bandwidth from backward); F: what
DDP costs per step whatever the link (its hooks and bucket copies, the last bucket's wait, the ranks waiting for
each other), fitted per workload on the measured path and never below 0.

Why not one exposed fraction k = (step − c) / T, scaled with T (the model before the two-node emulation): on
NVLink T is a few ms and the exposed time is mostly F, so k (resnet50: 5.3) multiplies fixed costs by the
bandwidth ratio (≈ 50 to loopback sockets: +238 % on resnet50's socket step); on sockets T outlasts backward and
only the excess is exposed, so a k fitted there (0.36) hides most of NVLink's fixed costs. docs/multinode.md
shows both against the measurements.

ρ and β are fitted once on the 2 × H100 runs (results/h100-x2 and its diagnostics: one machine, five workloads,
three paths), not on the two-node emulation that checks them (`fit_interference`, `fit_backward_share`;
benchmarks/fit_sync_overlap.py prints the fit, tests/test_network_model.py keeps these constants equal to it):
- ρ: between NVLink and host shared memory (NCCL_P2P_DISABLE=1) both all-reduces fit inside backward, so the
  exposed time grows by ρ per second of all-reduce: the median slope over the five workloads;
- β: over loopback sockets the all-reduce outlasts backward: the β whose predictions between the socket run and
  the other two (both ways) miss least at worst.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload
from gpuplan_schema.schema import load_document
from planner.scaling.assumed_scaling import GRADIENT_BYTES_PER_PARAMETER
from planner.scaling.scaling import build_bus_bandwidth

INTERFERENCE = 0.32     # ρ, fitted on results/h100-x2 (see the module docstring)
BACKWARD_SHARE = 0.48   # β, fitted on results/h100-x2 (see the module docstring)
FIRST_BUCKET_BYTES = 1 << 20  # DDP sends its first bucket (the last layers' gradients) at 1 MiB


def exposed_s(sync_s: float, compute_s: float, fixed_s: float, rho: float = INTERFERENCE,
              beta: float = BACKWARD_SHARE) -> float:
    """The formula of the module docstring: what a step shows of an all-reduce of `sync_s` seconds."""
    window = beta * compute_s
    return fixed_s + rho * min(sync_s, window) + max(0.0, sync_s - window)


def fixed_cost_s(step_s: float, compute_s: float, sync_s: float, rho: float = INTERFERENCE,
                 beta: float = BACKWARD_SHARE) -> float:
    """F of a measured DDP point: its exposed time (step − compute) less the model's share of its all-reduce."""
    return max(0.0, step_s - compute_s - exposed_s(sync_s, compute_s, 0.0, rho, beta))


def bucket_sizes(gradient_bytes: float, bucket_bytes: float) -> list[float]:
    """DDP's buckets, as many as its cap gives (the first at 1 MiB), the bytes shared evenly among the rest: the
    parameter order that decides the real boundaries is not known to the planner."""
    if gradient_bytes <= FIRST_BUCKET_BYTES:
        return [gradient_bytes]
    rest = gradient_bytes - FIRST_BUCKET_BYTES
    n = max(1, math.ceil(rest / bucket_bytes))
    return [FIRST_BUCKET_BYTES] + [rest / n] * n


@dataclass(frozen=True)
class SyncPoint:
    """One measured multi-GPU DDP point with its all-reduce over the run's own measured link."""

    workload: str
    gpus: int
    step_s: float
    compute_s: float
    sync_s: float           # T: every bucket's all_reduce time read off the run's collectives
    buckets: int

    @property
    def fixed_s(self) -> float:
        return fixed_cost_s(self.step_s, self.compute_s, self.sync_s)


def measured_sync_s(collectives: CollectivesPayload, gpus: int, gradient_bytes: float,
                    bucket_bytes: float) -> tuple[float, int] | None:
    """T over the run's measured all_reduce (the time at each bucket's size, interpolated), on `gpus` ranks: a
    curve measured on n ranks is rescaled by the ring's 2(g−1)/g over 2(n−1)/n. None without an all_reduce."""
    bus = build_bus_bandwidth(collectives).get("all_reduce")
    if bus is None or gpus < 2:
        return None
    ring = (2 * (gpus - 1) / gpus) / (2 * (bus.gpus - 1) / bus.gpus) if bus.gpus > 1 else 1.0
    sizes = bucket_sizes(gradient_bytes, bucket_bytes)
    return sum(bus.time_at(s) for s in sizes) * ring, len(sizes)


def iter_sync_points(ddp: DdpPayload, collectives: CollectivesPayload) -> Iterable[SyncPoint]:
    """Every multi-GPU point that ran, with T over the same run's measured all_reduce."""
    params = {w.workload: w.parameters for w in ddp.workloads}
    for p in ddp.points:
        if p.gpus < 2 or p.status != "ok" or p.step_s is None or p.compute_step_s is None or p.workload not in params:
            continue
        found = measured_sync_s(collectives, p.gpus, params[p.workload] * GRADIENT_BYTES_PER_PARAMETER,
                                ddp.bucket_cap_mb * 2**20)
        if found is not None:
            yield SyncPoint(p.workload, p.gpus, p.step_s.median, p.compute_step_s.median, *found)


def transfer_step_s(a: SyncPoint, b: SyncPoint, rho: float = INTERFERENCE, beta: float = BACKWARD_SHARE,
                    compute_s: float | None = None) -> float:
    """B's step predicted from A's: F fitted on A, B's all-reduce, B's compute step (or the one given)."""
    c = b.compute_s if compute_s is None else compute_s
    return c + exposed_s(b.sync_s, c, fixed_cost_s(a.step_s, a.compute_s, a.sync_s, rho, beta), rho, beta)


def pairs_of(run_a: list[SyncPoint], run_b: list[SyncPoint]) -> list[tuple[SyncPoint, SyncPoint]]:
    """The points both runs measured (same workload and GPU count)."""
    b = {(p.workload, p.gpus): p for p in run_b}
    return [(p, b[(p.workload, p.gpus)]) for p in run_a if (p.workload, p.gpus) in b]


def fit_interference(inside_a: list[SyncPoint], inside_b: list[SyncPoint]) -> float:
    """ρ: the median over workloads of Δ(step − compute) / ΔT between two paths whose all-reduce both fit in
    backward (NVLink and host shared memory)."""
    slopes = [((b.step_s - b.compute_s) - (a.step_s - a.compute_s)) / (b.sync_s - a.sync_s)
              for a, b in pairs_of(inside_a, inside_b) if b.sync_s != a.sync_s]
    return statistics.median(slopes)


def fit_backward_share(outlasting: list[SyncPoint], others: list[list[SyncPoint]], rho: float) -> float:
    """β: on a grid of 0.01, the one whose predictions between the run whose all-reduce outlasts backward and
    each other run, both ways, have the smallest largest error (the first such β)."""
    pairs = [pair for run in others for a, b in pairs_of(outlasting, run) for pair in ((a, b), (b, a))]

    def worst(beta: float) -> float:
        return max(abs(transfer_step_s(a, b, rho, beta) / b.step_s - 1) for a, b in pairs)

    return min((i / 100 for i in range(5, 101)), key=lambda beta: (round(worst(beta), 6), beta))


FIT_RUNS = {"NVLink": ".", "host shared memory": "diagnostics/ddp-no-p2p",
            "loopback sockets": "diagnostics/ddp-sockets"}


@dataclass(frozen=True)
class SyncConstants:
    """ρ and β as one machine's three paths give them, and the points they were fitted on (by path)."""

    rho: float
    beta: float
    runs: dict[str, list[SyncPoint]]


def load_sync_points(folder: Path) -> list[SyncPoint]:
    return list(iter_sync_points(load_document(folder / "ddp.json").payload,
                                 load_document(folder / "collectives.json").payload))


def fit_constants(folder: Path) -> SyncConstants:
    """ρ from the NVLink and host-shared-memory runs of a machine folder (FIT_RUNS), then β with the sockets."""
    runs = {path: load_sync_points(folder / sub) for path, sub in FIT_RUNS.items()}
    nvlink, shm, sockets = runs.values()
    rho = fit_interference(nvlink, shm)
    return SyncConstants(rho, fit_backward_share(sockets, [nvlink, shm], round(rho, 2)), runs)
