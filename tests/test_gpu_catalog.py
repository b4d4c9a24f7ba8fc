"""planner/specs/gpus.json: exact GpuSpec fields, SI units, dense rates, names NVML reports."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

from gpuplan_schema.schema import load_document
from planner.specs import DTYPES, SPECS_DIR, CatalogError, GpuSpec, _norm, load_gpu_catalog, match_gpu, read_gpu_catalog

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
        assert spec.l2_bytes is None or 4 * 2**20 <= spec.l2_bytes <= 96 * 2**20, spec.name  # RTX 6000 Ada: 96 MB
        assert set(spec.flops_per_s) <= set(DTYPES) and "fp32" in spec.flops_per_s, spec.name
        assert all(1e12 < v < 5e15 for v in spec.flops_per_s.values()), spec.name
        assert spec.source, spec.name


def test_dtypes_a_gpu_lacks_are_absent():
    for name in ("T4", "V100 SXM2 16GB", "V100 SXM2 32GB", "V100 PCIe 16GB", "Quadro RTX 8000"):
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
    ("H200 SXM 141GB", "H200 SXM"), ("A100-80GB", "A100 80GB SXM"), ("Tesla V100-PCIE-16GB", "V100 PCIe 16GB"),
    ("V100", "V100 SXM2 16GB"), ("H100", "H100 SXM"),
    ("NVIDIA RTX A6000", "RTX A6000"), ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("Quadro RTX 8000", "Quadro RTX 8000"), ("NVIDIA A100-PCIE-40GB", "A100 40GB PCIe"),
    ("NVIDIA GH200 480GB", "GH200 96GB"), ("NVIDIA GH200 96GB HBM3", "GH200 96GB"),
])
def test_names_nvml_and_torch_report_match(reported, name):
    assert match_gpu(reported).name == name


def test_unknown_gpu_is_none():
    assert match_gpu("NVIDIA A40") is None  # not in the catalog; no guessed entry
    assert match_gpu("NVIDIA GH200 144G HBM3e") is None  # the other GH200: not the 96GB HBM3 entry


# ── dense, not sparse ────────────────────────────────────────────────────────────────────────

# Dense bf16 TFLOPS as the datasheets print them (NVIDIA's Ampere-and-later tables give sparse =
# 2× dense; these are the dense columns) — shared/reference/gpu-facts.md, NVIDIA datasheets, AMD
# ROCm specs. A catalog entry copied from the sparse column is twice these and fails.
DENSE_BF16_TFLOPS = {
    "A10G": 70, "L4": 121, "L40S": 362, "A100 40GB SXM": 312, "A100 80GB SXM": 312,
    "A100 80GB PCIe": 312, "H100 SXM": 989, "H100 PCIe": 756, "H100 NVL": 835.5, "H200 SXM": 989,
    "B200": 2250, "MI300X": 1307, "A100 40GB PCIe": 312, "GH200 96GB": 989,
}
DENSE_FP16_TFLOPS = {"T4": 65, "V100 SXM2 16GB": 125, "V100 SXM2 32GB": 125, "V100 PCIe 16GB": 112,
                     "Quadro RTX 8000": 130.5}


@pytest.mark.parametrize(("name", "tflops"), sorted(DENSE_BF16_TFLOPS.items()))
def test_datacenter_bf16_is_the_dense_figure(name, tflops):
    assert match_gpu(name).flops_per_s["bf16"] == pytest.approx(tflops * 1e12, rel=1e-3)


@pytest.mark.parametrize(("name", "tflops"), sorted(DENSE_FP16_TFLOPS.items()))
def test_pre_ampere_fp16_is_the_dense_figure(name, tflops):
    assert match_gpu(name).flops_per_s["fp16"] == pytest.approx(tflops * 1e12, rel=1e-3)


# The five GPUs added for the published Lambda rows, as transcribed: memory GB, GB/s, SMs, L2 MiB, W, boost MHz,
# compute capability, and dense TFLOPS fp32 / tf32 / bf16 / fp8 (None: no such rate; tensor rates as PyTorch runs them,
# bf16/fp16 with fp32 accumulate). RTX A6000: the datasheet's memory, bandwidth, FP32 and power, NVIDIA's GA102
# whitepaper's 154.8 with FP32 accumulate (a 300 W professional GA102). RTX 6000 Ada: datasheet and NVIDIA's Ada
# professional whitepaper (364.2 with FP32 accumulate). Quadro RTX 8000: datasheet (130.5 fp16 tensor, FP16 or FP32
# accumulate). A100 40GB PCIe: A100 datasheet PCIe column and product brief. GH200 96GB: GH200 datasheet, sparse
# columns halved.
NEW_ENTRIES = {
    "RTX A6000": (48, 768, 84, 6, 300, 1800, "8.6", 38.7, 77.4, 154.8, None),
    "RTX 6000 Ada": (48, 960, 142, 96, 300, 2505, "8.9", 91.1, 182.1, 364.2, 728.5),
    "Quadro RTX 8000": (48, 672, 72, 6, 295, 1770, "7.5", 16.3, None, None, None),
    "A100 40GB PCIe": (40, 1555, 108, 40, 250, 1410, "8.0", 19.5, 156, 312, None),
    "GH200 96GB": (96, 4000, 132, None, 1000, 1980, "9.0", 67, 494.5, 989, 1979),
}


@pytest.mark.parametrize(("name", "figures"), sorted(NEW_ENTRIES.items()))
def test_the_added_entries_are_transcribed(name, figures):
    gb, gbps, sms, l2_mib, watts, mhz, cc, fp32, tf32, bf16, fp8 = figures
    s = match_gpu(name)
    assert s.name == name and s.memory_bytes == gb * 10**9 and s.memory_bandwidth_bytes_per_s == gbps * 1e9
    assert s.sm_count == sms and s.l2_bytes == (None if l2_mib is None else l2_mib * 2**20)
    assert s.tdp_w == watts and s.boost_clock_mhz == mhz and s.compute_capability == cc
    expected = {"fp32": fp32, "tf32": tf32, "bf16": bf16, "fp8": fp8}
    for dtype, tflops in expected.items():
        got = s.flops_per_s.get(dtype)
        assert (got is None) if tflops is None else got == pytest.approx(tflops * 1e12, rel=1e-3), (name, dtype)
    assert s.peer_bytes_per_s is None and s.nvlink_generation is None  # no GPU-to-GPU NVLink recorded
    assert s.boost_clock_source


def test_every_tensor_dtype_ratio_is_the_dense_one():
    """One sparse figure among dense ones breaks these ratios, whichever dtype it was copied into."""
    for s in load_gpu_catalog():
        f = s.flops_per_s
        if "bf16" in f:
            assert f["fp16"] == f["bf16"], s.name             # same tensor-core rate
            assert f["tf32"] == pytest.approx(f["bf16"] / 2, rel=0.02), s.name  # datasheet rounding: L40S 183 vs 362/2
        if "fp8" in f:
            assert f["fp8"] == pytest.approx(2 * f["bf16"], rel=0.03), s.name  # L40S: 733 vs 2 × 362.05
        # Tensor cores run 2× (GeForce, fp32 accumulate) to 28× (B200) the plain FP32 rate; a sparse
        # figure doubles the ratio, past 30 for B200.
        assert 1.9 <= f["fp16"] / f["fp32"] <= 30, s.name


# GA102's tensor cores at the rate its training runs on a 150-300 W data-center card show, per SM per clock: measured
# on the A10G at 10240² (shared/reference/gpu-facts.md, "Measured elsewhere": 69.5 bf16 and 34.7 tf32 TFLOPS, 80 SMs at
# 1.71 GHz), the rate the RTX 3090's fp32-accumulate figure prints. The 150 W A10 runs it too (its datasheet's 125 /
# 62.5 are twice it; the Lambda tables' A10 rows agree with the measured rate, docs/prediction-model.md § 4); the
# 300 W RTX A6000 runs NVIDIA's full rate (its rows, only checked, agree).
GA102_BF16_PER_SM_CLOCK = 69.5e12 / (80 * 1710e6)
GA102_TF32_PER_SM_CLOCK = 34.7e12 / (80 * 1710e6)


@pytest.mark.parametrize(("name", "per_sm_clock"), [("A10", 1), ("A10G", 1), ("RTX 3090", 1), ("RTX 3060 Ti", 1),
                                                    ("RTX A6000", 2)])
def test_ga102_parts_run_the_measured_rate_or_the_full_rate_nvidia_prints(name, per_sm_clock):
    s = match_gpu(name)
    assert s.compute_capability == "8.6"
    assert s.flops_per_s["bf16"] / s.sm_cycles_per_s == pytest.approx(per_sm_clock * GA102_BF16_PER_SM_CLOCK, rel=0.03)
    assert s.flops_per_s["tf32"] / s.sm_cycles_per_s == pytest.approx(per_sm_clock * GA102_TF32_PER_SM_CLOCK, rel=0.03)


def test_every_ga102_part_is_placed():
    assert {s.name for s in load_gpu_catalog() if s.compute_capability == "8.6"} == {
        "A10", "A10G", "RTX 3090", "RTX 3060 Ti", "RTX A6000"}
    assert "125" in match_gpu("A10").source  # the datasheet's own figure is named beside the one used
    assert "154.8" in match_gpu("RTX A6000").source


def test_support_flags_follow_the_rates():
    assert not match_gpu("T4").supports_bf16 and not match_gpu("V100").supports_bf16
    assert match_gpu("A100 80GB SXM").supports_bf16 and not match_gpu("A100 80GB SXM").supports_fp8
    assert match_gpu("L4").supports_fp8 and match_gpu("H200").supports_fp8


def test_every_dtype_is_listed_null_where_unsupported():
    """A missing key would be a forgotten figure; null says the GPU has no such rate."""
    raw = json.loads((SPECS_DIR / "gpus.json").read_text(encoding="utf-8"))
    for entry in raw["gpus"]:
        assert list(entry["flops_per_s"]) == sorted(DTYPES, key=["fp32", "tf32", "fp16", "bf16", "fp8"].index)


def test_links_are_consistent():
    for s in load_gpu_catalog():
        assert (s.nvlink_generation is not None) <= (s.peer_bytes_per_s is not None), s.name
        assert s.peer_bytes_per_s is None or 100e9 <= s.peer_bytes_per_s <= 1800e9, s.name
    assert match_gpu("H100 SXM").nvlink_generation == 4 and match_gpu("H100 SXM").peer_bytes_per_s == 900e9
    assert match_gpu("A100 80GB PCIe").peer_bytes_per_s is None


# ── sources ─────────────────────────────────────────────────────────────────────────────────

THIRD_PARTY_SITES = ("stas00", "ml-engineering", "lightning", "_cuda_flops", "techpowerup", "wikipedia")


def test_third_party_sources_are_marked():
    for s in load_gpu_catalog():
        named = any(site in s.source.lower() for site in THIRD_PARTY_SITES)
        assert named <= ("third-party:" in s.source), s.name
        assert s.is_third_party_sourced == ("third-party" in s.source)


def test_no_entry_rests_on_third_party_sources_alone_for_datacenter_parts():
    for name in DENSE_BF16_TFLOPS:
        source = match_gpu(name).source
        assert not source.startswith("third-party"), name


# fp32 lanes per SM by compute capability: 64 on Volta, Turing and GA100; 128 on GA10x, Ada, Hopper, Blackwell
FP32_LANES = {"7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.9": 128, "9.0": 128, "10.0": 128}


def test_boost_clocks_parse_and_name_their_source():
    for spec in load_gpu_catalog():
        if spec.boost_clock_mhz is None:
            assert spec.boost_clock_source is None and spec.sm_cycles_per_s is None, spec.name
            continue
        assert 1000 <= spec.boost_clock_mhz <= 3000 and spec.boost_clock_source, spec.name
    assert match_gpu("H100 SXM").boost_clock_mhz == 1980 and match_gpu("A100 80GB SXM").boost_clock_mhz == 1410
    assert match_gpu("H100 SXM").sm_cycles_per_s == pytest.approx(132 * 1980e6)
    assert [s.name for s in load_gpu_catalog() if s.boost_clock_mhz is None] == ["B200"]  # no source found


def test_every_nvidia_clock_gives_the_datasheet_fp32_rate():
    """fp32 = SMs × fp32 lanes per SM × 2 (an FMA) × boost clock: a typo in a clock or an SM count shows."""
    for spec in load_gpu_catalog():
        if spec.sm_cycles_per_s is None:
            continue
        lanes = FP32_LANES[spec.compute_capability]
        assert spec.sm_cycles_per_s * lanes * 2 == pytest.approx(spec.flops_per_s["fp32"], rel=0.025), spec.name


def test_committed_results_sm_clock_is_the_catalogs():
    """The H100 and H200 clocks cite NVML's max SM clock of the committed environment documents."""
    for machine, name in (("h100-80gb", "H100 SXM"), ("h200", "H200 SXM")):
        env = load_document(SPECS_DIR.parent.parent / "results" / machine / "environment.json").payload
        assert env.gpus[0].sm_clock_max_hz == match_gpu(name).boost_clock_mhz * 1e6
        assert env.gpus[0].sm_count == match_gpu(name).sm_count


# ── validation: a broken catalog names the file and the field ──────────────────────────────

def _write_catalog(tmp_path, change):
    raw = json.loads((SPECS_DIR / "gpus.json").read_text(encoding="utf-8"))
    change(raw["gpus"])
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


@pytest.mark.parametrize(("change", "field", "problem"), [
    (lambda g: g[3]["flops_per_s"].pop("fp8"), "gpus[3].flops_per_s", "must give every dtype"),
    (lambda g: g[3]["flops_per_s"].update(bf16="70"), "gpus[3].flops_per_s.bf16", "must be a number > 0 or null"),
    (lambda g: g[0]["flops_per_s"].update(fp32=None), "gpus[0].flops_per_s.fp32", "must be a number > 0,"),
    (lambda g: g[1].update(memory_bytes=-16), "gpus[1].memory_bytes", "whole number"),
    (lambda g: g[2].pop("source"), "gpus[2]", "missing source"),
    (lambda g: g[2].update(source=""), "gpus[2].source", "non-empty text"),
    (lambda g: g[4].update(colour="red"), "gpus[4]", "unknown colour"),
    (lambda g: g[5]["aliases"].append("Tesla T4"), "gpus[5].aliases", "'Tesla T4' also names 'T4'"),
    (lambda g: g[6].update(boost_clock_mhz="2 GHz"), "gpus[6].boost_clock_mhz", "must be a number > 0 or null"),
    (lambda g: g[6].update(boost_clock_source=None), "gpus[6].boost_clock_source", "non-empty text"),
    (lambda g: g[6].update(boost_clock_mhz=None), "gpus[6].boost_clock_source", "null where boost_clock_mhz is null"),
    (lambda g: g[0]["measured_matmul_flops_per_s"].update(bf16=1e13), "gpus[0].measured_matmul_flops_per_s",
     "must map dtypes the GPU's flops_per_s rates (fp16, fp32)"),
    (lambda g: g[6]["measured_matmul_flops_per_s"].update(bf16=-1), "gpus[6].measured_matmul_flops_per_s.bf16",
     "must be a number > 0,"),
    (lambda g: g[6].update(measured_matmul_source=None), "gpus[6].measured_matmul_source", "non-empty text"),
    (lambda g: g[0].update(indirect_evidence=5), "gpus[0].indirect_evidence", "non-empty text or null"),
    (lambda g: g[1].update(indirect_evidence=" "), "gpus[1].indirect_evidence", "non-empty text or null"),
    (lambda g: g[2].pop("indirect_evidence"), "gpus[2]", "missing indirect_evidence"),
    (lambda g: g[2].update(measured_matmul_source="a harness"), "gpus[2].measured_matmul_source",
     "null where measured_matmul_flops_per_s is null"),
])
def test_a_broken_gpu_catalog_names_file_and_field(tmp_path, change, field, problem):
    path = _write_catalog(tmp_path, change)
    with pytest.raises(CatalogError) as caught:
        read_gpu_catalog(path)
    assert str(caught.value).startswith(f"{path}: {field}: ")
    assert problem in str(caught.value)


def test_the_shipped_catalog_reads_clean():
    assert read_gpu_catalog(SPECS_DIR / "gpus.json") == load_gpu_catalog()
