"""benchmarks/precision_roofline.py: a roofline at another precision than the collector's, at given batches, on the
CPU at the workloads' tiny sizes (fp32, the one precision a CPU runs); its documents load as the contract says."""

from __future__ import annotations

import json

from paths import REPO, load_script

from gpuplan_schema.payloads import RooflinePayload
from gpuplan_schema.schema import load_document

SCRIPT = REPO / "benchmarks" / "precision_roofline.py"


def _module():
    return load_script(SCRIPT)


def test_each_batch_belongs_to_the_workload_before_it():
    plan = _module().plan_batches(["--precision", "tf32", "--workload", "resnet50", "--batch", "256", "--batch", "64",
                                   "--workload", "x.py:build", "--workload", "gpt-small", "--batch", "8"])
    assert plan == [("resnet50", [256, 64]), ("gpt-small", [8])]  # a workload without a batch is not profiled


def test_a_cpu_run_writes_roofline_documents_of_the_contract(tmp_path):
    out = tmp_path / "precision_roofline.json"
    code = _module().main(["--machine-dir", str(REPO / "tests" / "fixtures" / "frozen" / "vm-cpu"),
                           "--precision", "fp32", "--workload", "mlp-stgan", "--batch", "2", "--batch", "4",
                           "--out", str(out)])
    assert code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["precision"] == "fp32" and len(data["documents"]) == 1
    path = tmp_path / "roofline-mlp-stgan-fp32.json"
    path.write_text(json.dumps(data["documents"][0]), encoding="utf-8")
    payload = load_document(path).payload
    assert isinstance(payload, RooflinePayload)
    assert payload.precision == "fp32" and payload.batch == 2 and [b.batch for b in payload.profiled()] == [2, 4]
    assert payload.scale == "tiny" and all(b.status == "ok" and b.ops for b in payload.profiled())


def test_a_precision_the_device_does_not_run_is_one_line_and_exit_2(capsys):
    code = _module().main(["--machine-dir", str(REPO / "tests" / "fixtures" / "frozen" / "vm-cpu"),
                           "--precision", "tf32", "--workload", "mlp-stgan", "--batch", "2"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not run tf32" in err[0]


def test_a_tf32_profile_beside_the_bf16_one_is_a_section_of_its_own_and_gives_no_second_advice(tmp_path):
    """A machine with resnet50's bf16 profile (the collector's) and its tf32 one (this benchmark's): the report names
    the tf32 one apart and after it, and the padding advice reads the half-precision profile only."""
    import shutil

    from gpuplan_schema.results import load_machine
    from planner.model.split import machine_rooflines
    from planner.plan.alignment import recommend_alignment
    from planner.report.roofline import build_op_roofline_sections

    folder = tmp_path / "h100-80gb"
    shutil.copytree(REPO / "tests" / "fixtures" / "frozen" / "h100-80gb", folder)
    shutil.copy(REPO / "tests" / "fixtures" / "tf32-roofline" / "roofline-resnet50-tf32.json", folder)
    machine = load_machine(folder)
    sections = build_op_roofline_sections(machine)
    names = [s.name for s in sections]
    assert names.index("resnet50 (tf32)") == names.index("resnet50") + 1
    anchors = {s.anchor for s in sections}
    assert len(anchors) == len(sections) and "roofline-resnet50-tf32" in anchors
    advice = recommend_alignment(machine_rooflines(machine))
    assert len(advice) == len({a.workload for a in advice})  # one per workload, whatever profiles it has


def test_the_collector_profiles_tf32_at_the_batches_the_workloads_document_timed_it(tmp_path):
    """Roofline collector 4: tf32 beside the main precision where the workloads document timed tf32 (the frozen H100's
    resnet50 at batch 256), at most EXTRA_BATCHES of them, largest first; never on a CPU (no TF32 there)."""
    import torch

    from collectors.roofline.collect import EXTRA_BATCHES, extra_precisions, timed_batches

    frozen = REPO / "tests" / "fixtures" / "frozen" / "h100-80gb"
    assert timed_batches(frozen, "resnet50", "tf32") == [256]
    assert len(timed_batches(frozen, "resnet50", "bf16")) == EXTRA_BATCHES  # the sweep's: its largest two
    assert timed_batches(frozen, "no-such-workload", "tf32") == [] and timed_batches(tmp_path, "resnet50", "tf32") == []
    assert extra_precisions(torch.device("cpu")) == []
