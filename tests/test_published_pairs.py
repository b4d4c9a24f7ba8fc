"""NVIDIA DeepLearningExamples' A100 and V100 tables (planner/specs/published_pairs.json) and their check by ratios
between the table's own rows (planner/check/pairs.py), on the frozen H100 collection."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
from paths import FROZEN

from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import build_document, load_document, save_document
from planner.check.pairs import AMP_PRECISION, build_pair_check
from planner.specs import CatalogError
from planner.specs.published_pairs import PAIRS_FILE, load_pairs, read_pairs


def test_every_committed_row_cites_its_line_at_the_tables_commit():
    tables = load_pairs()
    assert {t.model for t in tables} >= {"resnet50", "ssd300", "bert-large-squad", "transformer-xl-base", "gnmt"}
    for t in tables:
        assert len(t.gpus) == 2 and {r.precision for r in t.rows} == {"amp", "tf32", "fp32"}
        for r in t.rows:
            assert t.commit in r.cite and "#L" in r.cite


def _write(tmp_path, mutate) -> str:
    raw = json.loads(PAIRS_FILE.read_text())
    mutate(raw)
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(raw))
    return str(path)


@pytest.mark.parametrize(("mutate", "field", "words"), [
    (lambda raw: raw["tables"][0]["rows"][1].update(precision="fp8"), "tables[0].rows[1].precision", "one of"),
    (lambda raw: raw["tables"][0]["rows"][0].update(gpu="A100"), "tables[0].rows[0].gpu", "gpus.json"),
    (lambda raw: raw["tables"][0]["rows"][0].update(cite="https://example.com/x#L1"), "tables[0].rows[0].cite",
     "commit"),
    (lambda raw: raw["tables"][1]["rows"].append(dict(raw["tables"][1]["rows"][0])), "tables[1].rows[4]",
     "earlier row"),
    (lambda raw: raw["tables"][2].update(twin="maybe"), "tables[2].twin", "one of"),
])
def test_a_bad_field_names_the_file_and_the_field(tmp_path, mutate, field, words):
    path = _write(tmp_path, mutate)
    with pytest.raises(CatalogError) as caught:
        read_pairs(path)
    assert f"{path}: {field}:" in str(caught.value) and words in str(caught.value)


def test_resnet50_is_checked_by_ratios_of_one_precision_on_both_gpus(h100):
    check = build_pair_check(h100)
    rows = {r.label: r for r in check.ratios if r.table == "dle-resnet50"}
    amp = rows["A100 80GB SXM amp / V100 SXM2 16GB amp"]
    # DLE's mixed precision is fp16 on both GPUs: one measured point (fp16) on both sides of the ratio, so the H100's
    # own bf16-against-fp16 difference does not enter an A100 / V100 ratio
    assert amp.top.precision == amp.bottom.precision == AMP_PRECISION
    assert amp.published == pytest.approx(2470 / 1200)
    assert amp.error == pytest.approx(amp.predicted / amp.published - 1)
    assert amp.twin == "same"  # both AMP runs are NHWC, as our resnet50
    # the V100 has no TF32: its FP32 row runs our tf32 step at its fp32 rate
    fp32 = rows["V100 SXM2 16GB: fp32 / amp"]
    assert fp32.top.precision == "fp32" and fp32.published == pytest.approx(367 / 1200)
    # DLE's TF32 and FP32 runs are NCHW where our resnet50 is channels_last: compared apart, as a proxy
    assert fp32.twin == "proxy" and rows["A100 80GB SXM tf32 / V100 SXM2 16GB fp32"].twin == "proxy"


def test_a_table_of_another_model_is_listed_not_scored(h100):
    check = build_pair_check(h100)
    assert not any(r.table == "dle-dlrm-small" for r in check.ratios)
    assert any(line.startswith("dle-dlrm-small:") for line in check.listed)


def test_a_machine_without_fp16_takes_mixed_precision_from_its_bf16_point_on_both_gpus(tmp_path):
    # a new model's partial collection (its sweep is bf16 only): the A100 / V100 mixed-precision ratio is still one
    # measured step on both sides, the V100 running it as fp16; no TF32 or FP32 row is scored without a tf32 point
    folder = tmp_path / "h100-80gb"
    shutil.copytree(FROZEN / "h100-80gb", folder)
    path = folder / "workload-resnet50.json"
    doc = load_document(path)
    bf16 = [p for p in doc.payload.points if p.precision == "bf16"]
    save_document(build_document("workload", doc.collector.name, doc.collector.version, doc.machine,
                                 replace(doc.payload, points=bf16)), path)
    rows = [r for r in build_pair_check(load_machine(folder)).ratios if r.table == "dle-resnet50"]
    assert [r.kind for r in rows] == ["amp"]
    amp = rows[0]
    assert (amp.top.precision, amp.bottom.precision) == ("bf16", "fp16") and amp.top.batch == amp.bottom.batch
