"""Points timed in NVIDIA DeepLearningExamples' own configuration (planner/check/dle_points.py) and the DLE check that
uses them (planner/check/pairs.py). The overlays here are built from the frozen H100's real documents, a point copied
under the layout the overlay claims: what is asserted is which point and which profiles a row is predicted from,
never a figure."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
from paths import FIXTURES, FROZEN

from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import build_document, load_document, save_document
from planner.check.dle_points import (
    DLE_POINTS,
    PLAN_FILE,
    layout_of,
    load_dle_points,
    plain_variant,
    plan_document,
    wanted,
)
from planner.check.pairs import build_pair_check, our_point
from planner.check.pairs_markdown import render_pair_check
from planner.specs.published_pairs import load_pairs

TF32_PROFILE = FIXTURES.parent / "tf32-roofline" / "roofline-resnet50-tf32.json"  # real, channels_last, batch 256


def test_the_plan_file_is_what_the_published_rows_need():
    committed = json.loads(PLAN_FILE.read_text(encoding="utf-8"))
    assert committed == plan_document(), "benchmarks/dle_points_plan.json is stale: python -m planner.check.dle_points"


def test_every_row_of_our_own_models_gets_its_layout_batch_and_precision():
    configs = wanted()
    for table in load_pairs():
        for row in table.rows:
            ours = {"amp": "fp16", "tf32": "tf32", "fp32": "tf32"}[row.precision]
            match = [c for c in configs if (c.model, c.precision, c.batch, c.layout)
                     == (table.model, ours, row.batch, row.layout)]
            label = f"{table.id}: {row.gpu} {row.precision}"
            if table.twin == "same" and table.model in {"resnet50", "ssd300", "bert-large-squad", "gnmt",
                                                        "efficientnet-b0", "resnext101-32x4d"}:
                assert len(match) == 1 and label in match[0].rows
            else:  # a proxy stays one whatever we time; a model we have no workload for is not timed
                assert not any(label in c.rows for c in configs)
    # a V100 runs its FP32 row as our tf32 step at its fp32 rate on the counts basis: no profile for that alone
    assert not next(c for c in configs if c.model == "resnet50" and c.batch == 112).profile
    # GNMT's A100 TF32 and V100 FP32 rows are one configuration (tf32, 128): profiled, for the A100
    gnmt = [c for c in configs if c.model == "gnmt" and c.precision == "tf32"]
    assert len(gnmt) == 1 and gnmt[0].profile and len(gnmt[0].rows) == 2
    # the new models' tables are timed too (their DLE rows held out of the model): ResNeXt-101's AMP rows of both GPUs
    # are one configuration (fp16, NHWC, 128), EfficientNet-B0's are two (256 on the A100, 128 on the V100)
    amp = {(c.model, c.batch) for c in configs if c.precision == "fp16" and c.layout == "channels_last"}
    assert {("resnext101-32x4d", 128), ("efficientnet-b0", 256), ("efficientnet-b0", 128)} <= amp


def test_a_variant_names_its_layout():
    assert layout_of("contiguous+no_cudnn_benchmark") == "nchw" and layout_of("channels_last") == "channels_last"
    assert layout_of("default") == "n/a" and plain_variant("contiguous+no_cudnn_benchmark") == "no_cudnn_benchmark"
    assert plain_variant("channels_last") == "default"


@pytest.fixture
def machine(tmp_path):
    """A copy of the frozen H100 folder, to add a dle-points folder (or a profile) to."""
    folder = tmp_path / "h100-80gb"
    shutil.copytree(FROZEN / "h100-80gb", folder)
    return folder


def _overlay(folder, points, profiles=(), environment=None):
    """folder/diagnostics/dle-points with resnet50 points copied from the machine's own, each as
    (precision, batch, variant), and profiles as (path, precision, variant)."""
    out = folder / DLE_POINTS
    out.mkdir(parents=True)
    doc = load_document(folder / "workload-resnet50.json")
    env = load_document(environment or folder / "environment.json")  # another machine's under this machine's id
    save_document(build_document("environment", env.collector.name, env.collector.version, doc.machine, env.payload),
                  out / "environment.json")
    own = {p.precision: p for p in doc.payload.points if p.sweep == "variant" and p.variant == "no_cudnn_benchmark"}
    copied = [replace(own[precision], batch=batch, variant=variant) for precision, batch, variant in points]
    save_document(build_document("workload", doc.collector.name, doc.collector.version, doc.machine,
                                 replace(doc.payload, points=copied, boundaries=[])), out / "workload-resnet50.json")
    for i, (path, precision, variant) in enumerate(profiles):
        r = load_document(path)
        save_document(build_document("roofline", r.collector.name, r.collector.version, r.machine,
                                     replace(r.payload, precision=precision, variant=variant)),
                      out / f"roofline-resnet50-{i}.json")


def _ratio(check, label):
    return next(r for r in check.ratios if r.table == "dle-resnet50" and r.label == label)


NCHW = "contiguous+no_cudnn_benchmark"


def test_rows_timed_in_their_own_layout_are_scored_as_our_model(machine):
    before = build_pair_check(load_machine(machine))
    _overlay(machine, [("tf32", 256, NCHW), ("tf32", 112, NCHW)])
    check = build_pair_check(load_machine(machine))
    assert check.dle_folder == machine / DLE_POINTS
    tf32 = _ratio(check, "A100 80GB SXM tf32 / V100 SXM2 16GB fp32")
    assert tf32.top.dle and tf32.bottom.dle and tf32.twin == "same" and tf32.bottom.batch == 112
    assert tf32.top.ours == "tf32 NCHW, 256*" and tf32.bottom.ours == "fp32 NCHW, 112*"
    # the A100's mixed precision is still the machine's own NHWC fp16 point: DLE's AMP run is NHWC, so the A100's
    # TF32 over AMP ratio is ours on both sides now
    own = _ratio(check, "A100 80GB SXM: tf32 / amp")
    assert own.twin == "same" and not own.bottom.dle and own.bottom.layout == "channels_last"
    # the same step and no profile of either layout (the frozen H100 has no tf32 profile): the same prediction
    assert own.top.throughput_per_s == pytest.approx(_ratio(before, "A100 80GB SXM: tf32 / amp").top.throughput_per_s)
    assert _ratio(before, "A100 80GB SXM tf32 / V100 SXM2 16GB fp32").twin == "proxy"
    assert "marked * were timed" in render_pair_check(check)


def test_a_profile_of_another_layout_never_splits_a_point(machine):
    shutil.copy(TF32_PROFILE, machine / "roofline-resnet50-tf32.json")  # the machine's own: NHWC
    _overlay(machine, [("tf32", 256, NCHW)])
    source = load_machine(machine)
    table = next(t for t in load_pairs() if t.id == "dle-resnet50")
    a100_tf32 = table.row("A100 80GB SXM", "tf32")
    check = build_pair_check(source)
    point, _, profiles, layout, dle = our_point(source, table, a100_tf32, load_dle_points(source)[0])
    assert dle and layout == "nchw" and point.variant == "no_cudnn_benchmark" and profiles == []
    counts = _ratio(check, "A100 80GB SXM: tf32 / amp").top.throughput_per_s
    # the NHWC profile, given to the NCHW point under the NCHW layout, is the one the point is split by
    shutil.rmtree(machine / DLE_POINTS)
    _overlay(machine, [("tf32", 256, NCHW)], [(TF32_PROFILE, "tf32", NCHW)])
    split = _ratio(build_pair_check(load_machine(machine)), "A100 80GB SXM: tf32 / amp").top.throughput_per_s
    shutil.rmtree(machine / DLE_POINTS)
    main = _ratio(build_pair_check(load_machine(machine)), "A100 80GB SXM: tf32 / amp").top.throughput_per_s
    assert split == pytest.approx(main) and counts != pytest.approx(main)


def test_points_measured_on_another_gpu_are_not_used(machine):
    _overlay(machine, [("tf32", 256, NCHW)], environment=FROZEN / "h200" / "environment.json")
    check = build_pair_check(load_machine(machine))
    assert check.dle_folder is None and "not used" in check.dle_unused
    assert not any(r.top.dle or r.bottom.dle for r in check.ratios)
    assert "none timed in DLE's configuration" in render_pair_check(check)


def test_a_proxy_table_stays_on_our_own_points(machine):
    """Points timed for DLE's rows of our own model are not taken by a proxy table that shares a batch with them
    (BERT-large pretraining's V100 FP32 at 32 against our SQuAD step)."""
    _overlay(machine, [("tf32", 256, NCHW), ("tf32", 112, NCHW)])
    table = next(t for t in load_pairs() if t.id == "dle-resnet50")
    proxy = replace(table, id="proxy-resnet50", twin="proxy")
    check = build_pair_check(load_machine(machine), [table, proxy])
    assert any(r.top.dle for r in check.ratios if r.table == table.id)
    assert not any(r.top.dle or r.bottom.dle for r in check.ratios if r.table == proxy.id)
