"""The cloud instance catalog: `instances.json` (GPU model and count, host, on-demand price and its date)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuplan_schema.payloads.environment import SERVER_MICROARCHITECTURES
from planner.specs.catalog_checks import CatalogError, EntryReader, load_entries
from planner.specs.gpus import SPECS_DIR, GpuSpec, match_gpu

INSTANCES_FILE = SPECS_DIR / "instances.json"
PROVIDERS = ("aws", "gcp", "azure")
# How the GPUs of one instance reach each other, which bounds data-parallel scaling:
# nvlink = NVLink / NVSwitch between all GPUs; nvlink-bridge = NVLink bridges between pairs,
# PCIe beyond; pcie = PCIe only; infinity-fabric = AMD's all-to-all GPU links.
INTERCONNECTS = ("nvlink", "nvlink-bridge", "pcie", "infinity-fabric")
NETWORKS = ("EFA", "InfiniBand", "GPUDirect-TCPX", "GPUDirect-TCPXO", "RoCE", "Ethernet")
NETWORK_FIELDS = ("technology", "bytes_per_s", "links", "multi_node", "source")
HOST_CPU_FIELDS = ("vendor", "model", "microarchitecture", "source", "note")
CPU_VENDORS = ("Intel", "AMD")


@dataclass(frozen=True)
class NetworkSpec:
    """An instance's network to other nodes: `bytes_per_s` per node, all its NICs together, as the
    cloud states it (`source`); `links` says how it is made up (e.g. 32 × 100 Gbps EFAv2).
    `multi_node` False: the cloud does not offer it for training across nodes (plain Ethernet,
    no RDMA); the planner then does not scale it past one node."""

    technology: str
    bytes_per_s: float
    links: str
    multi_node: bool
    source: str


@dataclass(frozen=True)
class HostCpu:
    """The host CPU the cloud documents for an instance type (`source`). `model` where the cloud publishes one
    (AWS's P5en, Azure's ND H100 v5 say only the generation); `microarchitecture` in the environment collector's
    words (`SERVER_MICROARCHITECTURES`), so a measured host and a catalogued one compare, None where the cloud
    leaves it open (GCP's N1 runs on one of five platforms); `note` says what is inferred or uncertain."""

    vendor: str
    model: str | None
    microarchitecture: str | None
    source: str
    note: str | None

    @property
    def label(self) -> str:
        """'AMD EPYC 7R32, Rome (Zen 2)'; 'Intel, Sapphire Rapids' without a model; the platform left open."""
        name = self.model or self.vendor
        return f"{name}, {self.microarchitecture}" if self.microarchitecture else f"{name} (platform not fixed)"


@dataclass(frozen=True)
class InstanceSpec:
    """One cloud instance shape. `memory_bytes` is host RAM (the cloud's GiB × 2³⁰); the price is
    on-demand USD per hour in `region` on `price_date`, as `source_url` shows it; `price_note`
    says what is uncertain about it. `gpu` is a catalog GPU name (see `gpu_spec`)."""

    name: str
    provider: str
    gpu: str
    gpu_count: int
    gpu_interconnect: str | None
    vcpus: int
    memory_bytes: int
    price_usd_per_hour: float
    region: str
    price_date: str
    source_url: str
    spec_source: str
    price_note: str | None
    network: NetworkSpec | None = None  # None: unknown, or a single-GPU size not meant for multi-node
    host_cpu: HostCpu | None = None     # the documented host CPU (every catalog entry has one)

    @property
    def multi_node(self) -> bool:
        return self.network is not None and self.network.multi_node and self.gpu_count > 1

    @property
    def gpu_spec(self) -> GpuSpec:
        spec = match_gpu(self.gpu)
        assert spec is not None, "read_instances checked every GPU name"
        return spec

    @property
    def gpu_memory_bytes(self) -> int:
        return self.gpu_spec.memory_bytes * self.gpu_count

    @property
    def price_usd_per_gpu_hour(self) -> float:
        return self.price_usd_per_hour / self.gpu_count

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


INSTANCE_FIELDS = tuple(f.name for f in fields(InstanceSpec))


def _norm(name: str) -> str:
    """'Standard_ND96isr_H100_v5' ~ 'nd96isr-h100-v5'; 'p5.48xlarge' ~ 'P5-48XLARGE'."""
    return re.sub(r"[^a-z0-9]+", "", name.lower().removeprefix("standard_"))


def read_instance(reader: EntryReader) -> InstanceSpec:
    gpu = reader.text("gpu")
    spec = match_gpu(gpu)
    if spec is None:
        raise reader.fail("gpu", f"{gpu!r} is not in the GPU catalog (planner/specs/gpus.json)")
    if spec.name != gpu:
        raise reader.fail("gpu", f"use the catalog's name {spec.name!r}, not the alias {gpu!r}")
    count = reader.number("gpu_count", whole=True)
    link = reader.choice("gpu_interconnect", INTERCONNECTS, nullable=count == 1)
    if count == 1 and link is not None:
        raise reader.fail("gpu_interconnect", "must be null for a single-GPU instance")
    return InstanceSpec(
        name=reader.text("name"), provider=reader.choice("provider", PROVIDERS), gpu=gpu, gpu_count=count,
        gpu_interconnect=link, vcpus=reader.number("vcpus", whole=True),
        memory_bytes=reader.number("memory_bytes", whole=True),
        price_usd_per_hour=reader.number("price_usd_per_hour"), region=reader.text("region"),
        price_date=reader.date("price_date"), source_url=reader.url("source_url"),
        spec_source=reader.text("spec_source"), price_note=reader.text("price_note", nullable=True),
        network=read_network(reader), host_cpu=read_host_cpu(reader))


def read_host_cpu(reader: EntryReader) -> HostCpu:
    value = reader.entry["host_cpu"]
    if not isinstance(value, dict):
        raise reader.fail("host_cpu", f"must be an object ({', '.join(HOST_CPU_FIELDS)}), not {value!r}")
    sub = EntryReader(reader.path, f"{reader.where}.host_cpu", value, HOST_CPU_FIELDS)
    arch = sub.text("microarchitecture", nullable=True)
    if arch is not None and arch not in SERVER_MICROARCHITECTURES:
        raise sub.fail("microarchitecture", f"must be one of {', '.join(SERVER_MICROARCHITECTURES)} (the "
                                            f"environment collector's words) or null, not {arch!r}")
    note = sub.text("note", nullable=True)
    if arch is None and note is None:
        raise sub.fail("note", "must say which platforms the cloud may give where the microarchitecture is null")
    return HostCpu(vendor=sub.choice("vendor", CPU_VENDORS), model=sub.text("model", nullable=True),
                   microarchitecture=arch, source=sub.url("source"), note=note)


def read_network(reader: EntryReader) -> NetworkSpec | None:
    value = reader.entry["network"]
    if value is None:
        return None
    if not isinstance(value, dict):
        raise reader.fail("network", f"must be an object ({', '.join(NETWORK_FIELDS)}) or null, not {value!r}")
    sub = EntryReader(reader.path, f"{reader.where}.network", value, NETWORK_FIELDS)
    multi = value["multi_node"]
    if not isinstance(multi, bool):
        raise sub.fail("multi_node", f"must be true or false, not {multi!r}")
    if multi and reader.entry.get("gpu_count") == 1:
        raise sub.fail("multi_node", "a single-GPU instance is not for multi-node training here: set false")
    return NetworkSpec(technology=sub.choice("technology", NETWORKS), bytes_per_s=sub.number("bytes_per_s"),
                       links=sub.text("links"), multi_node=multi, source=sub.url("source"))


def read_instances(path: Path) -> tuple[InstanceSpec, ...]:
    """Every instance of a catalog file, checked field by field; names must be unique."""
    specs = tuple(read_instance(EntryReader(path, f"instances[{i}]", e, INSTANCE_FIELDS))
                  for i, e in enumerate(load_entries(path, "instances")))
    counts = Counter(_norm(s.name) for s in specs)
    for i, spec in enumerate(specs):
        if counts[_norm(spec.name)] > 1:
            raise CatalogError(path, f"instances[{i}].name",
                               f"{spec.name!r} is listed twice (names compare without case and punctuation)")
    return specs


@lru_cache(maxsize=1)
def load_instances() -> tuple[InstanceSpec, ...]:
    return read_instances(INSTANCES_FILE)


def match_instance(name: str) -> InstanceSpec | None:
    """The catalog instance a user's name means ('p5.48xlarge', 'aws:p5.48xlarge',
    'ND96isr_H100_v5', 'Standard_ND96isr_H100_v5'), or None."""
    provider, _, bare = name.rpartition(":")
    key = _norm(bare)
    for spec in load_instances():
        if _norm(spec.name) == key and provider.lower() in ("", spec.provider):
            return spec
    return None
