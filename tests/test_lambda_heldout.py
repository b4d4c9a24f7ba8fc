"""The held-out Lambda families (issues 39 and 41): examples/ncf.py and examples/waveglow.py are DLE's models at
Lambda's logged sizes, their tiny sizes train a step on the CPU, their published rows are the CSV's, their main
steps trace as their frozen predictions reported, and the scoring of a measured machine against Lambda's tables
(planner/check/lambda_heldout.py) holds each ratio to the H100 SXM against the range its two bands give it — run on
the committed H200 and H100 machines, whose GNMT and Transformer-XL tables stand in for a held-out collection."""

from __future__ import annotations

import pytest
import torch
from example_workloads import assert_traces_as_frozen, loaders
from paths import REPO

from collectors.workloads.training import Variant, build_step, prepare_model
from gpuplan_schema.results import load_results_root
from planner.check.bands import band_table_for
from planner.check.crossarch import build_crosscheck
from planner.check.lambda_heldout import HELD_OUT_FAMILIES, held_out_lambda_ratios, render
from planner.specs.published import load_published

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them

NCF, WAVEGLOW = "examples/ncf.py", "examples/waveglow.py"
FROZEN = REPO / "results/predictions-before-measurement/lambdaheld-2026-11-29/predictions.json"
# the counts Lambda's NCF log prints, and DLE's WaveGlow at training's default of 512 WN channels
PARAMETERS = {NCF: ("ncf", 31_832_577, "samples"), WAVEGLOW: ("waveglow", 268_294_760, "segments")}
CPU = torch.device("cpu")


@pytest.mark.parametrize("path", [NCF, WAVEGLOW])
def test_the_real_size_is_dles_and_the_tiny_one_trains_a_step(path):
    name, count, unit = PARAMETERS[path]
    tiny, real_on_meta, module = loaders(path)
    real = real_on_meta()
    assert (real.name, real.unit, sum(p.numel() for p in real.model.parameters())) == (name, unit, count)
    assert f"{count:,} parameters" in module().__doc__
    workload = tiny()
    model = prepare_model(workload, CPU, Variant())
    before = [p.detach().clone() for p in model.parameters()]
    build_step(workload, model, "fp32", 2, CPU, Variant()).run()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_ncf_is_neumf_a_gmf_product_beside_an_mlp():
    module = loaders(NCF)[2]()
    model = module.NeuMF(50, 20, 4, (8, 8, 4)).eval()
    users, items = torch.tensor([3, 7]), torch.tensor([1, 19])
    with torch.no_grad():
        mf = model.mf_user_embed(users) * model.mf_item_embed(items)
        x = torch.cat((model.mlp_user_embed(users), model.mlp_item_embed(items)), 1)
        for layer in model.mlp:
            x = torch.relu(layer(x))
        assert torch.allclose(model((users, items)), model.final(torch.cat((mf, x), 1)))
    (ids, labels) = loaders(NCF)[0]().make_batch(10_000, CPU)
    assert ids[0].max() < 1000 and ids[1].max() < 500 and 0.15 < labels.mean() < 0.25


def test_waveglow_is_an_invertible_flow_with_early_outputs():
    """Each 1×1 convolution starts orthonormal (log det 0), each coupling as the identity (WN's end is zero): the
    output is the grouped audio reordered by the flows' rotations, 8 channels of segment / 8 steps; the loss is then
    sum(z²) / 2 over the samples."""
    workload = loaders(WAVEGLOW)[0]()
    (spect, audio), target = workload.make_batch(2, CPU)
    assert spect.shape == (2, 8, 2) and audio.shape == (2, 512)
    with torch.no_grad():
        z, log_s, log_det_w = workload.forward((spect, audio))
        assert z.shape == (2, 8, 64) and len(log_s) == len(log_det_w) == 4
        assert all(float(s.abs().max()) == 0 for s in log_s) and all(abs(float(d)) < 1e-3 for d in log_det_w)
        assert torch.allclose(z.square().sum(), audio.square().sum(), rtol=1e-4)   # rotations keep the norm
        assert float(workload.loss((z, log_s, log_det_w), target)) == pytest.approx(
            float(audio.square().sum() / 2 / audio.numel()), rel=1e-3)


@pytest.mark.parametrize("path", [NCF, WAVEGLOW])
def test_the_main_step_traces_with_the_unknown_kinds_and_share_its_frozen_prediction_reported(path):
    assert_traces_as_frozen(path, FROZEN)


def test_the_held_out_tables_are_lambdas_fp32_columns_and_no_reference_workload_is_their_model():
    tables = {t.model: t for t in load_published() if t.model in HELD_OUT_FAMILIES}
    assert set(tables) == set(HELD_OUT_FAMILIES)
    assert tables["ncf"].row("H100 SXM").throughput_per_s == 49_094_300 and tables["ncf"].row("V100").batch == 1_280_000
    assert tables["waveglow"].row("H100 SXM").throughput_per_s == 360_558
    assert all(t.precision == "fp32" and len(t.rows) == 12 for t in tables.values())
    machines = load_results_root(REPO / "results")
    assert not any(w.workload in HELD_OUT_FAMILIES for m in machines for w in m.workloads)


def test_a_measured_machine_is_scored_as_ratios_to_the_h100_inside_its_two_bands():
    """From the H100 itself the ratios are the published check's (its own point the denominator); from the H200 the
    H100 is predicted too, and each range is wider by the H100's band."""
    machines = load_results_root(REPO / "results")
    bands = band_table_for(machines)
    tables = [t for t in load_published() if t.id in ("lambda-v1-gnmt-fp32", "lambda-v1-transformer-xl-base-fp32")]
    h100, h200 = (next(m for m in machines if m.machine == name) for name in ("h100-80gb", "h200"))
    from_h100 = held_out_lambda_ratios(bands, h100, tables)
    check = build_crosscheck(h100, tables)
    assert check is not None
    published_check = {(r.table, r.gpu): r.error for r in check.rows if r.same_stack}
    assert len(from_h100) == len(published_check) == 16
    for r in from_h100:
        assert r.error == pytest.approx(published_check[(r.table, r.gpu)], abs=1e-9) and r.half_width > 0
    by_key = {(r.table, r.gpu): r for r in from_h100}
    from_h200 = {(r.table, r.gpu): r for r in held_out_lambda_ratios(bands, h200, tables)}
    assert set(from_h200) == set(by_key)
    assert sum(r.half_width > by_key[k].half_width for k, r in from_h200.items()) >= 12
    text = render(list(from_h200.values()), "NVIDIA H200")
    assert text.startswith("Lambda held-out families from NVIDIA H200, ratios to the H100 SXM: ") and "| yes" in text
