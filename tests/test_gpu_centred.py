"""Issue 39 item 5: a band on another architecture from evidence, centred on the target GPU's own published rows
(planner/check/gpu_centred.py), and the bands held out per harness (planner/check/harness_bands.py)."""

from __future__ import annotations

import pytest

from planner.check.bands import BandTable, Residual, band_table_for
from planner.check.gpu_centred import MIN_ROWS, gpu_centred
from planner.check.harness_bands import harness_coverage
from planner.check.pairs import build_pair_check
from planner.model.performance import HostExposure

CAPS = {"slow": "8.9", "fast": "8.0", "kin": "8.9", "alone": "7.5"}.get


def _rows():
    # "slow" was always predicted too fast (truth at 0.8 of the prediction), "fast" was right, each with a spread
    return [("slow", 1 / 0.8 - 1), ("slow", 1 / 0.78 - 1), ("slow", 1 / 0.82 - 1),
            ("fast", 0.02), ("fast", -0.03), ("fast", 0.0), ("fast", 0.05)]


def test_the_band_leans_the_way_the_gpus_own_rows_lay():
    c = gpu_centred(_rows(), "slow", CAPS)
    assert c.centre == pytest.approx(0.8) and "its own 3" == c.centred_on
    assert 1 - c.low < 0.8 < 1 + c.high and c.high < 0   # the whole range lies below the prediction
    fast = gpu_centred(_rows(), "fast", CAPS)
    assert fast.centre == pytest.approx(1 / 1.01, rel=0.02) and fast.low < 0.1 and fast.high < 0.1


def test_a_gpu_without_rows_is_centred_on_its_architecture_then_on_the_prediction():
    kin = gpu_centred(_rows(), "kin", CAPS)
    assert kin.centre == pytest.approx(0.8) and "the 3 of its architecture (8.9)" == kin.centred_on
    alone = gpu_centred(_rows(), "alone", CAPS)
    assert alone.centre == 1.0 and alone.centred_on == ""
    assert gpu_centred([("x", 0.1)] * (MIN_ROWS - 1), "x", CAPS) is None   # nothing to centre on


def test_the_bands_floor_keeps_the_prediction_inside_its_range():
    rows = [Residual(False, HostExposure(), e, g, gpu=g, family=f"m{i}") for i, (g, e) in enumerate(_rows())]
    band = BandTable(rows).band(False, gpu="slow")
    assert band.high == pytest.approx(0.03) and band.low > 0.2 and "centred on its own 3 (-20%)" in band.basis
    # held out by model: the published row of m0 is checked without m0's rows
    assert all(r.family != "m0" for r in BandTable(rows).without_family("m0").residuals)


def test_every_harness_reports_its_coverage_and_width(h100, h200):
    """The frozen H100 has no nanogpt (the GPT-2 harness's twin): that harness reports no truth, the others do."""
    harnesses = {h.harness.split(" (")[0]: h for h in harness_coverage(band_table_for([h100, h200]),
                                                                         build_pair_check(h100))}
    assert {"H100 <-> H200, measured", "Lambda", "DeepLearningExamples ratios"} <= set(harnesses)
    assert harnesses["GPT-2 124M script"].n == 0
    for name in ("H100 <-> H200, measured", "Lambda", "DeepLearningExamples ratios"):
        h = harnesses[name]
        assert 0 < h.inside <= h.n and h.median_half_width > 0
    assert harnesses["H100 <-> H200, measured"].coverage >= 0.9
