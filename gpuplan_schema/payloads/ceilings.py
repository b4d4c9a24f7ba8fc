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
class DispatchCeiling:
    """How fast this host issues work through PyTorch (ceilings collector 3; collectors/ceilings/dispatch.py).

    `op_issue_s`: host seconds per tiny `torch.add` on small device tensors, issued back to back
    without synchronising (dispatcher + launch; on a CPU the add itself runs too). `linear_step_issue_s`:
    host seconds to issue a small nn.Linear forward and backward; `linear_step_kernels` the device
    kernels one such step launches (profiler; None on a CPU), so `per_kernel_s` is the host's cost per
    launched kernel in a real autograd step. The CPU's model and clock are read where the OS says them:
    hosts differ, and a host-bound step moves with its host (docs/history.md, "The hosts' speed").
    """

    op_issue_s: Stat
    linear_step_issue_s: Stat
    ops_per_sample: int
    linear_step_kernels: int | None = None
    cpu_model: str | None = None
    cpu_mhz: float | None = None       # the clock /proc/cpuinfo reported right after the benchmark
    cpu_max_mhz: float | None = None   # cpufreq's cpuinfo_max_freq, where the OS exposes it

    @property
    def per_kernel_s(self) -> float | None:
        if not self.linear_step_kernels:
            return None
        return self.linear_step_issue_s.median / self.linear_step_kernels


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
    dispatch: DispatchCeiling | None = None  # None in documents of ceilings collector 2 and before
