"""The one way to and from disk: atomic writes, version checks, migrations, field-naming errors."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import FIXTURES

from gpuplan_schema import schema
from gpuplan_schema.payloads import CeilingsPayload
from gpuplan_schema.plausible import MAX_SECONDS
from gpuplan_schema.schema import DocumentError, document_to_dict, load_document, parse_document, save_document
from gpuplan_schema.stats import Stat, summarize

FIXTURE_FILES = sorted(FIXTURES.glob("*/*.json"))
H100_CEILINGS = FIXTURES / "h100-80gb" / "ceilings.json"


def raw_fixture(path: Path = H100_CEILINGS) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write_raw(tmp_path: Path, raw: dict, name: str = "ceilings.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


# ── atomic writes ───────────────────────────────────────────────────────────────────────────

def test_save_leaves_only_the_target_file(tmp_path):
    doc = load_document(H100_CEILINGS)
    target = save_document(doc, tmp_path / "m" / "ceilings.json")
    assert [p.name for p in target.parent.iterdir()] == ["ceilings.json"]
    assert load_document(target) == doc


def test_failure_mid_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "ceilings.json"
    save_document(load_document(H100_CEILINGS), target)
    before = target.read_bytes()

    def fail_after_writing(fd: int) -> None:  # the text is in the temp file; the rename never happens
        raise OSError("disk full")

    monkeypatch.setattr(schema.os, "fsync", fail_after_writing)
    with pytest.raises(OSError, match="disk full"):
        schema.write_text_atomic(target, "{ half a document")
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ceilings.json"]


def test_saving_nan_is_refused(tmp_path):
    doc = load_document(H100_CEILINGS)
    broken = schema.Document(doc.kind, doc.collector, doc.machine, doc.created,
                             {"elapsed_s": float("nan")})
    with pytest.raises(ValueError):
        save_document(broken, tmp_path / "x.json")
    assert not list(tmp_path.iterdir())


# ── versions and migrations ─────────────────────────────────────────────────────────────────

def test_newer_schema_version_is_refused_naming_file_and_field(tmp_path):
    raw = raw_fixture()
    raw["schema_version"] = schema.SCHEMA_VERSION + 1
    path = write_raw(tmp_path, raw)
    with pytest.raises(DocumentError) as info:
        load_document(path)
    assert info.value.field == "schema_version"
    assert str(path) in str(info.value) and "schema_version" in str(info.value)
    assert "newer" in info.value.problem


def test_older_version_is_migrated_through_the_registered_step(tmp_path, monkeypatch):
    # Pretend the current schema is one newer and that the step from the fixture's version
    # renamed `device_name` (it was `gpu_name`) and moved elapsed time from ms to s.
    old = schema.SCHEMA_VERSION
    raw = raw_fixture()
    expected = load_document(H100_CEILINGS).payload
    payload = raw["payload"]
    payload["gpu_name"] = payload.pop("device_name")
    payload["elapsed_ms"] = payload.pop("elapsed_s") * 1000
    path = write_raw(tmp_path, raw)
    calls = []

    def step(doc: dict) -> dict:
        calls.append(doc["schema_version"])
        p = dict(doc["payload"])
        p["device_name"] = p.pop("gpu_name")
        p["elapsed_s"] = p.pop("elapsed_ms") / 1000
        return {**doc, "payload": p}

    monkeypatch.setattr(schema, "SCHEMA_VERSION", old + 1)
    monkeypatch.setitem(schema.MIGRATIONS, old, step)
    doc = load_document(path)
    assert calls == [old]
    assert doc.schema_version == old + 1
    assert doc.payload.device_name == expected.device_name == "NVIDIA H100 80GB HBM3"
    assert math.isclose(doc.payload.elapsed_s, expected.elapsed_s)


@pytest.mark.parametrize("version", [0, -1, "1", 1.5, True, None])
def test_bad_schema_version_names_the_field(tmp_path, version):
    raw = raw_fixture()
    raw["schema_version"] = version
    with pytest.raises(DocumentError) as info:
        load_document(write_raw(tmp_path, raw))
    assert info.value.field == "schema_version"


# ── field-naming errors ─────────────────────────────────────────────────────────────────────

def test_missing_envelope_field_is_named(tmp_path):
    raw = raw_fixture()
    del raw["machine"]
    path = write_raw(tmp_path, raw)
    with pytest.raises(DocumentError) as info:
        load_document(path)
    assert (info.value.field, info.value.problem) == ("machine", "missing")
    assert str(info.value).startswith(str(path))


def test_missing_nested_field_is_named_by_its_path(tmp_path):
    raw = raw_fixture()
    del raw["payload"]["matmul"][0]["flops_per_s"]["median"]
    with pytest.raises(DocumentError) as info:
        load_document(write_raw(tmp_path, raw))
    assert info.value.field == "payload.matmul[0].flops_per_s.median"
    assert info.value.problem == "missing"


def test_mistyped_field_is_named_by_its_path(tmp_path):
    raw = raw_fixture()
    raw["payload"]["matmul"][0]["flops_per_s"]["median"] = "51 TFLOP/s"
    with pytest.raises(DocumentError) as info:
        load_document(write_raw(tmp_path, raw))
    assert info.value.field == "payload.matmul[0].flops_per_s.median"
    assert "expected a number, got str" in str(info.value)


def test_nan_in_the_file_is_rejected(tmp_path):
    text = H100_CEILINGS.read_text(encoding="utf-8").replace('"elapsed_s": 10.474243754', '"elapsed_s": NaN')
    assert "NaN" in text
    path = tmp_path / "ceilings.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DocumentError, match="NaN") as info:
        load_document(path)
    assert str(path) in str(info.value)


def test_nan_in_a_parsed_payload_is_rejected():
    raw = raw_fixture()
    raw["payload"]["launch_latency_s"]["median"] = float("nan")
    with pytest.raises(DocumentError) as info:
        parse_document(raw, "doc.json")
    assert info.value.field == "payload.launch_latency_s.median"


def test_truncated_json_is_one_clear_error(tmp_path):
    path = tmp_path / "ceilings.json"
    path.write_text(H100_CEILINGS.read_text(encoding="utf-8")[:500], encoding="utf-8")
    with pytest.raises(DocumentError, match="not valid JSON"):
        load_document(path)


# ── round trips ─────────────────────────────────────────────────────────────────────────────

def _without_added_nones(saved, original):
    """`saved` less the optional fields that saving fills in as null where the original omitted them."""
    if isinstance(saved, dict) and isinstance(original, dict):
        return {k: _without_added_nones(v, original.get(k)) for k, v in saved.items()
                if k in original or v is not None}
    if isinstance(saved, list) and isinstance(original, list):
        return [_without_added_nones(s, o) for s, o in zip(saved, original, strict=True)]
    return saved


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_fixtures_round_trip(tmp_path, path):
    doc = load_document(path)
    again = load_document(save_document(doc, tmp_path / path.name))
    assert again == doc
    original = json.loads(path.read_text(encoding="utf-8"))
    assert _without_added_nones(document_to_dict(doc), original) == original


def test_fixture_payloads_are_typed():
    doc = load_document(H100_CEILINGS)
    assert isinstance(doc.payload, CeilingsPayload)
    assert isinstance(doc.payload.matmul[0].flops_per_s, Stat)


# launch_latency_s is a duration: the loader takes up to MAX_SECONDS (gpuplan_schema/plausible.py)
@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=MAX_SECONDS, allow_nan=False), min_size=1, max_size=30))
def test_any_summary_survives_the_disk(samples):
    stat = summarize(samples)
    raw = raw_fixture()
    raw["payload"]["launch_latency_s"] = dataclasses.asdict(stat)
    doc = parse_document(json.loads(json.dumps(raw, allow_nan=False)))
    assert doc.payload.launch_latency_s == stat


def test_a_points_allocator_is_read_from_its_variant_and_an_unknown_part_is_refused():
    from gpuplan_schema.payloads.workloads import WorkloadPoint, variant_settings
    probe = WorkloadPoint("probe", "bf16", 64, "no_cudnn_benchmark+expandable_segments", "oom")
    assert probe.allocator == "expandable_segments"
    assert WorkloadPoint("probe", "bf16", 64, "no_cudnn_benchmark", "oom").allocator == "default"
    assert variant_settings("compile+channels_last").layout == "channels_last"
    with pytest.raises(ValueError, match="fused_adam"):
        variant_settings("compile+fused_adam")
