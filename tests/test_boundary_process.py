"""The boundary searched in a fresh process (collectors/workloads/boundary_process.py): the child process runs the
very search the collector runs in its own process, on the CPU here with workloads that raise torch's
out-of-memory exception above a batch, and a resumed collection takes a boundary found so with its probes."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import torch
from test_boundary import oom_workload

from collectors.core.profiles import PROFILES
from collectors.workloads.boundary import iter_boundary
from collectors.workloads.boundary_process import Search, iter_boundary_in_fresh_process, parse_item
from collectors.workloads.run import WorkloadRun, not_measured_again
from collectors.workloads.stages import search_boundary
from collectors.workloads.sweep import Context
from collectors.workloads.sweep_plan import GPU_PATHS_ENV, build_sweep_plan
from collectors.workloads.training import Variant
from gpuplan_schema.payloads import OomBoundary, WorkloadPayload, WorkloadPoint

CPU = torch.device("cpu")


def spec_of(folder: Path, limit: int) -> str:
    oom_workload(folder, limit)
    return f"{folder / f'oom_{limit}.py'}:build"


def test_a_search_in_a_fresh_process_probes_and_finds_what_the_search_here_does(tmp_path):
    spec = spec_of(tmp_path, 300)
    # no time limit to speak of: a probe's gc.collect() takes seconds on a loaded CPU, and both searches must end alike
    here = list(iter_boundary(oom_workload(tmp_path, 300), "fp32", [], Context(CPU), 5000, Variant(), limit_s=900))
    there = list(iter_boundary_in_fresh_process(Search(spec, "cpu", "fp32", [], 5000, "default", limit_s=900)))
    assert [(p.batch, p.status) for p in there[:-1]] == [(p.batch, p.status) for p in here[:-1]]
    assert all(isinstance(p, WorkloadPoint) and p.sweep == "probe" for p in there[:-1])
    boundary = there[-1]
    assert isinstance(boundary, OomBoundary) and boundary.fresh_process and not here[-1].fresh_process
    assert boundary.max_batch == here[-1].max_batch and 294 <= boundary.max_batch <= 300
    assert boundary.first_oom_batch > 300


def test_the_search_s_tolerance_reaches_the_child(tmp_path):
    """benchmarks/boundary_spread.py bisects tighter than the collector's 2 % through the same child."""
    spec = spec_of(tmp_path, 300)
    loose, tight = (list(iter_boundary_in_fresh_process(Search(spec, "cpu", "fp32", [], 5000, "default",
                                                               tolerance=tolerance, limit_s=900)))[-1]
                    for tolerance in (0.3, 0.001))
    assert tight.max_batch == 300 and tight.first_oom_batch == 301
    assert 0.02 * loose.max_batch < loose.first_oom_batch - loose.max_batch <= 0.3 * loose.max_batch


def test_the_measured_points_reach_the_child_and_set_where_it_starts(tmp_path):
    spec = spec_of(tmp_path, 300)
    ran = WorkloadPoint("probe", "fp32", 256, "default", "ok")
    there = list(iter_boundary_in_fresh_process(Search(spec, "cpu", "fp32", [ran], 5000, "default")))
    assert there[0].batch == 512  # doubling from the largest batch that ran, not from nothing
    assert there[-1].max_batch >= 294


def test_a_search_process_that_fails_gives_an_error_boundary_that_says_why(tmp_path):
    found = list(iter_boundary_in_fresh_process(Search(f"{tmp_path}/gone.py:build", "cpu", "bf16", [], 64,
                                                       "expandable_segments")))
    assert len(found) == 1
    (boundary,) = found
    assert boundary.status == "error" and boundary.fresh_process and boundary.allocator == "expandable_segments"
    assert "search process failed" in boundary.reason and "gone.py: no such workload file" in boundary.reason


def test_lines_that_are_not_items_are_ignored():
    assert parse_item("hello from a workload's print\n") is None
    assert parse_item('{"kind": "other"}') is None
    assert parse_item('[1, 2]') is None


def collection_of(folder: Path, limit: int):  # noqa: ANN201 - (spec, workload, plan)
    """A workload that runs out of memory above `limit`, by its spec, loaded, and its quick plan on the CPU."""
    spec = spec_of(folder, limit)
    workload = oom_workload(folder, limit)
    return spec, workload, build_sweep_plan(spec, workload, PROFILES["quick"], CPU)


def fresh_here(monkeypatch) -> None:
    monkeypatch.setenv(GPU_PATHS_ENV, "1")


def searched(spec: str, workload, plan, ctx: Context) -> list:  # noqa: ANN001 - the test's own triple
    """search_boundary at fp32 (no measured points, no hint) for a run of `workload` with `plan` and `ctx`."""
    return list(search_boundary(WorkloadRun(spec, "w", workload, plan, ctx), "fp32", Variant(), None))


def test_a_resumed_collection_takes_a_fresh_boundary_with_its_probes(tmp_path, monkeypatch):
    fresh_here(monkeypatch)
    spec, workload, plan = collection_of(tmp_path, 300)
    probes = [WorkloadPoint("probe", "fp32", 300, "default", "ok"),
              WorkloadPoint("probe", "fp32", 306, "default", "oom"),
              WorkloadPoint("probe", "fp32", 310, "expandable_segments", "ok")]
    found = OomBoundary("fp32", "ok", 300, 306, fresh_process=True, fresh_probes=True)
    ctx = Context(CPU, earlier={p.key: p for p in probes}, earlier_boundaries={("fp32", "default"): found})
    taken = searched(spec, workload, plan, ctx)
    assert taken == probes[:2] + [found]


def test_a_boundary_whose_probes_ran_on_one_model_is_searched_again(tmp_path, monkeypatch):
    """Before workloads collector 8 a fresh process's probes shared one model (its gradients and own tensors pinned
    the next probe's segments): such a boundary is not taken, the search runs again, each probe a job."""
    fresh_here(monkeypatch)
    spec, workload, plan = collection_of(tmp_path, 5)
    old = WorkloadPoint("probe", "fp32", 3, "default", "ok")
    ctx = Context(CPU, earlier={old.key: old},
                  earlier_boundaries={("fp32", "default"): OomBoundary("fp32", "ok", 3, 4, fresh_process=True)})
    found = searched(spec, workload, plan, ctx)
    assert found[-1].fresh_probes and found[-1].max_batch == 5 and old not in found


def test_a_boundary_found_in_the_collection_process_is_searched_again_in_a_fresh_one(tmp_path, monkeypatch):
    fresh_here(monkeypatch)
    spec, workload, plan = collection_of(tmp_path, 5)
    old = WorkloadPoint("probe", "fp32", 3, "default", "ok")
    ctx = Context(CPU, earlier={old.key: old},
                  earlier_boundaries={("fp32", "default"): OomBoundary("fp32", "ok", 3, 4)})
    found = searched(spec, workload, plan, ctx)
    assert plan.search_cap > 5  # the CPU plan's small cap is above the card's "memory"
    assert found[-1].fresh_process and found[-1].max_batch == 5 and found[-1].first_oom_batch == 6
    assert all(p.sweep == "probe" for p in found[:-1]) and old not in found
    # the document keeps neither the old boundary nor its probes, and keeps the other allocator's
    other = WorkloadPoint("probe", "fp32", 310, "expandable_segments", "ok")
    earlier = WorkloadPayload("oom-above-5", spec, "samples", True, "cpu", "quick", 18, [old, other],
                              [OomBoundary("fp32", "ok", 3, 4),
                               OomBoundary("fp32", "ok", 310, allocator="expandable_segments")], 1.0)
    kept_points, kept_boundaries = not_measured_again(earlier, found[:-1], [found[-1]])
    assert kept_points == [other] and [b.allocator for b in kept_boundaries] == ["expandable_segments"]


def test_the_collection_moves_its_model_off_the_device_before_the_child_runs(tmp_path, monkeypatch):
    """The child must get the memory the collection's model would hold: the model goes to the CPU first."""
    fresh_here(monkeypatch)
    spec, workload, plan = collection_of(tmp_path, 5)
    found = searched(spec, workload, plan, Context(CPU))
    assert found[-1].max_batch == 5
    assert next(workload.model.parameters()).device.type == "cpu"


def test_ctrl_c_in_the_search_process_stops_the_collection_and_records_no_boundary(tmp_path):
    """The collector's time limit sends SIGINT to the process group: the child dies of it mid-search, and the
    collection must stop to be resumed (a boundary saved as an error would be taken as found)."""
    path = tmp_path / "interrupted.py"
    path.write_text(OOM_FILE_INTERRUPTED, encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        list(iter_boundary_in_fresh_process(Search(f"{path}:build", "cpu", "fp32", [], 64, "default")))


def test_ctrl_c_reaches_the_search_process_of_a_collector_started_with_sigint_ignored(tmp_path):
    """A script's `gpuplan collect ... &` starts with SIGINT ignored, and a child inherits that: the search process
    must still stop at the SIGINT the collector's time limit sends it (CI run in the background failed here)."""
    path = tmp_path / "interrupted.py"
    path.write_text(OOM_FILE_INTERRUPTED, encoding="utf-8")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt):
            list(iter_boundary_in_fresh_process(Search(f"{path}:build", "cpu", "fp32", [], 64, "default")))
    finally:
        signal.signal(signal.SIGINT, previous)


OOM_FILE_INTERRUPTED = '''\
import os
import signal

import pytest
import torch
import torch.nn.functional as F


def make_batch(batch_size, device):
    if batch_size > 2:
        os.kill(os.getpid(), signal.SIGINT)  # what the time limit's SIGINT does to the child
    return torch.randn(batch_size, 8, device=device), torch.randn(batch_size, 2, device=device)


def build():
    return {"name": "interrupted", "model": torch.nn.Linear(8, 2), "make_batch": make_batch, "loss": F.mse_loss}
'''


def test_a_fresh_search_that_failed_is_tried_again(tmp_path, monkeypatch):
    fresh_here(monkeypatch)
    spec, workload, plan = collection_of(tmp_path, 5)
    ctx = Context(CPU, earlier_boundaries={("fp32", "default"): OomBoundary("fp32", "error", reason="x",
                                                                            fresh_process=True)})
    found = searched(spec, workload, plan, ctx)
    assert found[-1].status == "ok" and found[-1].max_batch == 5


CARRY_FILE = '''\
import torch
import torch.nn.functional as F

LIMIT = 300


class Carry(torch.nn.Module):
    """Keeps its last input on itself, as Transformer-XL keeps its recurrence memory."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 2)
        self.mems = None

    def forward(self, x):
        if self.mems is not None and self.mems.shape[0] != x.shape[0] or self.lin.weight.grad is not None \\
                and self.mems is None:
            raise RuntimeError("state left by another probe")
        self.mems = x.detach()
        return self.lin(x)


def make_batch(batch_size, device):
    if batch_size > LIMIT:
        raise torch.OutOfMemoryError("CUDA out of memory (test)")
    return torch.randn(batch_size, 8, device=device), torch.randn(batch_size, 2, device=device)


def build():
    return {"name": "carry", "model": Carry(), "make_batch": make_batch, "loss": F.mse_loss, "batch_start": 4}
'''


def test_each_probe_of_a_search_is_a_job_started_at_its_batch(tmp_path):
    """A probe on the last probe's model met its gradients and the tensors the model keeps on itself (the H200's
    Transformer-XL ran fp32 at 174 after 168 and 172, and failed at 148 started alone): the child builds the workload
    anew for each probe, so no probe sees another's state and the search ends at the batch a job can run."""
    path = tmp_path / "carry.py"
    path.write_text(CARRY_FILE, encoding="utf-8")
    spec = f"{path}:build"
    from collectors.workloads import load_workload
    chained = list(iter_boundary(load_workload(spec), "fp32", [], Context(CPU), 5000, Variant(), limit_s=900))
    assert chained[-1].status == "error" and "state left by another probe" in (chained[-1].reason or "")
    there = list(iter_boundary_in_fresh_process(Search(spec, "cpu", "fp32", [], 5000, "default", limit_s=900)))
    probes, boundary = there[:-1], there[-1]
    assert len(probes) >= 3 and all(p.status in ("ok", "oom") for p in probes)
    assert boundary.status == "ok" and 294 <= boundary.max_batch <= 300 < boundary.first_oom_batch


HELD_FILE = '''\
import builtins
import gc
import weakref

import torch
import torch.nn.functional as F

BUILT = builtins.__dict__.setdefault("_gpuplan_test_built", [])


class Alone(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 2)
        BUILT.append(weakref.ref(self))

    def forward(self, x):
        gc.collect()
        if any(r() is not None and r() is not self for r in BUILT):
            raise RuntimeError("an earlier probe's model is alive")
        return self.lin(x)


def make_batch(batch_size, device):
    if batch_size > 300:
        raise torch.OutOfMemoryError("CUDA out of memory (test)")
    return torch.randn(batch_size, 8, device=device), torch.randn(batch_size, 2, device=device)


def build():
    return {"name": "alone", "model": Alone(), "make_batch": make_batch, "loss": F.mse_loss, "batch_start": 4}
'''


def test_no_earlier_probe_s_model_outlives_it_in_the_search_process(tmp_path):
    """The child's search holds no reference to the workload it started with: each probe's model is the only one
    alive when it runs (a model held by the caller kept its parameters and gradients on the device throughout)."""
    from collectors.workloads.boundary_process import run_search
    path = tmp_path / "alone.py"
    path.write_text(HELD_FILE, encoding="utf-8")
    items = list(run_search(Search(f"{path}:build", "cpu", "fp32", [], 5000, "default", limit_s=900)))
    assert len(items) >= 4 and all(p.status in ("ok", "oom") for p in items[:-1])
    assert items[-1].status == "ok" and 294 <= items[-1].max_batch <= 300
