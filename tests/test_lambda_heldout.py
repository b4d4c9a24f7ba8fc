"""The held-out Lambda models (issues 39 and 41): examples/ncf.py, examples/waveglow.py, examples/tacotron2.py and
examples/transformer_xl_large.py are DLE's models at Lambda's logged sizes, their tiny sizes train a step on the CPU,
their published rows are the CSV's, their main steps trace as their frozen predictions reported, the frozen plan is
read in each table's unit, and the scoring of a measured machine against Lambda's tables
(planner/check/lambda_heldout.py) holds each ratio to the H100 SXM against the range its two bands give it — run on
the committed H200 and H100 machines, whose GNMT and Transformer-XL tables stand in for a held-out collection."""

from __future__ import annotations

import ast
import json

import pytest
import torch
from example_workloads import assert_traces_as_frozen, loaders
from paths import REPO, load_script

from collectors.workloads.training import Variant, build_step, prepare_model
from gpuplan_schema.results import load_results_root
from planner.check.bands import band_table_for
from planner.check.crossarch import build_crosscheck
from planner.check.lambda_heldout import HELD_OUT_FAMILIES, held_out_lambda_ratios, render
from planner.specs.published import load_published

lambda_heldout_script = load_script(REPO / "benchmarks" / "lambda_heldout.py")

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them

NCF, WAVEGLOW = "examples/ncf.py", "examples/waveglow.py"
TACOTRON2, TXL_LARGE = "examples/tacotron2.py", "examples/transformer_xl_large.py"
FROZEN = REPO / "results/predictions-before-measurement/lambdaheld-2026-11-29/predictions.json"
FROZEN2 = REPO / "results/predictions-before-measurement/lambdaheld2-2026-11-29"
# the counts Lambda's NCF and Transformer-XL large logs print, DLE's WaveGlow at training's default of 512 WN channels
# and DLE's Tacotron 2 at its defaults (its log prints no count)
PARAMETERS = {NCF: ("ncf", 31_832_577, "samples"), WAVEGLOW: ("waveglow", 268_294_760, "segments"),
              TACOTRON2: ("tacotron2", 28_193_153, "utterances"),
              TXL_LARGE: ("transformer-xl-large", 519_963_095, "segments")}
CPU = torch.device("cpu")


@pytest.mark.parametrize("path", list(PARAMETERS))
def test_the_real_size_is_dles_and_the_tiny_one_trains_a_step(path):
    name, count, unit = PARAMETERS[path]
    tiny, real_on_meta, _ = loaders(path)
    real = real_on_meta()
    assert (real.name, real.unit, sum(p.numel() for p in real.model.parameters())) == (name, unit, count)
    # the file's own docstring (Transformer-XL large's model class is the base file's)
    assert f"{count:,} parameters" in ast.get_docstring(ast.parse((REPO / path).read_text()))
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


def test_tacotron2_decodes_each_frame_from_the_frames_before_it():
    """Teacher forcing: the decoder's frame t sees the target frames before t only (the go frame first), so changing
    target frame k leaves frames 0 … k of the decoder's output as they were and changes frame k + 1; the dropout masks
    are the same draws (a fixed seed: the prenet's dropout is on even in eval, as DLE's)."""
    workload = loaders(TACOTRON2)[0]()
    model = workload.model.eval()
    (text, mel), _ = workload.make_batch(2, CPU)
    changed = mel.clone()
    changed[:, :, 5] += 1.0
    with torch.no_grad():
        torch.manual_seed(0)
        before, _, gate = model((text, mel))
        torch.manual_seed(0)
        after = model((text, changed))[0]
    assert before.shape == mel.shape and gate.shape == (2, mel.shape[2])
    assert torch.equal(before[:, :, :6], after[:, :, :6]) and not torch.allclose(before[:, :, 6], after[:, :, 6])


def test_transformer_xl_large_is_the_base_modules_with_the_large_configs_dropouts():
    workload = loaders(TXL_LARGE)[1]()
    dropouts = {name: m.p for name, m in workload.model.named_modules() if isinstance(m, torch.nn.Dropout)}
    assert sum(name.endswith("dropatt") for name in dropouts) == len(workload.model.layers) == 18
    assert set(dropouts.values()) == {0.2}
    assert (workload.model.tgt_len, workload.model.mem_len, workload.tokens_per_sample) == (256, 256, 256)


@pytest.mark.parametrize("path, frozen", [(NCF, FROZEN), (WAVEGLOW, FROZEN), (TXL_LARGE, FROZEN2 / "predictions.json"),
                                          pytest.param(TACOTRON2, FROZEN2 / "predictions.json",
                                                       marks=pytest.mark.slow)])   # 860 decoder steps: ~1 min
def test_the_main_step_traces_with_the_unknown_kinds_and_share_its_frozen_prediction_reported(path, frozen):
    assert_traces_as_frozen(path, frozen)


def test_the_held_out_tables_are_lambdas_columns_and_no_reference_workload_is_their_model():
    tables = {t.id: t for t in load_published() if t.model in HELD_OUT_FAMILIES}
    assert {t.model for t in tables.values()} == set(HELD_OUT_FAMILIES)
    assert set(tables) == {"lambda-v1-ncf-fp32", "lambda-v1-waveglow-fp32", "lambda-v1-tacotron2-fp32",
                           "lambda-v1-transformer-xl-large-fp16", "lambda-v1-transformer-xl-large-fp32"}
    ncf, taco = tables["lambda-v1-ncf-fp32"], tables["lambda-v1-tacotron2-fp32"]
    assert ncf.row("H100 SXM").throughput_per_s == 49_094_300 and ncf.row("V100").batch == 1_280_000
    assert tables["lambda-v1-waveglow-fp32"].row("H100 SXM").throughput_per_s == 360_558
    h100 = taco.row("H100 SXM")
    assert (h100.throughput_per_s, h100.batch, taco.row("V100").batch) == (80_446, 256, 48)
    large16, large32 = tables["lambda-v1-transformer-xl-large-fp16"], tables["lambda-v1-transformer-xl-large-fp32"]
    h100 = large16.row("H100 SXM")
    assert (large16.precision, h100.throughput_per_s, h100.batch) == ("amp", 30_841, 48)
    assert (large32.row("H100 SXM").throughput_per_s, large32.row("H100 SXM").batch) == (22_251, 24)
    assert all(len(t.rows) == 12 and sum(r.same_stack for r in t.rows) == 9 for t in tables.values())
    assert all(t.precision == "fp32" for t in tables.values() if t is not large16)
    machines = load_results_root(REPO / "results")
    assert not any(w.workload in HELD_OUT_FAMILIES for m in machines for w in m.workloads)


def test_the_frozen_plan_is_read_in_each_tables_unit():
    """Tacotron 2's published figure is mel frames (566 an utterance), Transformer-XL's target tokens (256 a segment):
    the frozen plan's rate on a GPU, scaled, is each row's prediction; the ratio to the H100 SXM is unit-free."""
    plan = json.loads((FROZEN2 / "plan-all-gpus.json").read_text())
    tables = [t for t in load_published() if t.model in ("tacotron2", "transformer-xl-large")]
    rows = lambda_heldout_script.frozen_rows(plan, tables)
    assert len(rows) == 36 and all(r["predicted"] > 0 and r["low"] <= r["predicted"] <= r["high"] for r in rows)
    assert sum(r["ratio_error"] is not None for r in rows) == 24
    h100 = next(t for t in plan["targets"] if t["gpu"] == "H100 SXM")
    for row in (r for r in rows if r["gpu"] == "H100 SXM"):
        model = "tacotron2" if "tacotron2" in row["table"] else "transformer-xl-large"
        ours = next(p for p in h100["predictions"] if p["workload"] == model and p["variant"] == "default"
                    and f"{p['precision']}, {p['batch']}" == row["point"])
        assert row["predicted"] == pytest.approx(ours["throughput_per_s"] * {"tacotron2": 566}.get(model, 256))


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


def test_the_docs_read_each_rounds_collection_that_is_committed(monkeypatch):
    """docs/tables.py: a round whose collection is not committed yet is left out (the block is the first round's alone),
    and each committed round's rows follow the one before, under the one GPU's name."""
    from docs import tables

    machines = load_results_root(REPO / "results")
    first = tables.LAMBDA_HELD_OUT[0]
    monkeypatch.setattr(tables, "LAMBDA_HELD_OUT", (first, ("h200", "diagnostics/not-collected-yet/runs/x")))
    alone = tables.held_out_lambda(machines)
    rows = [line for line in alone.splitlines() if line.startswith("| lambda-v1-")]
    assert alone.startswith("Lambda held-out families from NVIDIA H200,") and len(rows) == 16
    monkeypatch.setattr(tables, "LAMBDA_HELD_OUT", (first, first))
    twice = tables.held_out_lambda(machines)
    assert twice.startswith("Lambda held-out families from NVIDIA H200, ratios to the H100 SXM: 32 of 32 inside")
    assert [line for line in twice.splitlines() if line.startswith("| lambda-v1-")] == rows + rows
