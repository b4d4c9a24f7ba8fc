"""Method and environment: how each figure was measured, and on what (versions, clocks, settings).

The environment section lists every field of the environment document; the method sections
describe the ceilings collector (from the ceilings document: shapes searched, buffer sizes,
sample counts) and the workloads collector (from the workload documents: profiles, precisions,
variants, timing).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpuplan_schema.payloads import CeilingsPayload, EnvironmentPayload, GpuInfo, MatmulCeiling, WorkloadPayload
from gpuplan_schema.stats import Stat
from planner.report.sections import SectionBase
from planner.report.workloads import precision_rank
from planner.specs import GpuSpec

FIELD_LABELS = {
    "os": "OS", "cpu_model": "CPU", "cpu_logical_cores": "CPU logical cores",
    "cpu_physical_cores": "CPU physical cores", "cpu_ram_bytes": "RAM", "torch": "PyTorch",
    "cuda_runtime": "CUDA runtime", "cudnn": "cuDNN", "driver": "NVIDIA driver",
    "gpu_absent_reason": "No GPU because", "sm_count": "SMs", "l2_bytes": "L2 cache",
    "memory_bytes": "Memory", "sm_clock_max_hz": "SM clock, max", "sm_clock_hz": "SM clock when collected",
    "memory_clock_max_hz": "Memory clock, max", "memory_clock_hz": "Memory clock when collected",
    "pcie_gen": "PCIe generation", "pcie_gen_max": "PCIe generation, max", "pcie_width": "PCIe width",
    "pcie_width_max": "PCIe width, max", "ecc_enabled": "ECC", "mig_enabled": "MIG",
    "power_limit_w": "Power limit",
}
OMIT_WHEN_EMPTY = {"gpu_absent_reason"}  # a reason only means something when there is no GPU
# The data names its units in field-name suffixes (DESIGN.md), so the formatter follows the name.
UNIT_SUFFIXES = (("_bytes", "bytes"), ("_hz", "hertz"), ("_w", "watts"), ("_s", "duration"))


@dataclass(frozen=True)
class EnvValue:
    value: str | int | float | bool | None
    unit: str                         # a formatter kind, from the field name's SI suffix
    unavailable: str | None = None    # why the value could not be read


@dataclass(frozen=True)
class EnvRow:
    label: str
    cells: list[EnvValue]


@dataclass(frozen=True)
class EnvironmentSection(SectionBase, kind="environment", title="Environment"):
    host: list[EnvRow]
    gpu_headers: list[str]
    gpus: list[EnvRow]                # one row per GPU field, one cell per GPU


@dataclass(frozen=True)
class MethodSection(SectionBase, kind="method", title="Method: hardware ceilings"):
    device: str                       # "cuda" or "cpu": which timer measured
    searches: list[MatmulCeiling]     # each dtype's status and the shapes it tried
    has_sustained: bool
    memory_buffer_bytes: int | None
    l2_bytes: int | None
    transfer_bytes: int | None
    launch: Stat | None
    elapsed_s: float
    threads: int | None
    spec: GpuSpec | None
    n_min: int
    n_max: int


@dataclass(frozen=True)
class WorkloadRun:
    """How one workload document was collected."""

    workload: str
    profile: str
    scale: str
    device: str
    elapsed_s: float
    points: int
    precisions: list[str]
    variants: list[str]
    n_min: int
    n_max: int


@dataclass(frozen=True)
class WorkloadMethodSection(SectionBase, kind="workload_method", title="Method: workloads"):
    runs: list[WorkloadRun]
    cuda: bool                        # any run timed with CUDA events
    has_boundary: bool
    has_sequence: bool
    has_compile: bool
    has_repeat: bool



def build_environment_section(env: EnvironmentPayload) -> EnvironmentSection:
    headers = [f"GPU {gpu.index}" for gpu in env.gpus]
    return EnvironmentSection(build_environment_rows(env), headers, build_gpu_rows(env.gpus))


def build_method_section(ceilings: CeilingsPayload, spec: GpuSpec | None) -> MethodSection:
    counts = [s.n for s in _all_stats(ceilings)]
    memory_buffer = next((b.buffer_bytes for b in ceilings.memory if b.buffer_bytes), None)
    transfer = next((b.buffer_bytes for b in ceilings.host_device if b.buffer_bytes), None)
    return MethodSection(
        ceilings.device, ceilings.matmul, any(m.sustained_flops_per_s for m in ceilings.matmul), memory_buffer,
        ceilings.l2_bytes, transfer, ceilings.launch_latency_s, ceilings.elapsed_s, ceilings.threads, spec,
        min(counts, default=0), max(counts, default=0),
    )


def _all_stats(ceilings: CeilingsPayload) -> list[Stat]:
    stats = [s.flops_per_s for m in ceilings.matmul for s in m.shapes]
    stats += [b.bytes_per_s for b in [*ceilings.memory, *ceilings.host_device] if b.bytes_per_s]
    return stats + ([ceilings.launch_latency_s] if ceilings.launch_latency_s else [])


def field_label(name: str) -> str:
    return FIELD_LABELS.get(name, name.replace("_", " ").capitalize())


def field_unit(name: str) -> str:
    return next((unit for suffix, unit in UNIT_SUFFIXES if name.endswith(suffix)), "text")


def build_environment_rows(env: EnvironmentPayload) -> list[EnvRow]:
    """Every field of the environment payload (the CPU's flattened in), GPUs aside."""
    rows = []
    for f in dataclasses.fields(env):
        value = getattr(env, f.name)
        if f.name == "gpus" or (value is None and f.name in OMIT_WHEN_EMPTY):
            continue
        if dataclasses.is_dataclass(value):
            rows += [EnvRow(field_label(f"{f.name}_{g.name}"), [EnvValue(getattr(value, g.name), field_unit(g.name))])
                     for g in dataclasses.fields(value)]
        else:
            rows.append(EnvRow(field_label(f.name), [EnvValue(value, field_unit(f.name))]))
    return rows


def build_gpu_rows(gpus: list[GpuInfo]) -> list[EnvRow]:
    """One row per GpuInfo field and one cell per GPU; a value NVML could not read carries its reason."""
    names = [f.name for f in dataclasses.fields(GpuInfo) if f.name not in ("index", "unavailable")]
    # Reasons keyed by something other than a field (e.g. NVML itself) get rows of their own.
    names += sorted({key for gpu in gpus for key in gpu.unavailable} - set(names))
    return [EnvRow(field_label(name), [EnvValue(getattr(gpu, name, None), field_unit(name), gpu.unavailable.get(name))
                                       for gpu in gpus]) for name in names] if gpus else []


def build_workload_run(payload: WorkloadPayload) -> WorkloadRun:
    counts = [p.step_s.n for p in payload.points if p.step_s]
    return WorkloadRun(payload.workload, payload.profile, payload.scale, payload.device, payload.elapsed_s,
                       len(payload.points), sorted({p.precision for p in payload.points}, key=precision_rank),
                       sorted({p.variant for p in payload.points}), min(counts, default=0), max(counts, default=0))


def build_workload_method_section(workloads: list[WorkloadPayload]) -> WorkloadMethodSection:
    points = [p for w in workloads for p in w.points]
    return WorkloadMethodSection(
        [build_workload_run(w) for w in workloads], any(w.device == "cuda" for w in workloads),
        any(w.boundaries for w in workloads), any(p.sweep == "sequence" for p in points),
        any(p.compile_s is not None for p in points), any(p.sweep == "repeat" for p in points))
