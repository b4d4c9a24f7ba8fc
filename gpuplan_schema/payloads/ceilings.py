"""Payload of the `ceilings` document: measured matmul throughput, bandwidths and launch latency."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuplan_schema.payloads.common import Status
from gpuplan_schema.stats import Stat


@dataclass(frozen=True)
class MatmulShape:
    m: int
    n: int
    k: int
    flops_per_s: Stat


@dataclass(frozen=True)
class MatmulCeiling:
    """Best dense matmul throughput for one dtype over the shapes searched.

    `flops_per_s` is the peak: short bursts after an idle pause, at the clock a GPU holds for
    its first ~100 ms of full load (what datasheets and mamf-finder quote). `sustained_flops_per_s`
    is the best shape run without pause for about a second, once power capping has set the clock
    (`sustained_sm_clock_hz`, read through NVML at its end): what a long training step sees.
    """

    dtype: str
    status: Status
    reason: str | None = None
    flops_per_s: Stat | None = None
    best_shape: list[int] | None = None
    shapes: list[MatmulShape] = field(default_factory=list)
    sustained_flops_per_s: Stat | None = None
    sustained_sm_clock_hz: float | None = None

    def check(self) -> str | None:
        if self.status == "ok" and self.flops_per_s is None:
            return "status is ok but flops_per_s is missing"
        return None


@dataclass(frozen=True)
class BandwidthCeiling:
    """Bytes per second of one kind of transfer. `name` is e.g. copy, read, write,
    h2d_pinned, d2h_pageable; copy counts bytes read plus bytes written."""

    name: str
    status: Status
    reason: str | None = None
    bytes_per_s: Stat | None = None
    buffer_bytes: int | None = None

    def check(self) -> str | None:
        if self.status == "ok" and self.bytes_per_s is None:
            return "status is ok but bytes_per_s is missing"
        return None


@dataclass(frozen=True)
class CeilingsPayload:
    device: Literal["cuda", "cpu"]
    device_name: str
    matmul: list[MatmulCeiling]
    memory: list[BandwidthCeiling]
    host_device: list[BandwidthCeiling]
    launch_latency_s: Stat | None
    elapsed_s: float
    l2_bytes: int | None = None
    threads: int | None = None
