"""`gpuplan specs`: the GPU and instance catalogs as tables (rows of text, fitted to the terminal by
planner/render/specs_text.py) or as JSON."""

from __future__ import annotations

import json
from typing import Any

from planner.specs import DTYPES, GpuSpec, InstanceSpec, load_gpu_catalog, load_instances


def build_gpu_table(gpus: tuple[GpuSpec, ...] | None = None) -> list[list[str]]:
    """The GPU catalog in human units: one header row, then one row per GPU ('-': none/unknown)."""
    header = ["GPU", "memory GB", "GB/s", "SMs", "L2 MiB", "TDP W", "CC", *(f"{d} TFLOP/s" for d in DTYPES),
              "peer GB/s", "PCIe", "source"]
    rows = [header]
    for s in load_gpu_catalog() if gpus is None else gpus:
        rows.append([
            s.name, _num(s.memory_bytes, 1e9), _num(s.memory_bandwidth_bytes_per_s, 1e9), _num(s.sm_count),
            _num(s.l2_bytes, 2**20), _num(s.tdp_w), s.compute_capability or "-",
            *(_num(s.flops_per_s.get(d), 1e12) for d in DTYPES), _num(s.peer_bytes_per_s, 1e9),
            _num(s.pcie_generation), s.source,
        ])
    return rows


def build_instance_table(instances: tuple[InstanceSpec, ...] | None = None) -> list[list[str]]:
    """The instance catalog: one header row, then one row per instance; `note` marks a price with a caveat."""
    header = ["instance", "cloud", "region", "GPUs", "GPU GB", "vCPUs", "RAM GiB", "USD/h", "USD/GPU-h",
              "price date", "network/node", "host CPU", "note"]
    rows = [header]
    for s in load_instances() if instances is None else instances:
        rows.append([
            s.name, s.provider, s.region, f"{s.gpu_count}× {s.gpu}", _num(s.gpu_memory_bytes, 1e9), str(s.vcpus),
            _num(s.memory_bytes, 2**30), f"{s.price_usd_per_hour:.3f}", f"{s.price_usd_per_gpu_hour:.3f}",
            s.price_date, _network(s), _host_cpu(s), "yes" if s.price_note else "",
        ])
    return rows


def _network(s: InstanceSpec) -> str:
    """'3200 Gb/s EFA'; '25 Gb/s Ethernet (1 node)' where the cloud offers no multi-node fabric."""
    if s.network is None:
        return "not for multi-node" if s.gpu_count == 1 else "–"
    text = f"{s.network.bytes_per_s * 8 / 1e9:.0f} Gb/s {s.network.technology}"
    return text if s.multi_node else text + " (1 node)"


def _host_cpu(s: InstanceSpec) -> str:
    """The host CPU's generation ('Rome (Zen 2)'), 'varies' where the cloud leaves the platform open."""
    if s.host_cpu is None:
        return "–"
    return s.host_cpu.microarchitecture or "varies"


def gpu_to_dict(spec: GpuSpec) -> dict[str, Any]:
    """A GPU as JSON: every dtype present (null where unsupported) and the support flags spelled out."""
    return {
        "name": spec.name, "aliases": list(spec.aliases), "memory_bytes": spec.memory_bytes,
        "memory_bandwidth_bytes_per_s": spec.memory_bandwidth_bytes_per_s, "sm_count": spec.sm_count,
        "l2_bytes": spec.l2_bytes, "tdp_w": spec.tdp_w, "link": spec.link,
        "nvlink_generation": spec.nvlink_generation, "peer_bytes_per_s": spec.peer_bytes_per_s,
        "pcie_generation": spec.pcie_generation, "compute_capability": spec.compute_capability,
        "boost_clock_mhz": spec.boost_clock_mhz, "boost_clock_source": spec.boost_clock_source,
        "flops_per_s": {d: spec.flops_per_s.get(d) for d in DTYPES},
        "supports_bf16": spec.supports_bf16, "supports_fp8": spec.supports_fp8, "source": spec.source,
    }


def render_specs_json(*, gpus: bool, instances: bool) -> str:
    doc: dict[str, Any] = {}
    if gpus:
        doc["gpus"] = [gpu_to_dict(s) for s in load_gpu_catalog()]
    if instances:
        doc["instances"] = [s.to_dict() for s in load_instances()]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _num(value: float | None, per: float = 1) -> str:
    return "-" if value is None else f"{value / per:g}"
