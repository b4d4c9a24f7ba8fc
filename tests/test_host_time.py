"""Host and device shares of a step (issue 18): host issue time and syncs per timed workload point, the
host's dispatch speed in the ceilings, and documents of the collector versions before them.

Real tiny collections on the CPU. On a CPU the host runs every op itself, so a step's host issue time
is close to its step time, there is no device to be busy (gpu_busy_s None) and no CUDA sync to count.
"""

from __future__ import annotations

import io
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from paths import FROZEN, REPO

from collectors.__main__ import main as collect_main
from collectors.ceilings.collect import VERSION as CEILINGS_VERSION
from collectors.ceilings.dispatch import measure_dispatch
from collectors.core.host_time import device_activities, gpu_busy, host_issue, measure_host_share
from collectors.core.resume import why_complete
from collectors.workloads.collect import NAME, VERSION, iter_workload_documents, load_earlier
from gpuplan_schema.payloads import CeilingsPayload, WorkloadPayload, WorkloadPoint
from gpuplan_schema.progress import Progress
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import DocumentError, build_document, load_document, save_document
from planner.export.tidy import iter_tidy_rows

CPU = torch.device("cpu")
OLD_WORKLOAD = REPO / "tests" / "fixtures" / "older" / "workload-v2-gpt-small-h100.json"  # workloads collector 2
OLD_NAME = "workload-gpt-small.json"   # the name it was committed under
OLD_CEILINGS = REPO / "tests" / "fixtures" / "older" / "ceilings-v2-h100.json"  # ceilings collector 2


def quiet() -> Progress:
    return Progress("test", total=1, stream=io.StringIO())


def timed(points: list[WorkloadPoint]) -> list[WorkloadPoint]:
    return [p for p in points if p.sweep != "probe" and p.status == "ok"]


def collect(folder: Path, profile: str) -> WorkloadPayload:
    """mlp-stgan (tiny) into `folder` as `python -m collectors` does, saving after every point."""
    for stem, payload in iter_workload_documents(["mlp-stgan"], profile, folder, CPU, quiet()):
        save_document(build_document("workload", NAME, VERSION, "host-test", payload), folder / f"{stem}.json")
    return load_document(folder / "workload-mlp-stgan.json").payload


@pytest.fixture(scope="module")
def standard(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, WorkloadPayload]:
    folder = tmp_path_factory.mktemp("standard")
    return folder, collect(folder, "standard")


def test_host_issue_times_the_call_itself():
    seconds = host_issue(lambda: time.sleep(0.01), CPU, samples=5)
    assert seconds.n == 5 and 0.01 <= seconds.median < 0.05


def test_on_a_cpu_there_is_no_gpu_busy_time_and_no_sync_count():
    share = measure_host_share(lambda: torch.ones(8).sum(), CPU)
    assert share.host_issue_s.median > 0 and share.gpu_busy_s is None and share.step_syncs is None
    assert gpu_busy(lambda: None, CPU) is None


def test_every_timed_point_has_its_host_share_close_to_its_step_time_on_a_cpu(standard):
    _, payload = standard
    points = timed(payload.points)
    assert len(points) >= 5 and {p.sweep for p in points} >= {"batch", "variant", "repeat"}
    for p in points:
        assert p.host_issue_s is not None and p.host_issue_s.n == 5 and p.host_issue_s.min > 0
        # The CPU does each op as it is issued, so the host's time is the step's: never much longer. (Not
        # compared from below: on this shared, throttled CPU a point's timed loop ran at 0.50 s a step and
        # its host samples at 0.04 s; test_host_issue_times_the_call_itself checks the clock itself.)
        assert p.host_issue_s.min < 2 * p.step_s.max + 0.01, p
        assert p.gpu_busy_s is None and p.step_syncs is None
    assert all(p.host_issue_s is None for p in payload.points if p.sweep == "probe")


def test_export_has_a_host_issue_row_per_timed_point(standard):
    folder, payload = standard
    rows = [r for r in iter_tidy_rows(load_machine(folder)) if r.metric == "host_issue_s"]
    points = timed(payload.points)
    assert len(rows) == len(points)
    assert sorted(r.value for r in rows) == sorted(p.host_issue_s.median for p in points)
    assert all(r.unit == "s" and r.n == 5 and r.spread is not None for r in rows)


def test_an_older_document_loads_with_the_new_fields_absent():
    doc = load_document(OLD_WORKLOAD)
    assert doc.collector.version == "2" and len(timed(doc.payload.points)) > 10
    assert all((p.host_issue_s, p.gpu_busy_s, p.step_syncs) == (None, None, None) for p in doc.payload.points)


def test_an_older_complete_document_is_not_skipped_by_a_rerun(tmp_path):
    path = tmp_path / OLD_NAME
    shutil.copy(OLD_WORKLOAD, path)
    assert why_complete(path, NAME, "2", "standard", "cuda") == "complete (capacity profile)"
    assert why_complete(path, NAME, VERSION, "standard", "cuda") is None


def test_a_version_2_document_lends_its_probes_and_nothing_else(tmp_path):
    """The H100 document of collector 2 holds real boundary probes: a rerun starts from them alone."""
    path = tmp_path / OLD_NAME
    shutil.copy(OLD_WORKLOAD, path)
    old = load_document(path).payload
    kept, note = load_earlier(path, torch.device("cuda"))
    probes = [p for p in old.points if p.sweep == "probe"]
    assert len(probes) >= 5 and kept.points == probes  # the very same readings, the timed points left out
    assert not kept.complete and f"its {len(probes)} boundary probes are reused" in note
    # its boundaries are kept until searched again: a smaller profile's rerun must not drop the others
    assert kept.boundaries == old.boundaries and len({b.precision for b in kept.boundaries}) > 1
    assert load_earlier(path, CPU)[0] is None  # measured on another device type: nothing is reused


def test_a_rerun_over_a_version_2_document_times_its_points_again(standard, tmp_path, capsys):
    _, new = standard
    old = replace(new, points=[replace(p, host_issue_s=None) for p in new.points])
    path = tmp_path / "m" / "workload-mlp-stgan.json"
    save_document(build_document("workload", NAME, "2", "m", old), path)
    args = ["--only", "workloads", "--workload", "mlp-stgan", "--profile", "standard", "--out", str(tmp_path),
            "--machine", "m"]
    assert collect_main(args) == 0
    again = load_document(path)
    assert again.collector.version == VERSION and again.payload.complete
    # as many, but the trials at the knee: which batch is the knee depends on each run's own timings (two runs can
    # hold them or not; tests/test_resume.py checks they sit at each run's own knee)
    assert len([p for p in timed(again.payload.points) if p.sweep != "knee"]) == \
        len([p for p in timed(old.points) if p.sweep != "knee"])
    assert all(p.host_issue_s is not None for p in timed(again.payload.points))
    assert "its timed points measured again" in capsys.readouterr().err


def test_the_dispatch_benchmark_times_issuing_on_the_host():
    issue = measure_dispatch(CPU, "test cpu")
    assert issue.ops_per_sample > 1 and issue.op_issue_s.n >= 5
    assert 0 < issue.op_issue_s.median < 1e-3                     # a tiny add: microseconds, not milliseconds
    assert issue.linear_step_issue_s.median > issue.op_issue_s.median  # a forward+backward issues many ops
    assert issue.linear_step_kernels is None and issue.per_kernel_s is None and issue.cpu_model == "test cpu"


def test_ceilings_carry_the_dispatch_rows_and_an_older_document_has_none(tmp_path):
    old = load_document(OLD_CEILINGS)
    assert old.collector.version == "2" and old.payload.dispatch is None
    issue = measure_dispatch(CPU, None)
    folder = tmp_path / "m"
    payload = replace(load_document(FROZEN / "vm-cpu" / "ceilings.json").payload, dispatch=issue)
    assert isinstance(payload, CeilingsPayload)
    save_document(build_document("ceilings", "ceilings", CEILINGS_VERSION, "m", payload), folder / "ceilings.json")
    rows = {r.metric: r for r in iter_tidy_rows(load_machine(folder))}
    assert rows["dispatch_op_s"].value == issue.op_issue_s.median and rows["dispatch_op_s"].unit == "s"
    assert rows["dispatch_linear_step_s"].value == issue.linear_step_issue_s.median
    assert "dispatch_per_kernel_s" not in rows  # no kernel count on a CPU


def test_a_negative_gpu_busy_time_names_the_file_and_field(tmp_path):
    text = OLD_WORKLOAD.read_text().replace('"wall_s":', '"gpu_busy_s": -1.0, "wall_s":', 1)
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(DocumentError, match=r"bad\.json: payload\.points\[0\]\.gpu_busy_s: -1 is negative"):
        load_document(path)


class KinetoLike:
    """The four methods of torch's _KinetoEvent that device_activities reads (no CUDA device here)."""

    def __init__(self, name: str, device: str, activity: str, ns: int, annotation: bool = False):
        self._name, self._device, self._activity, self._ns, self._annotation = name, device, activity, ns, annotation

    def device_type(self) -> torch.autograd.DeviceType:
        return getattr(torch.autograd.DeviceType, self._device)

    def activity_type(self) -> str:
        return self._activity

    def is_user_annotation(self) -> bool:
        return self._annotation

    def duration_ns(self) -> int:
        return self._ns


def test_gpu_busy_counts_kernels_copies_and_sets_but_not_range_spans_or_host_ops():
    """The kinds of event kineto reports for an optimizer step on a GPU: the range's device-side span
    covers the kernels below it, so counting it would double them."""
    events = [KinetoLike("Optimizer.step#AdamW.step", "CPU", "user_annotation", 900, annotation=True),
              KinetoLike("aten::_fused_adamw_", "CPU", "cpu_op", 800),
              KinetoLike("Optimizer.step#AdamW.step", "CUDA", "gpu_user_annotation", 500, annotation=True),
              KinetoLike("fused_adamw_kernel", "CUDA", "kernel", 300),
              KinetoLike("Memcpy HtoD", "CUDA", "gpu_memcpy", 40),
              KinetoLike("Memset", "CUDA", "gpu_memset", 10)]
    assert [e.duration_ns() for e in device_activities(events)] == [300, 40, 10]


class KinetoWithoutActivityType(KinetoLike):
    """torch 2.11's _KinetoEvent, on the GPU hosts, has no `activity_type` (2.13's has)."""

    activity_type = None


def test_gpu_busy_reads_the_events_of_a_torch_without_activity_type():
    # regression: the first H100 run failed every gpu_busy_s and the dispatch benchmark with
    # "'_KinetoEvent' object has no attribute 'activity_type'"
    events = [KinetoWithoutActivityType("Optimizer.step#AdamW.step", "CUDA", "", 500, annotation=True),
              KinetoWithoutActivityType("fused_adamw_kernel", "CUDA", "", 300),
              KinetoWithoutActivityType("aten::mm", "CPU", "", 100)]
    assert [e.duration_ns() for e in device_activities(events)] == [300]


def test_device_activities_read_a_real_profile():
    """The real kineto events of this torch (CPU only here: no device activity, and no error)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.ones(64, 64) @ torch.ones(64, 64)
    assert device_activities(prof.profiler.kineto_results.events()) == []
