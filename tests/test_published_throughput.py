"""planner/specs/published_throughput.json: published single-GPU training tables, one stack each."""

from __future__ import annotations

import json
import re

import pytest

from planner.specs import SPECS_DIR, CatalogError, load_gpu_catalog
from planner.specs.published import (
    PRECISIONS,
    PUBLISHED_FILE,
    REFERENCE_GPUS,
    PublishedTable,
    load_published,
    ratios,
    read_published,
)

CATALOG_NAMES = {spec.name for spec in load_gpu_catalog()}
# a line of a file of a GitHub repository at a commit (Lambda's CSVs, Any-Winter-4079's comparison script)
FILE_LINE_AT_COMMIT = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/[\w./-]+#L\d+$")


@pytest.fixture(scope="module")
def tables() -> list[PublishedTable]:
    return load_published()


def test_the_committed_file_is_the_default(tables):
    assert PUBLISHED_FILE == SPECS_DIR / "published_throughput.json"
    assert [t.id for t in tables] == [t.id for t in read_published(PUBLISHED_FILE)]
    assert len({t.id for t in tables}) == len(tables) >= 4


def test_every_table_has_a_reference_gpu_of_its_own_stack(tables):
    for t in tables:
        refs = [r for r in t.rows if r.gpu in REFERENCE_GPUS and r.same_stack]
        assert refs, t.id
        assert len({r.gpu for r in t.rows if r.gpu}) == sum(1 for r in t.rows if r.gpu), t.id


def test_gpu_names_are_catalog_names_and_the_others_say_why(tables):
    for t in tables:
        for r in t.rows:
            if r.gpu is None:
                assert r.note and "catalog" in r.note, (t.id, r.gpu_label)
            else:
                assert r.gpu in CATALOG_NAMES, (t.id, r.gpu)


def test_sources_are_urls_and_rows_cite_a_line_at_a_commit(tables):
    for t in tables:
        assert t.url.startswith("https://"), t.id
        assert t.precision in PRECISIONS and t.task == "training"
        assert t.stack.strip() and t.source.strip() and t.notes.strip()
        for r in t.rows:
            assert FILE_LINE_AT_COMMIT.match(r.cite), r.cite
            assert r.cite.split("#")[0] == t.url, (t.id, r.cite)


def test_numbers_are_positive(tables):
    for t in tables:
        for r in t.rows:
            assert r.throughput_per_s > 0 and (r.batch is None or r.batch >= 1), (t.id, r.gpu_label)


def test_enough_gpus_beside_the_h100_measured_with_one_stack(tables):
    others = {r.gpu for t in tables for r in t.rows if r.gpu and r.same_stack and r.gpu != "H100 SXM"}
    assert len(others) >= 5, others
    assert {"A100 80GB PCIe", "A10", "V100 SXM2 16GB", "H100 PCIe", "H200 SXM"} <= others


def test_transcribed_figures(tables):
    # Spot checks against the published CSV cells (the file's own lines are cited in each row).
    by_id = {t.id: t for t in tables}
    rn50 = by_id["lambda-v1-resnet50-amp"]
    assert rn50.row("H100 SXM").throughput_per_s == 2616
    assert rn50.row("A10").throughput_per_s == 638
    assert rn50.row("A100 80GB SXM").throughput_per_s == 1582
    assert rn50.row("A10").batch == 448 and rn50.row("H100 SXM").batch == 1280
    assert by_id["lambda-ngc2403-resnet50-amp"].row("H200 SXM").throughput_per_s == 3079


def test_ratios_are_target_over_reference_of_the_same_stack(tables):
    rn50 = next(t for t in tables if t.id == "lambda-v1-resnet50-amp")
    got = ratios(rn50, "H100-SXM")  # any catalog alias names the reference
    assert got["A10"] == pytest.approx(638 / 2616)
    assert got["V100 SXM2 16GB"] == pytest.approx(833 / 2616)
    assert "H100 SXM" not in got and None not in got
    # A100 80GB SXM, RTX 4090 and 3090 ran in another container build: only when asked for.
    assert "A100 80GB SXM" not in got and rn50.row("A100 80GB SXM").stack
    assert ratios(rn50, include_other_stacks=True)["A100 80GB SXM"] == pytest.approx(1582 / 2616)
    with pytest.raises(KeyError, match="no row of 'H200 SXM'"):
        ratios(rn50, "H200 SXM")
    h200 = next(t for t in tables if t.id == "lambda-ngc2403-resnet50-amp")
    assert ratios(h200, "H200 SXM")["H100 SXM"] == pytest.approx(2791 / 3079)


def _write(tmp_path, change):
    doc = json.loads(PUBLISHED_FILE.read_text(encoding="utf-8"))
    change(doc)
    path = tmp_path / "published_throughput.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _set(path, value):
    def change(doc):
        *keys, last = path
        node = doc
        for k in keys:
            node = node[k]
        node[last] = value
    return change


@pytest.mark.parametrize("change, field, problem", [
    (_set(("tables", 3, "rows", 1, "throughput_per_s"), -5), "tables[3].rows[1].throughput_per_s",
     "must be a number > 0, not -5"),
    (_set(("tables", 0, "rows", 2, "throughput_per_s"), "1527"), "tables[0].rows[2].throughput_per_s",
     "must be a number > 0, not '1527'"),
    (_set(("tables", 0, "rows", 0, "gpu"), "H100-SXM"), "tables[0].rows[0].gpu",
     "the catalog spells it 'H100 SXM'"),
    (_set(("tables", 1, "rows", 3, "gpu"), "Z9000"), "tables[1].rows[3].gpu",
     "must be a GPU name of planner/specs/gpus.json or null, not 'Z9000'"),
    (_set(("tables", 2, "url"), "github.com/lambdal"), "tables[2].url", "must be an https:// address"),
    (_set(("tables", 2, "precision"), "int8"), "tables[2].precision", "must be one of amp, tf32, fp32"),
    (_set(("tables", 0, "rows", 1, "batch"), 0), "tables[0].rows[1].batch", "must be a whole number ≥ 1"),
    (_set(("tables", 0, "rows", 4, "gpu"), "H100 PCIe"), "tables[0].rows[4].gpu",
     "'H100 PCIe' has an earlier row in this table"),
    (_set(("tables", 0, "rows", 0, "gpu"), None), "tables[0].rows[0].note", "must say why"),
    (_set(("tables", 0, "rows", 0, "stack"), "another container"), "tables[0].rows",
     "must include a row of H100 SXM or H200 SXM"),
    (_set(("tables", 0, "rows", 0, "extra"), 1), "tables[0].rows[0]", "unknown extra"),
    (_set(("tables", 5, "retrieved"), "23/11/2026"), "tables[5].retrieved", "must be a date"),
    (_set(("tables", 1, "id"), "lambda-v1-resnet50-amp"), "tables[1].id", "names an earlier table too"),
    (_set(("kind",), "gpus"), "kind", "must be 'published_throughput'"),
    (_set(("tables", 0, "compiled"), "yes"), "tables[0].compiled", "must be true or false, not 'yes'"),
])
def test_a_bad_file_gives_one_line_naming_file_and_field(tmp_path, change, field, problem):
    path = _write(tmp_path, change)
    with pytest.raises(ValueError) as caught:
        load_published(path)
    message = str(caught.value)
    assert isinstance(caught.value, CatalogError)
    assert "\n" not in message
    assert message.startswith(f"{path}: {field}: "), message
    assert problem in message


def test_a_file_that_is_not_json_says_where(tmp_path):
    path = tmp_path / "published_throughput.json"
    path.write_text('{"schema_version": 1,', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"published_throughput.json: not valid JSON .*line 1"):
        load_published(path)


def test_a_table_ran_eager_unless_it_says_compiled(tables, tmp_path):
    """`compiled` may be left out (false); the tables of Any-Winter-4079's compiled script say true, Lambda's none."""
    assert {t.id for t in tables if t.compiled} == {"anywinter-gpt2-124m-bf16-bs32", "anywinter-gpt2-124m-bf16-bs64"}
    assert all(not t.compiled for t in tables if t.url.startswith("https://github.com/lambdal/"))
    path = _write(tmp_path, _set(("tables", 0, "compiled"), True))
    assert load_published(path)[0].compiled
