"""The two-node emulation's check of the network model: run B's DDP step predicted from run A's and B's
measured all_reduce, and each all_reduce size against the model's two-term link.

    checks = validate_transfer(ddp_a, coll_a, ddp_b, coll_b)     # one per workload both ran on 2 ranks
    sizes = check_sizes(coll_b)                                  # one per all_reduce size measured

DDP step (planner/scaling/overlap.py): F fitted on A (A's step − compute − the model's share of A's all-reduce),
then B's step = c + F + ρ · min(T_B, W) + max(0, T_B − W), T_B every DDP bucket's time on B's measured
all_reduce. Beside it, what the single exposed fraction k (the model before) gave: c + k_A · T_B.

Each size: the link as the network model takes a fabric, t(s) = α + 2(n−1)/n · s / B, with α the smallest
message's time and B the peak bus bandwidth, both read off the run itself: how well a latency
term plus a bandwidth term describes the sizes between (DDP's 25 MiB buckets among them).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import CollectivesPayload, DdpPayload
from planner.scaling.overlap import SyncPoint, iter_sync_points, pairs_of, transfer_step_s
from planner.scaling.scaling import DDP_BUCKET_BYTES, build_bus_bandwidth


@dataclass(frozen=True)
class TransferCheck:
    """B's DDP step of one workload predicted from A's."""

    workload: str
    a: SyncPoint
    b: SyncPoint
    busbw_a: float               # all_reduce bus bandwidth at DDP's bucket size, run A (B/s)
    busbw_b: float
    predicted_step_s: float      # from A's compute step (the headline)
    predicted_own_s: float       # from B's own compute step (the network part alone)

    @property
    def measured_step_s(self) -> float:
        return self.b.step_s

    @property
    def fixed_s(self) -> float:
        """F, fitted on A."""
        return self.a.fixed_s

    @property
    def exposed_fraction(self) -> float:
        """k of the model before: A's exposed time over A's all-reduce."""
        return max(0.0, self.a.step_s - self.a.compute_s) / self.a.sync_s

    @property
    def k_predicted_step_s(self) -> float:
        """What one exposed fraction gave: A's compute step + k × B's all-reduce."""
        return self.a.compute_s + self.exposed_fraction * self.b.sync_s

    @property
    def error(self) -> float:
        return self.predicted_step_s / self.measured_step_s - 1

    @property
    def error_own_compute(self) -> float:
        """Without run-to-run compute drift (the shared CPU of CI drifts 2× between runs)."""
        return self.predicted_own_s / self.measured_step_s - 1

    @property
    def k_error(self) -> float:
        return self.k_predicted_step_s / self.measured_step_s - 1


def validate_transfer(ddp_a: DdpPayload, coll_a: CollectivesPayload, ddp_b: DdpPayload,
                      coll_b: CollectivesPayload, gpus: int = 2) -> list[TransferCheck]:
    """For each workload both runs measured on `gpus` ranks, B's step predicted from A (module docstring)."""
    run_a = [p for p in iter_sync_points(ddp_a, coll_a) if p.gpus == gpus]
    run_b = [p for p in iter_sync_points(ddp_b, coll_b) if p.gpus == gpus]
    busbw = [_busbw_at_bucket(c) for c in (coll_a, coll_b)]
    return [TransferCheck(a.workload, a, b, *busbw, transfer_step_s(a, b, compute_s=a.compute_s),
                          transfer_step_s(a, b)) for a, b in pairs_of(run_a, run_b)]


def _busbw_at_bucket(collectives: CollectivesPayload) -> float:
    bus = build_bus_bandwidth(collectives)["all_reduce"]
    return bus.algbw_at(DDP_BUCKET_BYTES) * 2 * (bus.gpus - 1) / bus.gpus


@dataclass(frozen=True)
class SizeCheck:
    """One all_reduce size: measured against the two-term link read off the run's own ends."""

    size_bytes: int
    measured_s: float
    busbw: float                 # measured bus bandwidth (B/s)
    model_s: float

    @property
    def error(self) -> float:
        return self.model_s / self.measured_s - 1


def check_sizes(collectives: CollectivesPayload) -> list[SizeCheck]:
    """Every all_reduce size of a run with t(s) = α + 2(n−1)/n · s / B beside it (module docstring)."""
    bus = build_bus_bandwidth(collectives)["all_reduce"]
    ring = 2 * (bus.gpus - 1) / bus.gpus
    alpha, peak = bus.time[0].median, bus.peak_busbw_bytes_per_s
    return [SizeCheck(size, t.median, bw.median, alpha + ring * size / peak)
            for size, t, bw in zip(bus.sizes_bytes, bus.time, bus.busbw, strict=True)]
