"""Steady timing of the points a host's speed moves (collectors/workloads/steady.py): which points, the interleaved
rounds, the document they leave, and a rerun over a document of workloads collector 3.

On the CPU there is no GPU busy time, so no point of a collection here is chosen by itself; the re-timing is
run on real tiny steps by giving a CPU-collected point the shares a host-set GPU point has.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from dataclasses import replace

import pytest
import torch
from paths import REPO

from collectors.core import profiles
from collectors.workloads.collect import NAME, VERSION, iter_workload_documents, load_earlier
from collectors.workloads.steady import (
    ROUNDS,
    Job,
    SteadyTiming,
    interleave,
    iter_steady_documents,
    needs_steady,
    with_steady,
)
from collectors.workloads.sweep import Context
from collectors.workloads.sweep_plan import instantiate
from collectors.workloads.training import Variant
from gpuplan_schema.payloads import MemoryUse, WorkloadPayload, WorkloadPoint
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import build_document, load_document, save_document
from gpuplan_schema.stats import Stat, summarize

CPU = torch.device("cpu")
V3_VIT = REPO / "tests" / "fixtures" / "older" / "workload-v3-vit-tiny-h100.json"  # workloads collector 3
USER = str(REPO / "examples" / "user_workload.py") + ":build"


def quiet() -> Progress:
    return Progress("test", total=1, stream=io.StringIO())


def point(step_ms: float, busy_ms: float | None, **changes: object) -> WorkloadPoint:
    step = summarize([step_ms / 1e3 * f for f in (0.97, 1.0, 1.03)])
    base = WorkloadPoint("batch", "bf16", 64, "no_cudnn_benchmark", "ok", step_s=step, throughput_per_s=64e3 / step_ms,
                         host_issue_s=summarize([step_ms / 1e3]), gpu_busy_s=busy_ms and busy_ms / 1e3, step_syncs=0,
                         memory=MemoryUse(peak_reserved_bytes=3 << 30))
    return replace(base, **changes)


def test_a_point_is_timed_steadily_where_its_gpu_idles_for_part_of_the_step():
    """Figures of the H100's documents (collector 3)."""
    assert needs_steady(point(32.7, 8.7))                      # vit-tiny b64: host-set
    assert needs_steady(point(24.5, 16.5))                     # dlrm-small b16384: the GPU idles a third
    assert needs_steady(point(21.4, 9.1, step_syncs=1))        # gpt-small b1 waits once inside, idles still
    assert not needs_steady(point(65.5, 63.1))                 # resnet50 b256: the GPU sets it
    assert not needs_steady(point(266.8, 263.1))               # conv-rollout: the GPU sets it
    assert not needs_steady(point(25.0, None))                 # a CPU: no GPU time to compare with
    assert not needs_steady(point(32.7, 8.7, variant="contiguous+no_cudnn_benchmark"))  # converts the shared model
    assert not needs_steady(point(32.7, 8.7, sweep="sequence", seq_len=2048))
    assert not needs_steady(point(32.7, 8.7, sweep="probe"))
    assert not needs_steady(point(32.7, 8.7, status="oom"))
    done = with_steady(point(32.7, 8.7), steady_timing(0.028), ROUNDS)
    assert not needs_steady(done)                              # a resumed run does not time it again


def steady_timing(step_s: float) -> SteadyTiming:
    return SteadyTiming(summarize([step_s * 0.95, step_s, step_s * 1.1]), summarize([step_s * 0.9, step_s]))


def test_variant_names_read_back_as_the_settings_they_name():
    for variant in (Variant(), Variant(compile=True), Variant(cudnn_benchmark=False),
                    Variant(channels_last=False, cudnn_benchmark=False), Variant(compile=True, cudnn_benchmark=False),
                    Variant(cudnn_benchmark=False, expandable_segments=True)):
        assert Variant.from_name(variant.name) == variant
    with pytest.raises(ValueError, match="'fused_adam'"):
        Variant.from_name("compile+fused_adam")


def test_rounds_interleave_every_step_and_time_each_in_its_own_mode():
    """Two real CPU steps, one ~4× the work of the other: each is timed once per round, turn about, inside
    its own context, and the heavier one's rounds are slower."""
    a, b = torch.randn(96, 96), torch.randn(192, 192)
    log: list[str] = []

    def light() -> None:
        log.append("A")
        a @ a

    def heavy() -> None:
        log.append("B")
        for _ in range(8):
            b @ b
    entered: list[str] = []

    def mode(name: str):  # noqa: ANN202
        @contextlib.contextmanager
        def enter():  # noqa: ANN202
            entered.append(name)
            yield
        return enter
    timings = interleave([light, heavy], [mode("A"), mode("B")], CPU, rounds=4, slice_s=0.02, issues_per_round=2)
    assert entered == ["A", "B"] * 4
    turns = [k for i, k in enumerate(log) if i == 0 or log[i - 1] != k]
    assert turns == ["A", "B"] * 4   # never two turns of one step in a row: the rounds alternate
    assert [t.step_s.n for t in timings] == [4, 4] and [t.host_issue_s.n for t in timings] == [4, 4]
    assert timings[1].step_s.median > 2 * timings[0].step_s.median


@pytest.fixture(scope="module")
def cpu_payloads() -> dict[str, WorkloadPayload]:
    """Tiny mlp-stgan and sensor-cnn (a user's file) collected on the CPU with the standard profile."""
    folder = REPO / "build" / "steady-test"
    shutil.rmtree(folder, ignore_errors=True)
    out = {}
    for name in ("mlp-stgan", USER):
        *_, (_, payload) = iter_workload_documents([name], "standard", folder, CPU, quiet())
        out[name] = payload
    shutil.rmtree(folder, ignore_errors=True)
    return out


def host_set_on_a_gpu(payload: WorkloadPayload) -> WorkloadPayload:
    """The payload with the shares a host-set GPU point has (the GPU busy a third of the step), but its first
    timed point's those of a GPU-set one (busy the whole step)."""
    timed = [i for i, p in enumerate(payload.points) if p.status == "ok" and p.sweep != "probe"]
    points = list(payload.points)
    for i in timed:
        p = points[i]
        points[i] = replace(p, gpu_busy_s=p.step_s.median / (1 if i == timed[0] else 3), step_syncs=0)
    return replace(payload, points=points, complete=False)


def test_the_points_a_host_sets_are_timed_again_in_one_window_for_every_workload(cpu_payloads):
    """Real tiny steps of two workloads on the CPU, re-timed side by side over interleaved rounds: each point's
    step time becomes the rounds' distribution, its rate follows it, its sweep timing is kept beside it, and
    every document comes back complete."""
    jobs = [Job(f"workload-{n}", n, host_set_on_a_gpu(p)) for n, p in cpu_payloads.items()]
    out = dict(iter_steady_documents(jobs, lambda n: instantiate(n, CPU), Context(CPU), quiet(), rounds=3,
                                     slice_s=0.02))
    assert list(out) == [job.stem for job in jobs]
    for job in jobs:
        new = out[job.stem]
        assert new.complete
        for old_point, point in zip(job.payload.points, new.points, strict=True):
            if not needs_steady(old_point):
                assert point == old_point   # the GPU-set point and the probes are left as they were
                continue
            assert point.steady_rounds == 3 and point.quick_step_s == old_point.step_s and point.step_s.n == 3
            assert point.throughput_per_s == pytest.approx(point.batch / point.step_s.median)
            assert point.host_issue_s.n == 3 and point.check() is None
            assert 0.2 < point.step_s.median / old_point.step_s.median < 5  # the same step, timed again
        assert sum(p.steady_rounds is not None for p in new.points) >= 1


def test_a_step_that_fails_to_build_keeps_its_sweep_timing_and_says_so(cpu_payloads):
    payload = host_set_on_a_gpu(cpu_payloads["mlp-stgan"])
    bad = next(i for i, p in enumerate(payload.points) if needs_steady(p))
    points = list(payload.points)
    points[bad] = replace(points[bad], variant="compile+fused_adam")  # a variant this collector cannot build
    stream = io.StringIO()
    progress = Progress("test", total=1, stream=stream)
    [(_, new)] = iter_steady_documents([Job("w", "mlp-stgan", replace(payload, points=points))],
                                       lambda n: instantiate(n, CPU), Context(CPU), progress, rounds=2, slice_s=0.01)
    assert new.points[bad] == points[bad] and new.complete
    assert "not timed steadily" in stream.getvalue() and "fused_adam" in stream.getvalue()


def test_a_point_marked_steady_without_its_sweep_timing_is_refused():
    bad = replace(point(32.7, 8.7), steady_rounds=10)
    assert "quick_step_s" in bad.check()
    assert replace(bad, quick_step_s=Stat(0.03, 0.03, 0.03, 0.03, 0.03, 3)).check() is None


def test_a_version_3_document_lends_every_point_and_is_continued(tmp_path):
    """The H100 vit-tiny document of collector 3 (as committed at 9d59458): a rerun reuses all its readings,
    then adds the steady timing (the document is not complete for collector 4 until then)."""
    path = tmp_path / V3_VIT.name
    shutil.copy(V3_VIT, path)
    old = load_document(path)
    assert old.collector.version == "3"
    kept, note = load_earlier(path, torch.device("cuda"))
    assert kept.points == old.payload.points and kept.boundaries == old.payload.boundaries
    assert not kept.complete and "the points the host's speed moves timed again" in note
    assert "boundaries searched again in fresh processes" in note
    assert load_earlier(path, CPU)[0] is None


def test_a_standard_collection_on_the_cpu_completes_at_this_collector_version(tmp_path):
    """No point is host-set on a CPU: the stage adds nothing and the document still completes."""
    profile = profiles.PROFILES["standard"]
    assert profile.steady and not profiles.PROFILES["quick"].steady
    *_, (stem, payload) = iter_workload_documents(["mlp-stgan"], "standard", tmp_path, CPU, quiet())
    save_document(build_document("workload", NAME, VERSION, "m", payload), tmp_path / f"{stem}.json")
    doc = load_document(tmp_path / f"{stem}.json")
    assert doc.collector.version == VERSION and int(VERSION) >= 4 and doc.payload.complete
    assert all(p.steady_rounds is None for p in doc.payload.points)


def test_a_smaller_profile_over_a_larger_ones_document_keeps_what_it_does_not_measure(tmp_path):
    """A capacity document of collector 3 continued by a standard run (as benchmarks/gpu_run.sh --from-results
    does): the fp32 boundary and the points only capacity measures are kept, every reading unchanged."""
    *_, (stem, capacity) = iter_workload_documents(["mlp-stgan"], "capacity", tmp_path, CPU, quiet())
    save_document(build_document("workload", NAME, "3", "m", capacity), tmp_path / f"{stem}.json")
    *_, (_, standard) = iter_workload_documents(["mlp-stgan"], "standard", tmp_path, CPU, quiet())
    assert {(b.precision, b.allocator) for b in capacity.boundaries} - {(b.precision, b.allocator)
                                                                       for b in standard.boundaries} == set()
    assert "fp32" in {b.precision for b in standard.boundaries}
    key = lambda p: (p.sweep, p.precision, p.batch, p.variant, p.seq_len)  # noqa: E731
    assert sorted(map(key, standard.points)) == sorted(map(key, capacity.points))
    assert {key(p): p.step_s for p in standard.points} == {key(p): p.step_s for p in capacity.points}
    assert standard.complete and standard.profile == "standard"
