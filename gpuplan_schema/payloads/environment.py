"""Payload of the `environment` document: the host, its CPU and GPUs, the software versions."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CpuInfo:
    model: str
    logical_cores: int
    physical_cores: int | None
    ram_bytes: int | None


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as NVML (and torch) describe it. A field is None when it could not be read;
    `unavailable` then says why, keyed by the field name."""

    index: int
    name: str
    memory_bytes: int | None = None
    sm_count: int | None = None
    l2_bytes: int | None = None
    compute_capability: str | None = None
    sm_clock_max_hz: float | None = None
    sm_clock_hz: float | None = None
    memory_clock_max_hz: float | None = None
    memory_clock_hz: float | None = None
    power_limit_w: float | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    ecc_enabled: bool | None = None
    mig_enabled: bool | None = None
    other_processes: int | None = None
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentPayload:
    hostname: str
    os: str
    kernel: str
    cpu: CpuInfo
    python: str
    torch: str
    cuda_runtime: str | None
    cudnn: str | None
    driver: str | None
    gpus: list[GpuInfo]
    gpu_absent_reason: str | None = None
    allocator_config: str | None = None  # PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF) as the run was given it
