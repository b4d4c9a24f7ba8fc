"""The machine's hardware sections of the report: measured ceilings beside the datasheet, and the roofline.

Values stay in SI units here; the templates' filters (planner/render/filters.py) turn them into human units.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import BandwidthCeiling, CeilingsPayload, EnvironmentPayload
from gpuplan_schema.stats import Stat
from planner.charts.base import Roof, build_roofline_chart, build_roofs
from planner.report.sections import SectionBase
from planner.specs import GpuSpec

NO_DATASHEET = "no datasheet entry"
# Per-lane, per-direction PCIe payload rates after line coding (8b/10b to gen 2, 128b/130b after).
PCIE_LANE_BYTES_PER_S = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9}
MEMORY_LABELS = {"copy": "copy (read + write)", "read": "read", "write": "write"}
LINK_LABELS = {"h2d_pinned": "host → device, pinned", "h2d_pageable": "host → device, pageable",
               "d2h_pinned": "device → host, pinned", "d2h_pageable": "device → host, pageable"}



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
class CeilingsSection(SectionBase, kind="ceilings", title="Measured ceilings"):
    device_name: str
    rows: list[CeilingRow]
    spec: GpuSpec | None
    has_sustained: bool


@dataclass(frozen=True)
class RooflineSection(SectionBase, kind="roofline", title="Roofline"):
    chart: dict | None                # Vega-Lite spec; None when no matmul ceiling was measured
    roofs: list[Roof]
    bandwidth: Stat | None



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
