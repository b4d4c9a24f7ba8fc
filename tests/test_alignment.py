"""GEMMs on shapes that are not a multiple of 8, read from the committed per-op profiles of the lent H100 and
H200 (planner/model/alignment.py), and the padding benchmark's measured gain quoted beside them."""

from __future__ import annotations

import json
import shutil

import pytest
from paths import FROZEN

from gpuplan_schema.results import load_machine
from planner.model.alignment import measured_padding, recommend_alignment, unaligned_gemms
from planner.model.split import machine_rooflines


@pytest.fixture(scope="module", params=["h100-80gb", "h200"])
def machine(request):
    return load_machine(FROZEN / request.param)


def test_gpt_small_spends_about_two_fifths_of_its_gpu_time_in_unaligned_gemms(machine):
    roofline = next(r for r in machine_rooflines(machine) if r.workload == "gpt-small")
    found = unaligned_gemms(roofline)
    # the three output-layer GEMMs of the 50257-wide vocabulary (forward, and the two of the backward pass)
    assert found.kernels == 3 and 0.35 < found.share < 0.5


def test_the_recommendation_quotes_the_padding_measured_on_the_same_gpu(machine):
    recs = {r.workload: r for r in recommend_alignment(machine_rooflines(machine), machine.folder)}
    gpt = recs["gpt-small"]
    assert gpt.setting == "gemm_shapes" and "from 50257 to 50304" in gpt.reason
    assert str(machine.folder / "diagnostics" / "vocab-padding.json") in gpt.reason
    raw = json.loads((machine.folder / "diagnostics" / "vocab-padding.json").read_text())
    eager = {r["vocab"]: min(s["median"] for s in r["step_s"]) for r in raw["rows"] if r["variant"] == "default"}
    assert gpt.gain == pytest.approx(eager[50257] / eager[50304] - 1) and gpt.gain > 0.4
    # ResNet-50's convolutions and GEMMs are all on aligned shapes: nothing to say
    assert "resnet50" not in recs


def test_without_the_benchmark_or_with_a_broken_one_the_finding_stands_alone(machine, tmp_path):
    assert measured_padding(tmp_path, "gpt-small") is None
    (tmp_path / "diagnostics").mkdir()
    (tmp_path / "diagnostics" / "vocab-padding.json").write_text("{not json")
    assert measured_padding(tmp_path, "gpt-small") is None
    shutil.copy(machine.folder / "diagnostics" / "vocab-padding.json", tmp_path / "diagnostics")
    assert measured_padding(tmp_path, "mlp-stgan") is None  # measured for another workload
    [gpt] = [r for r in recommend_alignment(machine_rooflines(machine), tmp_path / "elsewhere")
             if r.workload == "gpt-small"]
    share = unaligned_gemms(next(r for r in machine_rooflines(machine) if r.workload == "gpt-small")).share
    assert gpt.gain is None and "measured on this GPU" not in gpt.reason
    assert gpt.reason.startswith(f"{share:.0%} of the GPU's time in the bf16 step at batch 32")
