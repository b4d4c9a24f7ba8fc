"""Errors do not stay: a rerun measures again a point that failed (a workload whose loss raised, fixed), and a
workload file that changed since its document was measured is measured afresh (the document keeps the file's
sha256), its roofline document too. Real tiny collections through the CLI on the CPU. Regression: the fixed workload
printed "skipped: complete" and reported the old RuntimeError with exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.__main__ import main as collect_main
from collectors.workloads import source_hash
from gpuplan_schema.schema import load_document

pytestmark = pytest.mark.slow

WORKLOAD = '''
import os

import torch
import torch.nn.functional as F

BROKEN = {broken}  # the user's bug: the loss raises


def loss(outputs, targets):
    if BROKEN or os.path.exists(__file__ + ".fault"):  # a passing fault: the file itself unchanged
        raise RuntimeError("the loss is broken")
    return F.mse_loss(outputs, targets)


def build():
    return {{"name": "fixme", "model": torch.nn.Linear(8, 8), "loss": loss, "batch_start": 2,
            "make_batch": lambda n, device: (torch.randn(n, 8, device=device), torch.randn(n, 8, device=device))}}
'''


def write(path: Path, broken: bool) -> str:
    path.write_text(WORKLOAD.format(broken=broken))
    return f"{path}:build"


def collect(tmp_path: Path, spec: str, *only: str) -> int:
    return collect_main(["--only", *(only or ("workloads",)), "--workload", spec, "--profile", "quick", "--out",
                         str(tmp_path / "runs"), "--machine", "m"])


def document(tmp_path: Path, stem: str = "workload-fixme"):  # noqa: ANN201 - a payload
    return load_document(tmp_path / "runs" / "m" / f"{stem}.json").payload


@pytest.mark.parametrize("fix", ["the fault passed", "the file fixed"])
def test_a_failed_point_is_measured_again_on_the_next_run(tmp_path, capsys, fix):
    path = tmp_path / "fixme.py"
    spec = write(path, broken=fix == "the file fixed")
    fault = Path(f"{path}.fault")
    fault.touch()
    assert collect(tmp_path, spec) == 1
    failed = document(tmp_path)
    assert [(p.status, p.reason) for p in failed.points] == [("error", "RuntimeError: the loss is broken")]
    fault.unlink()
    if fix == "the file fixed":
        write(path, broken=False)
    capsys.readouterr()
    assert collect(tmp_path, spec) == 0
    out, err = capsys.readouterr()
    assert "skipped: complete" not in out and "the loss is broken" not in err
    assert [p.status for p in document(tmp_path).points] == ["ok"]
    assert (document(tmp_path).source_sha256 == failed.source_sha256) == (fix == "the fault passed")


def test_a_changed_workload_file_is_measured_afresh(tmp_path, capsys):
    path = tmp_path / "fixme.py"
    spec = write(path, broken=False)
    assert collect(tmp_path, spec, "workloads", "roofline") == 0
    first, profiled = document(tmp_path), document(tmp_path, "roofline-fixme")
    assert first.source_sha256 == profiled.source_sha256 == source_hash(path)
    capsys.readouterr()
    assert collect(tmp_path, spec, "workloads", "roofline") == 0  # unchanged: both kept as they are
    assert "skipped: complete" in capsys.readouterr().out and document(tmp_path) == first
    path.write_text(path.read_text() + "\n# edited: the model changed\n")
    assert collect(tmp_path, spec, "workloads", "roofline") == 0
    err = capsys.readouterr().err
    assert "changed since it was measured; measuring it afresh" in err
    again, reprofiled = document(tmp_path), document(tmp_path, "roofline-fixme")
    assert again.source_sha256 == reprofiled.source_sha256 == source_hash(path) != first.source_sha256
    assert again.points[0].step_s != first.points[0].step_s  # measured, not reused
    assert reprofiled.step_s != profiled.step_s
