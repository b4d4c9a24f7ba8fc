"""The instance catalog's host CPU (`host_cpu`): every instance names the CPU its cloud documents, in the
environment collector's words, with a source; a bad entry names its field; the ranking carries it to every
output and says it was not measured."""

from __future__ import annotations

import json

import pytest

from gpuplan_schema.payloads.environment import SERVER_MICROARCHITECTURES
from planner.rank.jobs import parse_job
from planner.rank.ranking import ASSUMPTIONS, Estimate, rank_instances
from planner.render.plan_tables import host_cpu_words
from planner.specs import load_instances
from planner.specs.catalog_checks import CatalogError
from planner.specs.instances import INSTANCES_FILE, read_instances


def test_every_instance_names_a_sourced_host_cpu():
    for spec in load_instances():
        cpu = spec.host_cpu
        assert cpu is not None and cpu.source.startswith("https://"), spec.name
        assert cpu.microarchitecture in (*SERVER_MICROARCHITECTURES, None), spec.name
        assert cpu.microarchitecture or cpu.note, f"{spec.name}: an open platform must say which ones"


def test_what_the_clouds_document_for_a_few_families():
    by = {s.name: s.host_cpu for s in load_instances()}
    assert by["g5.2xlarge"].label == "AMD EPYC 7R32, Rome (Zen 2)"
    assert by["p4d.24xlarge"].microarchitecture == "Cascade Lake"
    assert by["a3-ultragpu-8g"].microarchitecture == "Emerald Rapids"
    assert by["Standard_ND96isr_H100_v5"].label == "Intel, Sapphire Rapids"   # Azure gives no model number
    n1 = by["n1-standard-8 + 1x nvidia-tesla-t4"]
    assert n1.microarchitecture is None and "Skylake" in n1.note and n1.label.endswith("(platform not fixed)")


def _broken(tmp_path, **host_cpu):
    entry = next(e for e in json.loads(INSTANCES_FILE.read_text())["instances"] if e["name"] == "g5.2xlarge")
    path = tmp_path / "instances.json"
    path.write_text(json.dumps({"instances": [dict(entry, host_cpu={**entry["host_cpu"], **host_cpu})]}))
    return path


@pytest.mark.parametrize(("change", "message"), [
    ({"microarchitecture": "Zen 2"}, "instances[0].host_cpu.microarchitecture: must be one of Broadwell-SP"),
    ({"vendor": "ARM"}, "instances[0].host_cpu.vendor: must be one of Intel, AMD"),
    ({"source": "the AWS docs"}, "instances[0].host_cpu.source: must be an https:// address"),
    ({"microarchitecture": None, "note": None}, "instances[0].host_cpu.note: must say which platforms"),
])
def test_a_bad_host_cpu_names_its_field(tmp_path, change, message):
    with pytest.raises(CatalogError) as raised:
        read_instances(_broken(tmp_path, **change))
    assert message in str(raised.value) and "\n" not in str(raised.value)


def _predict(gpu):
    return Estimate(900.0, 256, 512, "fixed for the test")


def test_the_ranking_carries_the_host_cpu_and_says_it_was_not_measured():
    ranked = [r for r in rank_instances(parse_job("resnet50 bf16 samples=1000000"), _predict) if r.status == "ok"]
    by = {r.instance: r for r in ranked}
    assert by["g5.2xlarge"].host_cpu == "AMD EPYC 7R32, Rome (Zen 2)"
    assert by["g5.2xlarge"].to_dict()["host_cpu"] == "AMD EPYC 7R32, Rome (Zen 2)"
    words = host_cpu_words(ranked)
    stars = [r for r in ranked if r.pareto]
    assert stars and all(f"{r.instance} {r.host_cpu}" in words for r in stars)
    assert "none measured here" in words
    assert all(f"{r.instance} " not in words for r in ranked if not r.pareto)
    assert any("host_cpu" in a and "none of them was measured" in a for a in ASSUMPTIONS)


def test_no_star_row_no_host_line():
    assert host_cpu_words([]) == ""
