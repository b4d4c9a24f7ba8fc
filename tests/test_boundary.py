"""The out-of-memory boundary search: the probe schedule as pure logic (a simulated card), the
memory-line guess, and real probes and sweeps on the CPU with user workloads that raise the very
exception torch raises on a full GPU."""

from __future__ import annotations

import io
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from paths import FROZEN

from collectors.core.profiles import PROFILES
from collectors.workloads import Workload, load_workload, workload_from_dict
from collectors.workloads.boundary import (
    BOUNDARY_TOLERANCE,
    USABLE_FRACTION,
    Bracket,
    guess_max_batch,
    iter_boundary,
    iter_probe_batches,
    probe,
)
from collectors.workloads.run import WorkloadRun
from collectors.workloads.stages import boundary_stage, knee_stage, sweep_stage
from collectors.workloads.sweep import Context
from collectors.workloads.sweep_plan import build_sweep_plan
from collectors.workloads.training import Variant
from gpuplan_schema.payloads import MemoryUse, OomBoundary, WorkloadPoint
from gpuplan_schema.progress import Progress

CPU = torch.device("cpu")

OOM_FILE = '''\
import torch
import torch.nn.functional as F

LIMIT = {limit}


def make_batch(batch_size, device):
    if batch_size > LIMIT:  # what a full card does: torch raises exactly this type on a GPU
        raise torch.OutOfMemoryError(f"CUDA out of memory (test: batch > {{LIMIT}})")
    return torch.randn(batch_size, 8, device=device), torch.randn(batch_size, 2, device=device)


def build():
    return {{"name": "oom-above-{limit}", "model": torch.nn.Linear(8, 2), "make_batch": make_batch,
            "loss": F.mse_loss, "batch_start": 4}}
'''


def oom_workload(folder: Path, limit: int) -> Workload:
    path = folder / f"oom_{limit}.py"
    path.write_text(OOM_FILE.format(limit=limit), encoding="utf-8")
    return load_workload(f"{path}:build")


def quiet_progress() -> Progress:
    return Progress("test", total=1, stream=io.StringIO())


def simulate(bracket: Bracket, guess: int | None, cap: int, limit: int) -> list[int]:
    """Run the probe schedule against a card on which batches up to `limit` fit."""
    probed = []
    for batch in iter_probe_batches(bracket, guess, cap):
        probed.append(batch)
        bracket.record(batch, batch <= limit)
        assert len(probed) < 100, "the schedule does not end"
    return probed


def assert_found(bracket: Bracket, limit: int) -> None:
    assert bracket.lo == limit or (bracket.lo < limit < bracket.hi)
    assert bracket.lo <= limit < bracket.hi
    assert bracket.hi - bracket.lo <= max(1, int(bracket.lo * BOUNDARY_TOLERANCE))


# ── the schedule, on a simulated card ──────────────────────────────────────────────────────────

def test_a_good_guess_brackets_the_boundary_in_a_few_probes():
    bracket = Bracket(lo=32)
    probed = simulate(bracket, guess=75, cap=4096, limit=77)
    assert_found(bracket, 77)
    assert probed[0] == 75 and len(probed) <= 4


def test_a_guess_too_high_walks_down():
    bracket = Bracket(lo=32)
    probed = simulate(bracket, guess=67, cap=4096, limit=58)  # 15% high, as USABLE_FRACTION can be
    assert_found(bracket, 58)
    assert probed[0] == 67 and all(b > 32 for b in probed)
    # plain doubling then bisection from 32 takes 64, then 48, 56, 60, 58, 59: six probes
    assert len(probed) <= 5


def test_a_wild_guess_still_finds_the_boundary():
    for guess in (33, 40, 200, 4000):
        bracket = Bracket(lo=32)
        simulate(bracket, guess=guess, cap=4096, limit=58)
        assert_found(bracket, 58)


def test_without_a_guess_it_doubles_then_bisects():
    bracket = Bracket(lo=32)
    probed = simulate(bracket, guess=None, cap=4096, limit=1000)
    assert probed[:5] == [64, 128, 256, 512, 1024]
    assert_found(bracket, 1000)


def test_a_guess_inside_a_known_bracket_is_used():
    bracket = Bracket(lo=64, hi=128)  # the timed sweep ran 64 and ran out of memory at 128
    probed = simulate(bracket, guess=75, cap=4096, limit=77)
    assert probed[0] == 75 and len(probed) <= 4
    assert_found(bracket, 77)


def test_known_oom_goes_straight_to_bisection():
    bracket = Bracket(lo=512, hi=1024)
    probed = simulate(bracket, guess=None, cap=4096, limit=1000)
    assert probed[0] == 768
    assert_found(bracket, 1000)


def test_the_cap_stops_the_search():
    bracket = Bracket(lo=256)
    probed = simulate(bracket, guess=10_000, cap=512, limit=10**9)
    assert probed == [512] and bracket.lo == 512 and bracket.hi is None


def test_nothing_fits_halves_down_to_what_does():
    bracket = Bracket(lo=0, hi=64)
    simulate(bracket, guess=None, cap=4096, limit=5)
    assert bracket.lo == 5 and bracket.hi == 6


def test_not_even_one_fits():
    bracket = Bracket(lo=0, hi=8)
    assert simulate(bracket, guess=None, cap=4096, limit=0) == [4, 2, 1]
    assert bracket.lo == 0 and bracket.hi == 1


# ── the guess: a line through the measured peak memory ─────────────────────────────────────────

def point(batch: int, peak: int, status: str = "ok") -> WorkloadPoint:
    return WorkloadPoint("batch", "bf16", batch, "default", status, memory=MemoryUse(peak, peak))


def test_guess_is_where_the_memory_line_meets_the_usable_memory():
    fixed, per_sample, capacity = 2_000_000_000, 900_000_000, 80_000_000_000
    points = [point(b, fixed + per_sample * b) for b in (8, 16, 32)]
    assert guess_max_batch(points, capacity) == int((capacity * USABLE_FRACTION - fixed) / per_sample)


def test_no_guess_without_two_batches_or_a_capacity():
    assert guess_max_batch([point(32, 10**9)], 80 * 10**9) is None
    assert guess_max_batch([point(16, 10**9), point(32, 2 * 10**9)], None) is None
    flat = [point(16, 10**9), point(32, 10**9)]  # memory that does not grow says nothing
    assert guess_max_batch(flat, 80 * 10**9) is None


# ── real probes and sweeps on the CPU ─────────────────────────────────────────────────────────

def gpu_plan(workload: Workload, spec: str):
    """The plan a GPU run makes (start at batch_start, caps far above): the sweep itself runs on the CPU."""
    return build_sweep_plan(spec, workload, PROFILES["standard"], torch.device("cuda"))


def sweep_and_boundary(spec: str, workload: Workload) -> list[WorkloadPoint | OomBoundary]:
    """The main precision's sweep (to the knee, then on) and its boundary, with a GPU's plan, run on the CPU."""
    run = WorkloadRun(spec, "w", workload, gpu_plan(workload, spec), Context(CPU))
    items = []
    for stage in (knee_stage, sweep_stage, boundary_stage):
        items += [item for item in stage(run, quiet_progress()) if run.add(item)]
    return items


def test_sweep_and_probes_find_the_oom_boundary(tmp_path):
    workload = oom_workload(tmp_path, 37)
    plan = gpu_plan(workload, "oom.py:build")
    assert plan.start == 4 and plan.main_batch == 32 and plan.search_cap >= 64
    items = sweep_and_boundary("oom.py:build", workload)
    timed = [i for i in items if isinstance(i, WorkloadPoint) and i.sweep == "batch"]
    probes = [i for i in items if isinstance(i, WorkloadPoint) and i.sweep == "probe"]
    [boundary] = [i for i in items if isinstance(i, OomBoundary)]
    assert [(p.batch, p.status) for p in timed] == [(4, "ok"), (8, "ok"), (16, "ok"), (32, "ok"), (64, "oom")]
    assert timed[-1].reason == "OutOfMemoryError: CUDA out of memory (test: batch > 37)" and timed[-1].step_s is None
    assert all(p.throughput_per_s > 0 for p in timed[:-1])
    assert all(p.step_s is None for p in probes) and {p.status for p in probes} == {"ok", "oom"}
    assert all(32 < p.batch < 64 for p in probes)
    assert (boundary.status, boundary.max_batch, boundary.first_oom_batch, boundary.capped) == ("ok", 37, 38, False)


def test_boundary_without_a_timed_sweep_doubles_from_the_main_point(tmp_path):
    workload = oom_workload(tmp_path, 1000)
    main = WorkloadPoint("variant", "fp32", 512, "default", "ok")
    items = list(iter_boundary(workload, "fp32", [main], Context(CPU), 1 << 20, Variant(), limit_s=900))
    [boundary] = [i for i in items if isinstance(i, OomBoundary)]
    assert [i.batch for i in items if isinstance(i, WorkloadPoint)][0] == 1024
    assert boundary.status == "ok" and boundary.max_batch <= 1000 < boundary.first_oom_batch
    assert boundary.first_oom_batch - boundary.max_batch <= BOUNDARY_TOLERANCE * boundary.max_batch


ERROR_FILE = '''\
import torch
import torch.nn.functional as F


def make_batch(batch_size, device):
    if batch_size >= 16:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
    return torch.randn(batch_size, 8, device=device), torch.randn(batch_size, 2, device=device)


def build():
    return {"name": "fails", "model": torch.nn.Linear(8, 2), "make_batch": make_batch, "loss": F.mse_loss,
            "batch_start": 4}
'''


def test_an_error_that_is_not_oom_ends_the_search_with_status_error(tmp_path):
    path = tmp_path / "fails.py"
    path.write_text(ERROR_FILE, encoding="utf-8")
    workload = load_workload(f"{path}:build")
    items = sweep_and_boundary(str(path), workload)
    timed = [(i.batch, i.status) for i in items if isinstance(i, WorkloadPoint) and i.sweep == "batch"]
    assert timed == [(4, "ok"), (8, "ok"), (16, "error")]
    [boundary] = [i for i in items if isinstance(i, OomBoundary)]
    assert (boundary.status, boundary.max_batch) == ("error", 8)
    assert boundary.reason == "RuntimeError: mat1 and mat2 shapes cannot be multiplied"


def test_probe_runs_the_cheaper_probe_run_when_a_workload_has_one():
    calls = {"run": 0, "probe_run": 0}

    def counted(key: str):
        def run(model, x):
            calls[key] += 1
            return model(x)
        return run

    workload = workload_from_dict({
        "name": "w", "model": torch.nn.Linear(4, 4), "loss": None,
        "make_batch": lambda b, d: (torch.randn(b, 4, device=d), None),
        "run": counted("run"), "probe_run": counted("probe_run")}, "test")
    result = probe(workload, "fp32", 8, Context(CPU), Variant())
    assert result.status == "ok" and result.sweep == "probe" and result.step_s is None
    assert calls == {"run": 0, "probe_run": 1}  # inference: one pass answers "does it fit?"


def test_training_probe_runs_two_full_steps_so_the_optimizer_state_is_held():
    steps = []

    def loss(out, target):
        steps.append(out.shape[0])
        return F.mse_loss(out, target)

    workload = workload_from_dict({
        "name": "w", "model": torch.nn.Linear(4, 2), "loss": loss,
        "make_batch": lambda b, d: (torch.randn(b, 4, device=d), torch.randn(b, 2, device=d))}, "test")
    assert probe(workload, "fp32", 16, Context(CPU), Variant()).status == "ok"
    assert steps == [16, 16]


def test_the_expandable_segments_search_does_not_trust_the_default_allocators_ooms(tmp_path):
    """An OOM under the default allocator may be fragmentation, which expandable segments remove: the
    second search starts above it, and its boundary says which allocator it was searched with."""
    workload = oom_workload(tmp_path, 100)
    measured = [WorkloadPoint("batch", "fp32", 32, "default", "ok"),
                WorkloadPoint("batch", "fp32", 64, "default", "oom")]
    searches = {}
    for variant in (Variant(), Variant(expandable_segments=True)):
        items = list(iter_boundary(workload, "fp32", measured, Context(CPU), 1 << 12, variant, limit_s=900))
        [searches[variant.name]] = [i for i in items if isinstance(i, OomBoundary)]
        assert {i.variant for i in items if isinstance(i, WorkloadPoint)} == {variant.name}
    default, expandable = searches["default"], searches["expandable_segments"]
    assert (default.allocator, default.max_batch, default.first_oom_batch) == ("default", 63, 64)
    assert (expandable.allocator, expandable.max_batch) == ("expandable_segments", 100)
    assert expandable.first_oom_batch == 101 or expandable.first_oom_batch - 100 <= BOUNDARY_TOLERANCE * 100


def test_allocator_settings_are_read_from_either_environment_variable(monkeypatch):
    from collectors.core.allocator import configured_by_environment, expandable_by_environment

    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        monkeypatch.delenv(name, raising=False)
    assert configured_by_environment() is None and not expandable_by_environment()
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:128, expandable_segments:True")
    assert configured_by_environment() == "PYTORCH_ALLOC_CONF=max_split_size_mb:128, expandable_segments:True"
    assert expandable_by_environment()
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:False")
    assert not expandable_by_environment()


def test_a_capacity_document_without_the_expandable_searches_is_continued(monkeypatch):
    """The committed H100 document holds both searches; the same document as the earlier capacity
    profile left it (default boundaries only) answers `standard` but not `capacity`."""
    from dataclasses import replace as with_fields

    from collectors.workloads.collect import holds_allocator_boundaries
    from gpuplan_schema.schema import load_document

    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    now = load_document(FROZEN / "h100-80gb" / "workload-conv-rollout.json").payload
    before = with_fields(now, boundaries=now.default_boundaries)
    assert holds_allocator_boundaries(now, "capacity") and holds_allocator_boundaries(now, "full")
    assert not holds_allocator_boundaries(before, "capacity") and holds_allocator_boundaries(before, "standard")
    # with expandable segments set by the environment the first search already used them
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    assert holds_allocator_boundaries(before, "capacity")


# ── bounded: a deadline per probe and per search, whatever the device's memory ──────────────────────────────

def test_a_larger_memory_does_not_make_the_search_longer():
    """From the memory line's guess (here 10 % low, as a 141 GB card's line can be), the probes step out and bisect
    in relative steps: the same few probes for a boundary at 1,000 or at 10,000,000."""
    counts = [len(simulate(Bracket(lo=limit // 8), int(limit * 0.9), 1 << 40, limit))
              for limit in (1_000, 100_000, 10_000_000)]
    assert max(counts) <= 7 and max(counts) - min(counts) <= 1, counts


SLOW_PROBES = '''\
import time

import torch
import torch.nn.functional as F

LIMIT, PROBE_S = {limit}, {probe_s}


def make_batch(batch_size, device):
    if batch_size > LIMIT:
        raise torch.OutOfMemoryError("CUDA out of memory (test)")
    return torch.randn(batch_size, 8, device=device), torch.randn(batch_size, 2, device=device)


def probe_run(model, inputs):
    time.sleep(PROBE_S)  # a large batch's probe: seconds each
    return model(inputs)


def build():
    return {{"name": "slow-probes", "model": torch.nn.Linear(8, 2), "make_batch": make_batch, "loss": F.mse_loss,
            "probe_run": probe_run}}
'''


def slow_probes(folder: Path, limit: int, probe_s: float) -> Workload:
    path = folder / "slow_probes.py"
    path.write_text(SLOW_PROBES.format(limit=limit, probe_s=probe_s), encoding="utf-8")
    return load_workload(f"{path}:build")


def test_a_search_out_of_time_ends_with_its_bracket_and_says_so(tmp_path):
    workload = slow_probes(tmp_path, 1000, 0.4)
    measured = [WorkloadPoint("batch", "fp32", 64, "default", "ok")]
    started = time.monotonic()
    items = list(iter_boundary(workload, "fp32", measured, Context(CPU), 1 << 20, Variant(), limit_s=1.5))
    took = time.monotonic() - started
    boundary = items[-1]
    probes = [i for i in items if isinstance(i, WorkloadPoint)]
    # no probe starts after the limit: the search ends once the probe running then has ended
    assert isinstance(boundary, OomBoundary) and took < 1.5 + 2 * max(p.wall_s for p in probes) + 1
    assert boundary.status == "ok" and boundary.max_batch >= 64 and "the search's 1.5 s were spent" in boundary.reason
    assert probes and boundary.max_batch == max(p.batch for p in probes if p.status == "ok")


def test_a_probe_past_its_deadline_ends_the_search_with_the_bracket_so_far(tmp_path, monkeypatch):
    monkeypatch.setattr("collectors.workloads.boundary.PROBE_MIN_S", 0.5)
    workload = slow_probes(tmp_path, 5000, 30.0)  # every probe would take 30 s (two steps: 60)
    measured = [WorkloadPoint("batch", "fp32", 64, "default", "ok"), WorkloadPoint("batch", "fp32", 2048, "default",
                                                                                   "oom")]
    started = time.monotonic()
    items = list(iter_boundary(workload, "fp32", measured, Context(CPU), 1 << 20, Variant(), limit_s=1.0))
    assert time.monotonic() - started < 5
    (probe_point, boundary) = items
    assert probe_point.status == "error" and probe_point.reason.endswith("s (the boundary search's time)")
    assert (boundary.status, boundary.max_batch, boundary.first_oom_batch) == ("ok", 64, 2048)
    assert boundary.reason == f"bracketed between 64 and 2048: a probe at batch {probe_point.batch} did not end in time"
