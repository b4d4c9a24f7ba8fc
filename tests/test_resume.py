"""Resuming a workload collection: a document saved after every point, an interrupted run picked up
where it stopped (no finished point measured again or lost), and a larger profile after a smaller one
only adding what is missing. Real tiny collections on the CPU through the collector's own generators."""

from __future__ import annotations

import io
import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from collectors.__main__ import main as collect_main
from collectors.workloads.collect import NAME, VERSION, iter_workload_documents
from collectors.workloads.sweep import point_key
from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import build_document, load_document, parse_document, save_document

CPU = torch.device("cpu")


def quiet() -> Progress:
    return Progress("test", total=1, stream=io.StringIO())


def keys(payload: WorkloadPayload) -> list[tuple]:
    """The points' configurations, but the trials at the knee: which batch is the knee depends on the run's own
    timings, so two runs can put them at different batches (`at_its_knee` checks them)."""
    assert at_its_knee(payload)
    return [point_key(p.sweep, p.precision, p.batch, p.variant, p.seq_len) for p in payload.points if p.sweep != "knee"]


def at_its_knee(payload: WorkloadPayload) -> bool:
    """Every trial at the knee was timed at the knee of the run's own bf16 sweep, once per precision."""
    at_knee = [p for p in payload.points if p.sweep == "knee"]
    return all(p.batch == payload.sweep_knee("bf16") for p in at_knee) \
        and len({p.precision for p in at_knee}) == len(at_knee)


def save(folder: Path, stem: str, payload: WorkloadPayload) -> None:
    save_document(build_document("workload", NAME, VERSION, "resume-test", payload), folder / f"{stem}.json")


def run(folder: Path, profile: str, stop_after: int | None = None, fresh: bool = False) -> WorkloadPayload:
    """Collect mlp-stgan into `folder` as `python -m collectors` does, saving every yield; with
    `stop_after`, stop after that many saves, as a kill between two points would."""
    documents = iter_workload_documents(["mlp-stgan"], profile, folder, CPU, quiet(), fresh)
    for stem, payload in itertools.islice(documents, stop_after):
        save(folder, stem, payload)
    return load_document(folder / "workload-mlp-stgan.json").payload


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> WorkloadPayload:
    return run(tmp_path_factory.mktemp("whole"), "standard")


@pytest.mark.parametrize("stop_after", [1, 3, 6])
def test_an_interrupted_run_resumes_without_repeating_or_losing_a_point(tmp_path, uninterrupted, stop_after):
    partial = run(tmp_path, "standard", stop_after=stop_after)  # saves: after each point and each stage's record
    assert not partial.complete and 1 <= len(partial.points) + len(partial.boundaries) <= stop_after
    finished = run(tmp_path, "standard")
    assert finished.complete
    assert keys(finished) == keys(uninterrupted)  # same points, same order, none twice
    # the points measured before the stop are the very same measurements, not new ones
    assert finished.points[:len(partial.points)] == partial.points
    assert finished.elapsed_s >= partial.elapsed_s


def test_capacity_after_standard_only_adds_the_other_boundaries(tmp_path):
    standard = run(tmp_path, "standard")
    capacity = run(tmp_path, "capacity")
    assert {b.precision for b in standard.boundaries} == {"bf16"}
    assert {b.precision for b in capacity.boundaries} == {"bf16", "fp32"}
    earlier = {point_key(p.sweep, p.precision, p.batch, p.variant, p.seq_len): p for p in standard.points}
    reused = [p for p in capacity.points if point_key(p.sweep, p.precision, p.batch, p.variant, p.seq_len) in earlier]
    assert len(reused) == len(standard.points)
    assert all(p == earlier[point_key(p.sweep, p.precision, p.batch, p.variant, p.seq_len)] for p in reused)
    added = [p for p in capacity.points if p not in reused]  # fp32's probes, where its timed points left any to make
    assert all(p.sweep == "probe" and p.precision == "fp32" for p in added)


def test_fresh_measures_again(tmp_path):
    first = run(tmp_path, "quick")
    again = run(tmp_path, "quick", fresh=True)
    assert keys(again) == keys(first) and again.points[0].step_s != first.points[0].step_s


def test_a_document_from_another_collector_version_is_not_reused(tmp_path):
    first = run(tmp_path, "quick")
    stale = build_document("workload", NAME, "0", "resume-test", first)
    save_document(stale, tmp_path / "workload-mlp-stgan.json")
    again = run(tmp_path, "quick")
    assert again.points[0].step_s != first.points[0].step_s


def test_the_cli_resumes_and_says_so(tmp_path, capsys):
    args = ["--only", "workloads", "--workload", "mlp-stgan", "--profile", "quick", "--out", str(tmp_path),
            "--machine", "m"]
    path = tmp_path / "m" / "workload-mlp-stgan.json"
    assert collect_main(args) == 0
    first = load_document(path).payload
    save(path.parent, "workload-mlp-stgan", replace(first, complete=False))  # as a stopped run leaves it
    assert collect_main(args) == 0
    again = load_document(path).payload
    assert again.points == first.points and again.complete
    assert "points reused from workload-mlp-stgan.json" in capsys.readouterr().err


def test_a_complete_document_is_skipped_and_said_so(tmp_path, capsys):
    args = ["--only", "workloads", "--workload", "mlp-stgan", "--profile", "quick", "--out", str(tmp_path),
            "--machine", "m"]
    path = tmp_path / "m" / "workload-mlp-stgan.json"
    assert collect_main(args) == 0
    before = path.read_bytes()
    capsys.readouterr()
    assert collect_main(args) == 0
    assert path.read_bytes() == before  # not even saved again
    out = capsys.readouterr().out
    assert "workload-mlp-stgan       skipped: complete (quick profile)" in out and "--fresh measures it again" in out
    assert collect_main([*args, "--fresh"]) == 0
    assert load_document(path).payload.points[0].step_s != load_document_bytes(before).points[0].step_s


def load_document_bytes(data: bytes) -> WorkloadPayload:
    return parse_document(json.loads(data)).payload
