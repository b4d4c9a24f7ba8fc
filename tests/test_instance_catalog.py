"""planner/specs/instances.json: every instance names a catalog GPU, has a dated, sourced, sane price."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from datetime import date

import pytest

from planner.specs import (
    INTERCONNECTS,
    PROVIDERS,
    SPECS_DIR,
    CatalogError,
    InstanceSpec,
    load_instances,
    match_gpu,
    match_instance,
    read_instances,
)

INSTANCES_JSON = SPECS_DIR / "instances.json"
# The shapes issue 6 asks the catalog to cover (single- and multi-GPU, every GPU generation).
REQUIRED = (
    "p5.48xlarge", "p4d.24xlarge", "p4de.24xlarge", "g5.xlarge", "g5.12xlarge", "g6.xlarge", "g6e.xlarge",
    "p3.2xlarge", "g4dn.xlarge", "a3-highgpu-8g", "a3-ultragpu-8g", "a2-highgpu-1g", "a2-ultragpu-1g",
    "g2-standard-4", "ND96isr_H100_v5", "ND96isr_H200_v5", "ND96asr_v4", "NC24ads_A100_v4", "NC40ads_H100_v5",
    "NV36ads_A10_v5", "NC4as_T4_v3",
)


def test_entries_have_exactly_the_instancespec_fields():
    names = [f.name for f in dataclasses.fields(InstanceSpec)]
    for entry in json.loads(INSTANCES_JSON.read_text(encoding="utf-8"))["instances"]:
        assert list(entry) == names, entry["name"]


def test_covers_three_clouds_single_and_multi_gpu():
    instances = load_instances()
    assert len(instances) >= 30
    assert set(Counter(s.provider for s in instances)) == set(PROVIDERS)
    assert sum(s.gpu_count == 1 for s in instances) >= 15 and sum(s.gpu_count > 1 for s in instances) >= 15
    for name in REQUIRED:
        assert match_instance(name) is not None, name


def test_every_gpu_is_a_catalog_gpu_by_its_catalog_name():
    for s in load_instances():
        assert match_gpu(s.gpu) is not None and match_gpu(s.gpu).name == s.gpu, s.name


def test_prices_are_positive_dated_and_sourced():
    today = date.today().isoformat()
    for s in load_instances():
        assert s.price_usd_per_hour > 0, s.name
        # Per GPU-hour between a T4 slice and a B200: a misplaced decimal point falls outside.
        assert 0.2 <= s.price_usd_per_gpu_hour <= 20, s.name
        assert s.price_date <= today and s.price_date >= "2025", s.name
        assert s.source_url.startswith("https://") and s.spec_source, s.name


def test_prices_read_from_no_price_list_say_so():
    """A price whose source_url is only a cloud's pricing page (where to check it) was not verified there."""
    for s in load_instances():
        if s.source_url.startswith(("https://azure.microsoft.com", "https://aws.amazon.com", "https://cloud.google.com")):
            assert s.price_note and "unverified" in s.price_note, s.name


def test_hosts_are_sane():
    for s in load_instances():
        assert s.vcpus >= 4 and s.memory_bytes >= 15 * 2**30, s.name
        assert s.memory_bytes / s.gpu_count >= 8 * 2**30, s.name  # host RAM per GPU
        assert (s.gpu_interconnect is None) == (s.gpu_count == 1), s.name
        assert s.gpu_interconnect is None or s.gpu_interconnect in INTERCONNECTS, s.name


def test_interconnect_matches_the_gpu():
    for s in load_instances():
        if s.gpu_interconnect == "nvlink":
            assert s.gpu_spec.nvlink_generation is not None, s.name   # SXM parts only
        if s.gpu_spec.peer_bytes_per_s is None and s.gpu_count > 1:
            assert s.gpu_interconnect == "pcie", s.name


def test_known_shapes():
    p5 = match_instance("p5.48xlarge")
    assert (p5.gpu, p5.gpu_count, p5.vcpus, p5.memory_bytes) == ("H100 SXM", 8, 192, 2048 * 2**30)
    assert p5.gpu_memory_bytes == 8 * 80e9 and p5.price_usd_per_gpu_hour == pytest.approx(6.88)
    assert match_instance("ND96isr_H200_v5").gpu == "H200 SXM"
    assert match_instance("Standard_NC40ads_H100_v5").gpu == "H100 NVL"
    assert match_instance("a3-ultragpu-8g").gpu_count == 8


@pytest.mark.parametrize("name", ["p5.48xlarge", "P5.48XLARGE", "aws:p5.48xlarge", "p5-48xlarge"])
def test_match_instance_forgives_case_punctuation_and_a_provider_prefix(name):
    assert match_instance(name).name == "p5.48xlarge"


def test_match_instance_refuses_what_is_not_there():
    assert match_instance("p9.96xlarge") is None
    assert match_instance("gcp:p5.48xlarge") is None  # right name, wrong cloud
    assert match_instance("Standard_ND96isr_H100_v5").name == match_instance("nd96isr_h100_v5").name


def test_names_are_unique():
    counts = Counter(s.name.lower() for s in load_instances())
    assert [n for n, c in counts.items() if c > 1] == []


def test_the_shipped_catalog_reads_clean():
    assert read_instances(INSTANCES_JSON) == load_instances()


# ── validation: a broken catalog names the file and the field ──────────────────────────────

def _broken(tmp_path, change):
    raw = json.loads(INSTANCES_JSON.read_text(encoding="utf-8"))
    change(raw["instances"])
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def _set(index, **values):
    return lambda entries: entries[index].update(values)


@pytest.mark.parametrize(("change", "field", "problem"), [
    (_set(0, gpu="T5"), "instances[0].gpu", "'T5' is not in the GPU catalog"),
    (_set(0, gpu="Tesla T4"), "instances[0].gpu", "use the catalog's name 'T4'"),
    (_set(0, gpu_count=0), "instances[0].gpu_count", "whole number ≥ 1"),
    (_set(0, gpu_count="8x"), "instances[0].gpu_count", "whole number ≥ 1, not '8x'"),
    (_set(0, price_usd_per_hour=0), "instances[0].price_usd_per_hour", "number > 0"),
    (_set(0, price_date="19/01/2026"), "instances[0].price_date", "YYYY-MM-DD"),
    (_set(0, source_url="aws pricing page"), "instances[0].source_url", "https://"),
    (_set(0, provider="oracle"), "instances[0].provider", "one of aws, gcp, azure"),
    (_set(0, gpu_interconnect="pcie"), "instances[0].gpu_interconnect", "null for a single-GPU instance"),
    (_set(2, gpu_interconnect=None), "instances[2].gpu_interconnect", "one of nvlink"),
    (lambda e: e[0].pop("region"), "instances[0]", "missing region"),
    (lambda e: e.append(dict(e[0])), "instances[0].name", "'g4dn.xlarge' is listed twice"),
])
def test_a_broken_instance_catalog_names_file_and_field(tmp_path, change, field, problem):
    path = _broken(tmp_path, change)
    with pytest.raises(CatalogError) as caught:
        read_instances(path)
    assert str(caught.value).startswith(f"{path}: {field}: ")
    assert problem in str(caught.value)


def test_a_catalog_that_is_not_json_says_where(tmp_path):
    path = tmp_path / "instances.json"
    path.write_text('{"instances": [', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"instances.json: not valid JSON .*line 1"):
        read_instances(path)
