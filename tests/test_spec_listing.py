"""`gpuplan specs [--gpus|--instances] [--json]`: the catalogs as tables or JSON; a broken catalog is one line."""

from __future__ import annotations

import json

from planner import specs as specs_package
from planner.cli import main
from planner.specs import load_gpu_catalog, load_instances


def test_instances_table(capsys):
    assert main(["specs", "--instances"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["instance", "cloud", "region", "GPUs"]
    p5 = " ".join(line for line in lines if line.startswith("p5.48xlarge "))  # its rows of each column group
    assert "8× H100 SXM" in p5 and "55.040" in p5 and "6.880" in p5 and "2026-01-19" in p5
    assert max(map(len, lines)) <= 100   # a pipe's width: every table fits it, split into column groups
    # Every price with a caveat has its note printed under the table.
    noted = [s for s in load_instances() if s.price_note]
    assert all(f"{s.name}: {s.price_note}" in " ".join(out.split()) for s in noted)
    assert "yes" in " ".join(line for line in lines if line.startswith("Standard_ND96isr_H200_v5 "))


def test_no_flag_lists_both_catalogs(capsys):
    assert main(["specs"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GPU ") and "\ninstance " in out
    assert all(f"\n{g.name} " in out for g in load_gpu_catalog())
    assert all(f"\n{s.name} " in out for s in load_instances())


def test_json_has_every_field_and_source(capsys):
    assert main(["specs", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["gpus"]) == len(load_gpu_catalog()) and len(doc["instances"]) == len(load_instances())
    t4 = next(g for g in doc["gpus"] if g["name"] == "T4")
    assert t4["flops_per_s"] == {"fp32": 8.1e12, "tf32": None, "fp16": 65e12, "bf16": None, "fp8": None}
    assert t4["supports_bf16"] is False and t4["source"] == "NVIDIA T4 datasheet"
    p5 = next(i for i in doc["instances"] if i["name"] == "p5.48xlarge")
    assert p5["memory_bytes"] == 2048 * 2**30 and p5["source_url"].startswith("https://github.com/aws/")


def test_json_of_one_catalog(capsys):
    assert main(["specs", "--gpus", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"gpus"}
    assert main(["specs", "--instances", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"instances"}


def test_a_broken_catalog_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    broken = tmp_path / "gpus.json"
    raw = json.loads(specs_package.GPUS_FILE.read_text(encoding="utf-8"))
    raw["gpus"][0]["memory_bytes"] = "16 GB"
    broken.write_text(json.dumps(raw), encoding="utf-8")
    load_gpu_catalog.cache_clear()
    monkeypatch.setattr("planner.specs.gpus.GPUS_FILE", broken)
    try:
        assert main(["specs", "--gpus"]) == 2
    finally:
        load_gpu_catalog.cache_clear()
    err = capsys.readouterr().err
    assert err == f"gpuplan: error: {broken}: gpus[0].memory_bytes: must be a whole number ≥ 1, not '16 GB'\n"
