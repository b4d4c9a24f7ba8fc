"""timm's RTX 3090 training tables (planner/specs/published_throughput.json `model_tables`, issues 39 and 41): the rows
are our models (their parameter counts built on the meta device equal the published ones), cite their CSV lines at
one commit, and a bad table stops with the field named; the scoring (planner/check/model_tables.py) runs on the
committed collections and on a frozen trace-only plan for the RTX 3090
(tests/fixtures/diagnostics/timm-rtx3090-plan.json, the plan of the models' CPU traces that
benchmarks/timm_rtx3090.py's docstring makes, cut to the fields it reads)."""

from __future__ import annotations

import json
import re

import pytest
from example_workloads import META
from paths import REPO

from collectors.workloads import BUILTIN, load_workload
from gpuplan_schema.results import load_results_root
from planner.check.bands import band_table_for
from planner.check.model_tables import OUR_LAYOUT, choose_point, measured_checks, render, scored_rows, trace_checks
from planner.specs import CatalogError
from planner.specs.published_models import load_model_tables, read_model_tables, reference_row

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them

CSV_LINE = re.compile(r"^https://github\.com/huggingface/pytorch-image-models/blob/[0-9a-f]{40}/results/"
                      r"benchmark-train-amp-(nhwc|nchw)-pt112-cu113-rtx3090\.csv#L\d+$")
SPECS = {"vit-b16": "examples/vit_tiny.py:build_b16", "vit-tiny": "examples/vit_tiny.py:build",
         "resnet18": "examples/resnet18.py:build", "efficientnet-b0": "examples/efficientnet_b0.py:build",
         "mobilenet-v3": "examples/mobilenet_v3.py:build", "convnext-tiny": "examples/convnext_tiny.py:build",
         "swin-tiny": "examples/swin_tiny.py:build", "resnext101-32x4d": "examples/resnext101.py:build"}
FROZEN_PLAN = REPO / "tests/fixtures/diagnostics/timm-rtx3090-plan.json"


@pytest.fixture(scope="module")
def tables():
    return load_model_tables()


def test_rows_cite_their_csv_line_at_one_commit_and_the_layouts_pair_up(tables):
    assert {t.layout for t in tables} == {"channels_last", "nchw"}
    for t in tables:
        assert t.gpu == "RTX 3090" and t.precision == "amp" and t.task == "training"
        for r in t.rows:
            assert CSV_LINE.match(r.cite) and r.cite.split("#")[0] == t.url, r.cite
            assert ("nhwc" if t.layout == "channels_last" else "nchw") in r.cite
            assert r.image_size == 224 and r.batch in (512, 384, 256, 192)  # decay_batch_step's ladder
        assert reference_row(t, tables).workload == "resnet50"
        assert reference_row(t, tables).throughput_per_s == 1218.01   # the NHWC file's ResNet-50, line 179
    assert {r.workload for t in tables for r in t.rows} == set(OUR_LAYOUT)


@pytest.mark.parametrize("workload", sorted(OUR_LAYOUT))
def test_each_row_is_our_model_by_its_parameter_count(tables, workload):
    with META:
        w = load_workload(workload if workload in BUILTIN else SPECS[workload])
    count = sum(p.numel() for p in w.model.parameters())
    for t in tables:
        assert round(count / 1e6, 2) == t.row(workload).param_count_m, (t.id, count)


def test_a_table_without_its_reference_row_stops_naming_the_field(tmp_path):
    raw = json.loads((REPO / "planner/specs/published_throughput.json").read_text())
    raw["model_tables"][1]["reference_table"] = None   # the NCHW table's ratios then need its own ResNet-50 row
    raw["model_tables"][1]["rows"] = [r for r in raw["model_tables"][1]["rows"] if r["workload"] != "resnet50"]
    path = tmp_path / "published.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(CatalogError, match=r"model_tables\[1\]\.reference_model"):
        read_model_tables(path)
    raw["model_tables"][0]["layout"] = "nhwc"
    path.write_text(json.dumps(raw))
    with pytest.raises(CatalogError, match=r"model_tables\[0\]\.layout: must be one of channels_last, nchw"):
        read_model_tables(path)


def test_each_model_is_scored_once_in_its_layout(tables):
    scored = scored_rows(tables)
    assert sorted(r.workload for _, r in scored) == sorted(OUR_LAYOUT)
    assert all(t.layout == OUR_LAYOUT[r.workload] for t, r in scored)


def test_the_point_is_fp16_at_the_published_batch_else_the_nearest_bf16():
    assert choose_point({("fp16", 512), ("bf16", 512)}, 512) == ("fp16", 512)
    assert choose_point({("fp16", 256), ("bf16", 128), ("bf16", 256)}, 192) == ("bf16", 256)
    assert choose_point({("fp16", 256)}, 512) is None


def test_measured_scoring_on_the_committed_collections(tables):
    results = REPO / "results"
    checks = measured_checks(band_table_for(load_results_root(results)), tables, results)
    h200 = {c.workload: c for c in checks if c.source == "H200 SXM"}
    assert set(h200) == set(OUR_LAYOUT)   # every model has an H200 collection
    ref = h200["resnet50"]
    assert ref.ratio_error is None and ref.setting == "fp16, 512"
    for c in h200.values():
        assert c.error == pytest.approx(c.predicted / c.published - 1) and c.half_width > 0
        if c.workload != "resnet50":
            assert c.published_ratio == pytest.approx(c.published / ref.published)
            assert c.predicted_ratio == pytest.approx(c.predicted / ref.predicted)
    assert "resnet50" in render(checks, "t") and "reference" in render(checks, "t")


def test_trace_scoring_on_the_frozen_plan(tables):
    plan = json.loads(FROZEN_PLAN.read_text())
    checks = trace_checks(plan, tables)
    assert {c.workload for c in checks} == set(OUR_LAYOUT)
    target = next(t for t in plan["targets"] if t["gpu"] == "RTX 3090")
    for c in checks:
        precision, batch = c.setting.split(", ")
        p = next(p for p in target["predictions"] if p["workload"] == c.workload and p["precision"] == precision
                 and p["batch"] == int(batch) and p["variant"] == "default")
        assert c.predicted == p["throughput_per_s"]
        assert c.inside == (p["throughput_low"] <= c.published <= p["throughput_high"])
