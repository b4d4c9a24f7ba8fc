"""The GPU catalog: datasheet figures (dense rates, SI units) from `gpus.json`, looked up by any name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path

from planner.specs.catalog_checks import CatalogError, EntryReader, load_entries

SPECS_DIR = Path(__file__).parent
GPUS_FILE = SPECS_DIR / "gpus.json"
# The collectors' dtype names. gpus.json lists all five for every GPU, null where the GPU has no
# such rate, so a forgotten figure (a missing key) is told apart from an unsupported one (null).
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model's datasheet. Rates are dense (never the 2:1 sparse figures), SI units.

    `flops_per_s` is keyed by the collectors' dtype names: fp32 (plain FP32, no tensor cores),
    tf32, fp16, bf16, fp8; a dtype the GPU lacks is absent here (null in gpus.json).
    `peer_bytes_per_s` is the GPU-to-GPU link (NVLink, NVLink bridge, Infinity Fabric) as the
    datasheet counts it (both directions, all links); None where GPUs talk over PCIe only.
    `boost_clock_mhz` is the SM (engine) boost clock the datasheet names, `boost_clock_source` where it was
    read; both None where no source gives one.
    `measured_matmul_flops_per_s` is what one public harness measured the GPU's matmul to reach per dtype
    (`measured_matmul_source` says which and how many entries); empty where that harness has no entry. The
    performance model reads it beside the datasheet: a GPU whose power or clocks hold it further below its
    datasheet than the source GPU is (an L4 at 72 W) runs its matmuls that much slower.
    `indirect_evidence` is what published measurements that cannot enter the check (no row of ours and of the
    source GPU) say of the GPU's predictions, with where to read their sources; None where there is none. The
    plan prints it beside the GPU's † (the T4: transformer steps likely slower than predicted).
    """

    name: str
    aliases: tuple[str, ...]
    memory_bytes: int
    memory_bandwidth_bytes_per_s: float
    sm_count: int | None
    l2_bytes: int | None
    tdp_w: float | None
    link: str | None
    compute_capability: str | None
    flops_per_s: dict[str, float]
    source: str
    nvlink_generation: int | None = None
    peer_bytes_per_s: float | None = None
    pcie_generation: int | None = None
    boost_clock_mhz: float | None = None
    boost_clock_source: str | None = None
    measured_matmul_flops_per_s: dict[str, float] = field(default_factory=dict)
    measured_matmul_source: str | None = None
    indirect_evidence: str | None = None

    @property
    def supports_bf16(self) -> bool:
        """Native bf16 tensor cores (T4 and V100 only emulate bf16, far below their fp16 rate)."""
        return "bf16" in self.flops_per_s

    @property
    def supports_fp8(self) -> bool:
        return "fp8" in self.flops_per_s

    @property
    def sm_cycles_per_s(self) -> float | None:
        """SM count × boost clock: how many SM-cycles the GPU runs per second. Every NVIDIA SM from Volta on
        issues from four warp schedulers, one warp instruction each per cycle, so this is the instruction issue
        rate up to a constant shared by all of them. None without a clock, or for an AMD GPU (a CU is not an
        SM: another issue width), where no cross-vendor ratio is meaningful."""
        cuda = (self.compute_capability or "")[:1].isdigit()
        return self.sm_count * self.boost_clock_mhz * 1e6 if cuda and self.sm_count and self.boost_clock_mhz else None

    @property
    def is_third_party_sourced(self) -> bool:
        return "third-party" in self.source


GPU_FIELDS = tuple(f.name for f in fields(GpuSpec))


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower().removeprefix("nvidia "))


def read_gpu(reader: EntryReader) -> GpuSpec:
    flops = reader.entry["flops_per_s"]
    if not isinstance(flops, dict) or set(flops) != set(DTYPES):
        given = sorted(flops) if isinstance(flops, dict) else flops
        raise reader.fail("flops_per_s", f"must give every dtype of {', '.join(DTYPES)} "
                                         f"(null where the GPU has no such rate), not {given!r}")
    rated = {d: v for d in DTYPES
             if (v := reader.number(f"flops_per_s.{d}", nullable=d != "fp32", value=flops[d])) is not None}
    whole = {k: reader.number(k, whole=True, nullable=k != "memory_bytes")
             for k in ("memory_bytes", "sm_count", "l2_bytes", "nvlink_generation", "pcie_generation")}
    return GpuSpec(
        name=reader.text("name"), aliases=reader.strings("aliases"),
        memory_bandwidth_bytes_per_s=reader.number("memory_bandwidth_bytes_per_s"),
        tdp_w=reader.number("tdp_w", nullable=True), link=reader.text("link", nullable=True),
        compute_capability=reader.text("compute_capability", nullable=True),
        flops_per_s=rated, source=reader.text("source"),
        peer_bytes_per_s=reader.number("peer_bytes_per_s", nullable=True), **whole, **_clock(reader),
        **_measured_matmul(reader, set(rated)), indirect_evidence=reader.text("indirect_evidence", nullable=True))


def _clock(reader: EntryReader) -> dict[str, float | str | None]:
    """The boost clock and its source: both given, or both null (a clock nobody can check is refused)."""
    mhz = reader.number("boost_clock_mhz", nullable=True)
    source = _source_of(reader, "boost_clock_source", mhz, "boost_clock_mhz")
    return {"boost_clock_mhz": mhz, "boost_clock_source": source}


def _source_of(reader: EntryReader, key: str, value: object, of: str) -> str | None:
    """The source of a figure: text where the figure `of` is given, null where it is null."""
    source = reader.text(key, nullable=value is None)
    if value is None and source is not None:
        raise reader.fail(key, f"must be null where {of} is null")
    return source


def _measured_matmul(reader: EntryReader, datasheet: set[str]) -> dict[str, object]:
    """The measured matmul rates and their source: both given, or both null; only for dtypes the datasheet rates
    (a measured rate with nothing to compare it with is refused)."""
    rates = reader.entry["measured_matmul_flops_per_s"]
    source = _source_of(reader, "measured_matmul_source", rates, "measured_matmul_flops_per_s")
    if rates is None:
        return {"measured_matmul_flops_per_s": {}, "measured_matmul_source": None}
    if not isinstance(rates, dict) or not rates or not set(rates) <= datasheet:
        raise reader.fail("measured_matmul_flops_per_s", f"must map dtypes the GPU's flops_per_s rates "
                                                         f"({', '.join(sorted(datasheet))}) to FLOP/s, not {rates!r}")
    measured = {d: reader.number(f"measured_matmul_flops_per_s.{d}", value=v) for d, v in rates.items()}
    return {"measured_matmul_flops_per_s": measured, "measured_matmul_source": source}


def read_gpu_catalog(path: Path) -> tuple[GpuSpec, ...]:
    """Every GPU of a catalog file, checked field by field; names must not collide."""
    specs = tuple(read_gpu(EntryReader(path, f"gpus[{i}]", e, GPU_FIELDS))
                  for i, e in enumerate(load_entries(path, "gpus")))
    seen: dict[str, str] = {}
    for i, spec in enumerate(specs):
        for name in (spec.name, *spec.aliases):
            owner = seen.setdefault(_norm(name), spec.name)
            if owner != spec.name:
                raise CatalogError(path, f"gpus[{i}].aliases", f"{name!r} also names {owner!r}")
    return specs


@lru_cache(maxsize=1)
def load_gpu_catalog() -> tuple[GpuSpec, ...]:
    return read_gpu_catalog(GPUS_FILE)


def match_gpu(device_name: str) -> GpuSpec | None:
    """The catalog entry for a name as NVML or torch reports it ('NVIDIA H100 80GB HBM3'), or None."""
    return _names_of(load_gpu_catalog()).get(_norm(device_name))


_NAMES: tuple[tuple[GpuSpec, ...], dict[str, GpuSpec]] | None = None


def _names_of(catalog: tuple[GpuSpec, ...]) -> dict[str, GpuSpec]:
    """Normalised name or alias → its entry, built once per catalog (a planner run asks hundreds of thousands of
    times: a site of 200 machines spent a third of its time normalising the catalog's names again for each ask)."""
    global _NAMES
    if _NAMES is None or _NAMES[0] is not catalog:
        names: dict[str, GpuSpec] = {}
        for spec in catalog:
            for name in (spec.name, *spec.aliases):
                names.setdefault(_norm(name), spec)
        _NAMES = (catalog, names)
    return _NAMES[1]
