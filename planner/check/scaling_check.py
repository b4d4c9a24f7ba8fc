"""The intra-node scaling model held against published multi-GPU rows, and the band those rows set.

For each published row (planner/specs/published_scaling.json, excluded ones left out) the model of
planner/scaling/intra_node.py gives the efficiency of the host's GPUs at the host's own 1-GPU step and the
model's gradient; its error is predicted ÷ published − 1. A row's host bandwidth is the ring bytes each GPU
sends (2 (N−1)/N × the gradient) over the sync the host exposed (its N-GPU step − its 1-GPU step): one host
keeps about the same figure for every model (2-5 GB/s on Lambda's A100 hosts, 20-200 GB/s on its H100 SXM5
host), so it, not a multiple of the model's time, says how a slow host slows a job. The band's low end is a
host at the 10th percentile of that bandwidth per path (SLOW_HOST_QUANTILE); its coverage is counted leaving
each published system out of the percentile that judges it, so no row judges itself.

    check = check_published_scaling(load_link_runs(machines))   # [] where nothing multi-GPU was measured
    model = build_sync_model(machines)                          # SyncModel for the ranking
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy

from gpuplan_schema.results import MachineResults
from planner.scaling.assumed_scaling import GRADIENT_BYTES_PER_PARAMETER, SyncLoad, assumed_efficiency
from planner.scaling.intra_node import (
    SLOW_HOST_QUANTILE,
    LinkRun,
    SyncModel,
    load_link_runs,
    low_efficiency,
    modelled_efficiency,
    ring_bytes,
)
from planner.specs import match_gpu
from planner.specs.published_scaling import ScalingRow, load_published_scaling


@dataclass(frozen=True)
class ScalingCheck:
    """One published row against the model."""

    row: ScalingRow
    load: SyncLoad              # the row's gradient and its host's 1-GPU step
    predicted: float
    exposed_s: float            # the model's exposed sync per step
    low_out: float | None = None  # the band's low end from the other systems' rows (None: too few)

    @property
    def published(self) -> float:
        return self.row.efficiency

    @property
    def error(self) -> float:
        return self.predicted / self.published - 1

    @property
    def assumed_error(self) -> float:
        """The error of the per-doubling factors the model replaced, on the same row."""
        return assumed_efficiency(self.row.gpus, self.row.interconnect)[0] / self.published - 1

    @property
    def host_bytes_per_s(self) -> float:
        """The host's effective sync bandwidth: ring bytes per GPU over the sync it exposed (inf: none)."""
        host_exposed = self.row.step_s * (1 / self.published - 1)   # its N-GPU step − its 1-GPU step
        return ring_bytes(self.load.gradient_bytes, self.row.gpus) / host_exposed if host_exposed > 0 else math.inf

    @property
    def covered(self) -> bool | None:
        """Inside the band [low_out, 1.0] judged without the row's own system; None where no band."""
        return None if self.low_out is None else self.low_out <= self.published <= 1.0


def check_published_scaling(runs: Mapping[str, LinkRun], rows: Iterable[ScalingRow] | None = None
                            ) -> list[ScalingCheck]:
    """Every published row the measured paths can model, with its leave-one-system-out band."""
    checks = []
    for row in load_published_scaling() if rows is None else rows:
        gpu = match_gpu(row.gpu)
        load = SyncLoad(row.model, row.parameters * GRADIENT_BYTES_PER_PARAMETER, row.step_s)
        found = modelled_efficiency(runs, gpu, row.gpus, row.interconnect, load) if gpu and not row.excluded else None
        if found is not None:
            checks.append(ScalingCheck(row, load, found[0], found[1]))
    return [_with_band(c, checks) for c in checks]


def _with_band(check: ScalingCheck, checks: list[ScalingCheck]) -> ScalingCheck:
    others = [c.host_bytes_per_s for c in checks
              if c.row.interconnect == check.row.interconnect and c.row.system != check.row.system]
    if len(others) < 5:
        return check
    slow = float(numpy.quantile(others, 1 - SLOW_HOST_QUANTILE))
    return replace(check, low_out=low_efficiency(check.load, check.row.gpus, check.exposed_s, slow))


def slow_host_bandwidths(checks: list[ScalingCheck]) -> dict[str, float]:
    """Per path, the effective sync bandwidth that 9 in 10 published rows beat (SLOW_HOST_QUANTILE)."""
    by_path: dict[str, list[float]] = {}
    for c in checks:
        by_path.setdefault(c.row.interconnect, []).append(c.host_bytes_per_s)
    return {path: float(numpy.quantile(values, 1 - SLOW_HOST_QUANTILE)) for path, values in by_path.items()}


def build_sync_model(machines: Iterable[MachineResults]) -> SyncModel | None:
    """The ranking's intra-node model from the loaded machines; None where no multi-GPU run was measured."""
    runs = load_link_runs(machines)
    if not runs:
        return None
    return SyncModel(runs, slow_host_bandwidths(check_published_scaling(runs)))


@dataclass(frozen=True)
class ScalingSummary:
    """The check in one line: how far the model and the factors it replaced lay, and the band's coverage."""

    rows: int
    median_abs_error: float
    largest_abs_error: float
    assumed_median_abs_error: float
    assumed_largest_abs_error: float
    covered: int
    judged: int


def summarize_scaling(checks: list[ScalingCheck]) -> ScalingSummary | None:
    if not checks:
        return None
    errors = [abs(c.error) for c in checks]
    assumed = [abs(c.assumed_error) for c in checks]
    judged = [c.covered for c in checks if c.covered is not None]
    return ScalingSummary(len(checks), statistics.median(errors), max(errors), statistics.median(assumed),
                          max(assumed), sum(judged), len(judged))
