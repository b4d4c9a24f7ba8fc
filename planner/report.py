"""The report as a typed structure: one dataclass per section kind, built from a machine's results.

Rendering comes second (planner/render.py, one template partial per section `kind`). Values stay
in SI units here; the templates' filters (planner/formatting.py) turn them into human units.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from collectors.machine import sanitize_machine_id
from collectors.payloads import PAYLOADS, BandwidthCeiling, CeilingsPayload, EnvironmentPayload, GpuInfo, MatmulCeiling
from collectors.stats import Stat
from planner.charts import Roof, build_roofline_chart, build_roofs
from planner.report_dataloader import DataloaderSection, build_dataloader_sections
from planner.report_multigpu import MultiGpuSection, build_multigpu_section
from planner.report_roofline import OpRooflineSection, build_op_roofline_sections, place_after_workloads
from planner.report_workloads import WorkloadSection, build_workload_sections
from planner.results import MachineResults
from planner.specs import GpuSpec, match_gpu

NO_DATASHEET = "no datasheet entry"
# Per-lane, per-direction PCIe payload rates after line coding (8b/10b to gen 2, 128b/130b after).
PCIE_LANE_BYTES_PER_S = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9}
MEMORY_LABELS = {"copy": "copy (read + write)", "read": "read", "write": "write"}
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
LINK_LABELS = {"h2d_pinned": "host → device, pinned", "h2d_pageable": "host → device, pageable",
               "d2h_pinned": "device → host, pinned", "d2h_pageable": "device → host, pageable"}


class SectionBase:
    """What every section kind has: `kind` names its template partial; `in_toc` puts it in the contents."""

    kind: ClassVar[str]
    title: ClassVar[str]
    in_toc: ClassVar[bool] = True


@dataclass(frozen=True)
class SummarySection(SectionBase):
    kind: ClassVar[str] = "summary"
    title: ClassVar[str] = "Machine"
    device: str
    has_gpu: bool
    cpu: str | None
    cores: int | None
    ram_bytes: int | None
    torch: str | None
    cuda: str | None
    driver: str | None
    collected: str


@dataclass(frozen=True)
class NotCollectedSection(SectionBase):
    """Collectors whose document is absent: said plainly so no one mistakes silence for zero."""

    kind: ClassVar[str] = "not_collected"
    title: ClassVar[str] = "Not collected"
    in_toc: ClassVar[bool] = False    # one line under the summary, not a section of its own
    kinds: list[str]


@dataclass(frozen=True)
class CeilingRow:
    group: str
    label: str
    unit: str                         # a formatter kind: flops, bandwidth or duration
    status: str
    reason: str | None
    measured: Stat | None
    best_shape: list[int] | None = None
    buffer_bytes: int | None = None
    sustained: Stat | None = None
    sustained_clock_hz: float | None = None
    reference: float | None = None    # the datasheet (or link) figure this row is compared with
    reference_note: str | None = None  # why there is none, or where it comes from

    @property
    def fraction(self) -> float | None:
        if self.measured is None or not self.reference:
            return None
        return self.measured.median / self.reference


@dataclass(frozen=True)
class CeilingsSection(SectionBase):
    kind: ClassVar[str] = "ceilings"
    title: ClassVar[str] = "Measured ceilings"
    device_name: str
    rows: list[CeilingRow]
    spec: GpuSpec | None
    has_sustained: bool


@dataclass(frozen=True)
class RooflineSection(SectionBase):
    kind: ClassVar[str] = "roofline"
    title: ClassVar[str] = "Roofline"
    chart: dict | None                # Vega-Lite spec; None when no matmul ceiling was measured
    roofs: list[Roof]
    bandwidth: Stat | None


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
class EnvironmentSection(SectionBase):
    kind: ClassVar[str] = "environment"
    title: ClassVar[str] = "Environment"
    host: list[EnvRow]
    gpu_headers: list[str]
    gpus: list[EnvRow]                # one row per GPU field, one cell per GPU


@dataclass(frozen=True)
class MethodSection(SectionBase):
    kind: ClassVar[str] = "method"
    title: ClassVar[str] = "Method"
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


Section = (SummarySection | NotCollectedSection | CeilingsSection | RooflineSection | EnvironmentSection
           | MethodSection | WorkloadSection | OpRooflineSection | DataloaderSection | MultiGpuSection)


@dataclass(frozen=True)
class Report:
    machine: str        # as the documents spell it: display only, always escaped
    machine_id: str     # sanitised: the only form that may become part of a path
    device: str
    gpu_name: str | None
    collected: str      # UTC date of the newest document
    sections: list[Section]


def build_report(machine: MachineResults) -> Report:
    spec = match_gpu(machine.gpu_name) if machine.gpu_name else None
    collected = max(doc.created for doc in machine.documents.values())[:10]
    sections: list[Section] = [build_summary(machine, collected)]
    present = {doc.kind for doc in machine.documents.values()}
    missing = [kind for kind in PAYLOADS if kind not in present]
    if missing:
        sections.append(NotCollectedSection(missing))
    ceilings, env = machine.ceilings, machine.environment
    if ceilings:
        sections.append(build_ceilings_section(ceilings, spec, env))
        sections.append(build_roofline_section(ceilings))
    sections += place_after_workloads(build_workload_sections(machine), build_op_roofline_sections(machine))
    sections += build_dataloader_sections(machine)
    multigpu = build_multigpu_section(machine)
    if multigpu is not None:
        sections.append(multigpu)
    if env:
        sections.append(build_environment_section(env))
    if ceilings:
        sections.append(build_method_section(ceilings, spec))
    return Report(machine.machine, sanitize_machine_id(machine.machine), machine.device_label,
                  machine.gpu_name, collected, sections)


def build_summary(machine: MachineResults, collected: str) -> SummarySection:
    env = machine.environment
    cpu = env.cpu if env else None
    return SummarySection(
        device=machine.device_label, has_gpu=bool(machine.gpu_name), cpu=cpu.model if cpu else None,
        cores=cpu.logical_cores if cpu else None, ram_bytes=cpu.ram_bytes if cpu else None,
        torch=env.torch if env else None, cuda=env.cuda_runtime if env else None,
        driver=env.driver if env else None, collected=collected,
    )


def build_ceilings_section(ceilings: CeilingsPayload, spec: GpuSpec | None,
                           env: EnvironmentPayload | None) -> CeilingsSection:
    rows = build_matmul_rows(ceilings, spec) + build_memory_rows(ceilings.memory, spec)
    rows += build_link_rows(ceilings.host_device, env)
    rows.append(CeilingRow("Launch", "launch latency", "duration",
                           "ok" if ceilings.launch_latency_s else "skipped",
                           None if ceilings.launch_latency_s else "not measured", ceilings.launch_latency_s))
    has_sustained = any(m.sustained_flops_per_s is not None for m in ceilings.matmul)
    return CeilingsSection(ceilings.device_name, rows, spec, has_sustained)


def _reference(spec: GpuSpec | None, value: float | None) -> tuple[float | None, str | None]:
    if spec is None:
        return None, NO_DATASHEET
    return (value, None) if value else (None, "not on the datasheet")


def build_matmul_rows(ceilings: CeilingsPayload, spec: GpuSpec | None) -> list[CeilingRow]:
    rows = []
    for m in ceilings.matmul:
        reference, note = _reference(spec, spec.flops_per_s.get(m.dtype) if spec else None)
        rows.append(CeilingRow("Dense matmul", m.dtype, "flops", m.status, m.reason, m.flops_per_s,
                               best_shape=m.best_shape, sustained=m.sustained_flops_per_s,
                               sustained_clock_hz=m.sustained_sm_clock_hz, reference=reference,
                               reference_note=note))
    return rows


def build_memory_rows(memory: list[BandwidthCeiling], spec: GpuSpec | None) -> list[CeilingRow]:
    reference, note = _reference(spec, spec.memory_bandwidth_bytes_per_s if spec else None)
    return [CeilingRow("Device memory", MEMORY_LABELS.get(b.name, b.name), "bandwidth", b.status, b.reason,
                       b.bytes_per_s, buffer_bytes=b.buffer_bytes, reference=reference, reference_note=note)
            for b in memory]


def pcie_link(env: EnvironmentPayload | None) -> tuple[float | None, str | None]:
    """Per-direction payload rate of the first GPU's PCIe link at its best generation and width."""
    gpu = env.gpus[0] if env and env.gpus else None
    if gpu is None:
        return None, None
    gen = gpu.pcie_gen_max or gpu.pcie_gen
    width = gpu.pcie_width_max or gpu.pcie_width
    if not gen or not width or gen not in PCIE_LANE_BYTES_PER_S:
        return None, "link not known"
    return PCIE_LANE_BYTES_PER_S[gen] * width, f"PCIe gen {gen} ×{width} link"


def build_link_rows(links: list[BandwidthCeiling], env: EnvironmentPayload | None) -> list[CeilingRow]:
    reference, note = pcie_link(env)
    return [CeilingRow("Host ↔ device", LINK_LABELS.get(b.name, b.name), "bandwidth", b.status, b.reason,
                       b.bytes_per_s, buffer_bytes=b.buffer_bytes, reference=reference, reference_note=note)
            for b in links]


def build_roofline_section(ceilings: CeilingsPayload) -> RooflineSection:
    roofs, copy = build_roofs(ceilings)
    return RooflineSection(build_roofline_chart(ceilings), roofs, copy.bytes_per_s if copy else None)


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
