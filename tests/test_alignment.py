"""GEMMs on shapes that are not a multiple of 8, read from the committed per-op profiles of the lent H100 and
H200 (planner/plan/alignment.py)."""

from __future__ import annotations

import pytest
from paths import FROZEN

from gpuplan_schema.results import load_machine
from planner.model.split import machine_rooflines
from planner.plan.alignment import recommend_alignment, unaligned_gemms


@pytest.fixture(scope="module", params=["h100-80gb", "h200"])
def machine(request):
    return load_machine(FROZEN / request.param)


def test_gpt_small_spends_about_two_fifths_of_its_gpu_time_in_unaligned_gemms(machine):
    roofline = next(r for r in machine_rooflines(machine) if r.workload == "gpt-small")
    found = unaligned_gemms(roofline)
    # the three output-layer GEMMs of the 50257-wide vocabulary (forward, and the two of the backward pass)
    assert found.kernels == 3 and 0.35 < found.share < 0.5


def test_the_recommendation_reads_only_the_profile_never_a_diagnostics_file(machine, tmp_path):
    """The plan reads documents of the contract only: the padding benchmark's figures stay in docs/, and the
    recommendation stands on the per-op profile alone."""
    recs = {r.workload: r for r in recommend_alignment(machine_rooflines(machine))}
    gpt = recs["gpt-small"]
    share = unaligned_gemms(next(r for r in machine_rooflines(machine) if r.workload == "gpt-small")).share
    assert gpt.setting == "gemm_shapes" and gpt.gain is None and "diagnostics" not in gpt.reason
    assert gpt.reason.startswith(f"{share:.0%} of the GPU's time in the bf16 step at batch 32")
    # ResNet-50's convolutions and GEMMs are all on aligned shapes: nothing to say
    assert "resnet50" not in recs
