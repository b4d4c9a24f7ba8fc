"""`collect --retime-host` (collectors/workloads/retime.py): every host-set point of a folder's documents timed again
in one window, the documents rewritten with them and nothing else; bad input is one line and exit 2, nothing written.

On the CPU no point is host-set by itself (no GPU busy time): as in test_steady.py, a tiny CPU collection's points
are given the shares a host-set GPU point has, and marked as timed steadily in an earlier window."""

from __future__ import annotations

import io
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from paths import REPO
from test_steady import host_set_on_a_gpu, steady_timing

from collectors.__main__ import main
from collectors.workloads.collect import iter_workload_documents
from collectors.workloads.retime import run_retime
from collectors.workloads.steady import needs_steady, with_steady
from gpuplan_schema.payloads import MemoryUse, WorkloadPayload, WorkloadPoint
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import build_document, load_document, save_document

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def earlier_window() -> WorkloadPayload:
    """A tiny mlp-stgan collected on the CPU, its host-set points timed steadily in an 'earlier window' 3x slower."""
    folder = REPO / "build" / "retime-test"
    shutil.rmtree(folder, ignore_errors=True)
    *_, (_, payload) = iter_workload_documents(["mlp-stgan"], "standard", folder, CPU,
                                               Progress("test", total=1, stream=io.StringIO()))
    shutil.rmtree(folder, ignore_errors=True)
    payload = replace(host_set_on_a_gpu(payload), complete=True)
    points = [with_steady(p, steady_timing(3 * p.step_s.median), 8) if needs_steady(p) else p
              for p in payload.points]
    return replace(payload, points=points)


def folder_with(tmp_path: Path, payload: WorkloadPayload, version: str = "6") -> Path:
    folder = tmp_path / "h200"
    folder.mkdir()
    save_document(build_document("workload", "workloads", version, "h200", payload), folder / "workload-mlp-stgan.json")
    return folder


def test_every_host_set_point_is_timed_again_and_nothing_else_changes(tmp_path, earlier_window):
    folder = folder_with(tmp_path, earlier_window)
    out = io.StringIO()
    assert run_retime(folder, ["mlp-stgan"], out, rounds=3, slice_s=0.02) == 0
    doc = load_document(folder / "workload-mlp-stgan.json")
    assert doc.collector.version == "6" and doc.machine == "h200"      # the points' protocol, as it was
    new = doc.payload
    assert new.boundaries == earlier_window.boundaries and new.complete
    moved = 0
    for old, point in zip(earlier_window.points, new.points, strict=True):
        if old.steady_rounds is None:
            assert point == old                   # a GPU-set point, a probe: as measured
            continue
        moved += 1
        assert point.steady_rounds == 3 and point.step_s.n == 3
        assert point.quick_step_s == old.quick_step_s      # the sweep's own timing, not the earlier window's
        assert point.step_s.median < old.step_s.median     # the earlier window was made 3x slower
        assert point.throughput_per_s == pytest.approx(point.batch / point.step_s.median)
    assert moved >= 2
    steady = new.stage("steady")
    assert steady.status == "done" and f"{moved} host-set points timed again" in steady.reason
    assert "timed again" in out.getvalue()


def test_a_missing_document_is_one_line_exit_2_and_nothing_written(tmp_path, earlier_window, capsys):
    folder = folder_with(tmp_path, earlier_window)
    before = (folder / "workload-mlp-stgan.json").read_bytes()
    code = main(["--out", str(tmp_path), "--machine", "h200", "--retime-host", "--workload", "mlp-stgan",
                 "--workload", "gpt-small"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"error: {folder / 'workload-gpt-small.json'}: no such document to time again "
                                 "(collect gpt-small first)"]
    assert (folder / "workload-mlp-stgan.json").read_bytes() == before


def test_a_document_of_another_device_type_is_refused(tmp_path, earlier_window, capsys):
    folder = folder_with(tmp_path, replace(earlier_window, device="cuda"))
    before = (folder / "workload-mlp-stgan.json").read_bytes()
    assert main(["--out", str(tmp_path), "--machine", "h200", "--retime-host", "--workload", "mlp-stgan"]) == 2
    err = capsys.readouterr().err
    assert "workload-mlp-stgan.json: payload.device is 'cuda', this run's is 'cpu'" in err
    assert (folder / "workload-mlp-stgan.json").read_bytes() == before


def test_retime_needs_the_workloads_named(tmp_path, capsys):
    (tmp_path / "h200").mkdir()
    assert main(["--out", str(tmp_path), "--machine", "h200", "--retime-host"]) == 2
    assert "--retime-host: name the workloads" in capsys.readouterr().err


def test_the_collection_summary_of_a_document_whose_only_ok_point_is_a_probe(earlier_window):
    """A boundary probe that ran is 'ok' with no throughput: the summary line says nothing was timed, where it raised
    TypeError (an H200 tacotron2 collection whose first sweep point timed out, its batch-1 probe then ran)."""
    from collectors.__main__ import summary_of

    probe = WorkloadPoint("probe", "bf16", 1, "no_cudnn_benchmark", "ok", memory=MemoryUse(801454592, 899678208))
    failed = replace(earlier_window.points[0], status="error", reason="timed out after 60 s (--point-timeout)",
                     step_s=None, throughput_per_s=None)
    line = summary_of(replace(earlier_window, points=[failed, probe], complete=False))
    assert line.startswith("no point timed") and "the same command resumes" in line
