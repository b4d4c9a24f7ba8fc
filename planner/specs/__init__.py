"""The spec catalog: GPU datasheet figures (dense), loaded from the data files beside this module."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SPECS_DIR = Path(__file__).parent


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model's datasheet. Rates are dense (never the 2:1 sparse figures), SI units.

    `flops_per_s` is keyed by the collectors' dtype names: fp32 (plain FP32, no tensor cores),
    tf32, fp16, bf16, fp8; a dtype the GPU lacks is absent.
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


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower().removeprefix("nvidia "))


@lru_cache(maxsize=1)
def load_gpu_catalog() -> tuple[GpuSpec, ...]:
    raw = json.loads((SPECS_DIR / "gpus.json").read_text(encoding="utf-8"))
    specs = []
    for entry in raw["gpus"]:
        entry = dict(entry)
        entry["aliases"] = tuple(entry.get("aliases", ()))
        specs.append(GpuSpec(**entry))
    return tuple(specs)


def match_gpu(device_name: str) -> GpuSpec | None:
    """The catalog entry for a name as NVML or torch reports it ('NVIDIA H100 80GB HBM3'), or None."""
    key = _norm(device_name)
    for spec in load_gpu_catalog():
        if key in {_norm(spec.name), *(_norm(a) for a in spec.aliases)}:
            return spec
    return None
