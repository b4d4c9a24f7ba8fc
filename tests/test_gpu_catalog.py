"""planner/specs/gpus.json: exact GpuSpec fields, SI units, dense rates, names NVML reports."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

from collectors.schema import load_document
from planner.specs import SPECS_DIR, GpuSpec, _norm, load_gpu_catalog, match_gpu

DTYPES = {"fp32", "tf32", "fp16", "bf16", "fp8"}
H100_FIXTURE = SPECS_DIR.parent.parent / "tests" / "fixtures" / "results" / "h100-80gb" / "ceilings.json"


def test_entries_have_exactly_the_gpuspec_fields():
    raw = json.loads((SPECS_DIR / "gpus.json").read_text(encoding="utf-8"))
    assert set(raw) == {"gpus"}
    names = [f.name for f in dataclasses.fields(GpuSpec)]
    for entry in raw["gpus"]:
        assert list(entry) == names, entry["name"]


def test_units_are_si():
    for spec in load_gpu_catalog():
        assert isinstance(spec.memory_bytes, int) and 8e9 <= spec.memory_bytes <= 200e9, spec.name
        assert 300e9 <= spec.memory_bandwidth_bytes_per_s <= 8e12, spec.name
        assert spec.l2_bytes is None or 4 * 2**20 <= spec.l2_bytes <= 72 * 2**20, spec.name
        assert set(spec.flops_per_s) <= DTYPES and "fp32" in spec.flops_per_s, spec.name
        assert all(1e12 < v < 5e15 for v in spec.flops_per_s.values()), spec.name
        assert spec.source, spec.name


def test_dtypes_a_gpu_lacks_are_absent():
    for name in ("T4", "V100 SXM2 16GB", "V100 SXM2 32GB"):
        assert set(match_gpu(name).flops_per_s) == {"fp32", "fp16"}
    assert "fp8" not in match_gpu("A100 80GB SXM").flops_per_s


def test_rates_are_dense_not_sparse():
    h100 = match_gpu("NVIDIA H100 80GB HBM3")
    assert h100.flops_per_s["bf16"] == 989e12 and h100.flops_per_s["fp8"] == 1979e12
    assert h100.flops_per_s["tf32"] == 494.5e12
    # A real H100's best dense bf16 matmul lands near 80% of the dense figure; against the
    # sparse figure (2x) it would look like 40%.
    measured = next(m for m in load_document(H100_FIXTURE).payload.matmul if m.dtype == "bf16")
    assert 0.6 < measured.flops_per_s.median / h100.flops_per_s["bf16"] < 1.0


def test_geforce_tensor_rates_use_fp32_accumulate():
    assert match_gpu("NVIDIA GeForce RTX 4090").flops_per_s["bf16"] == pytest.approx(165.2e12)


def test_no_two_entries_share_a_name():
    counts = Counter(key for spec in load_gpu_catalog() for key in {_norm(a) for a in (spec.name, *spec.aliases)})
    assert [k for k, n in counts.items() if n > 1] == []


@pytest.mark.parametrize(("reported", "name"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200 SXM"), ("NVIDIA H200 SXM", "H200 SXM"), ("H200", "H200 SXM"), ("h200-sxm", "H200 SXM"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"), ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM"),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"), ("Tesla T4", "T4"), ("Tesla V100-SXM2-16GB", "V100 SXM2 16GB"),
    ("Tesla V100-SXM2-32GB", "V100 SXM2 32GB"), ("NVIDIA A10G", "A10G"), ("NVIDIA A10", "A10"),
    ("NVIDIA L4", "L4"), ("NVIDIA L40S", "L40S"), ("NVIDIA B200", "B200"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    ("NVIDIA GeForce RTX 3060 Ti", "RTX 3060 Ti"), ("AMD Instinct MI300X", "MI300X"),
])
def test_names_nvml_and_torch_report_match(reported, name):
    assert match_gpu(reported).name == name


def test_unknown_gpu_is_none():
    assert match_gpu("NVIDIA A100-PCIE-40GB") is None  # not in the facts table; no guessed entry
