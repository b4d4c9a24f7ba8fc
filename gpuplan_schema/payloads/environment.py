"""Payload of the `environment` document: the host, its CPU and GPUs, the software versions."""

from __future__ import annotations

from dataclasses import dataclass, field

# The server microarchitectures the environment collector names from CPUID (collectors/core/machine.py), the
# words the instance catalog uses for a cloud host's CPU too (planner/specs/instances.json `host_cpu`), so that
# a measured host and a catalogued one compare by name.
SERVER_MICROARCHITECTURES = ("Broadwell-SP", "Haswell-SP", "Skylake-SP", "Cascade Lake", "Cooper Lake", "Ice Lake-SP",
                             "Sapphire Rapids", "Emerald Rapids", "Granite Rapids", "Naples (Zen)", "Rome (Zen 2)",
                             "Milan (Zen 3)", "Genoa (Zen 4)", "Bergamo (Zen 4c)", "Turin (Zen 5)")


@dataclass(frozen=True)
class CpuInfo:
    """The host CPU. Cloud VMs often mask the brand string ("Intel(R) Xeon(R) Processor", "AMD EPYC"), so the
    CPUID family and model are kept beside it, and the microarchitecture they name (environment collector 2);
    None where not read (an older document, or no /proc/cpuinfo)."""

    model: str
    logical_cores: int
    physical_cores: int | None
    ram_bytes: int | None
    vendor: str | None = None              # CPUID vendor: GenuineIntel, AuthenticAMD
    family: int | None = None              # CPUID family and model, decimal as /proc/cpuinfo prints them
    model_number: int | None = None
    stepping: int | None = None
    microarchitecture: str | None = None   # what family and model name (collectors/core/machine.py)
    nominal_mhz: float | None = None       # /proc/cpuinfo "cpu MHz"; on a VM the TSC rate, about the base clock
    l3_bytes: int | None = None            # the last-level cache one core sees
    virtualized: bool | None = None        # the CPU reports a hypervisor

    @property
    def label(self) -> str:
        """The brand string, with the microarchitecture where the brand string does not already say it."""
        arch = self.microarchitecture
        return f"{self.model}, {arch}" if arch and arch.split(" ")[0].lower() not in self.model.lower() else self.model


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
