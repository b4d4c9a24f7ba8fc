"""Fault injection on real collections: SIGKILL at several moments and resume, Ctrl-C, a hung step, a
collector that fails, two collections on one folder. Real tiny CPU collections run as separate
processes (`python -m collectors`), killed from here while they measure and save.

Counts docs/reliability.md states: 5 SIGKILLs in one collection (after 1, 3 and 5 saved
items, and at 1.5 s and 4 s after a start, wherever the run then is), 3 Ctrl-C runs (through each entry point;
in a point that never ends; tests/test_stop.py has one in every stage), 3 hung steps (in Python, a native wait,
a native loop holding the GIL), 3 lock
cases, 1 failing collector, 1 stale temp file.
"""

from __future__ import annotations

import io
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from paths import REPO
from test_resume import keys  # the points' configurations, but the timing-dependent trials at the knee

from collectors.__main__ import main as collect_main
from collectors.core.run_lock import LOCK_NAME, results_lock
from collectors.workloads.collect import iter_workload_documents
from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import load_document
from planner.cli import main as gpuplan

DOC = "workload-mlp-stgan.json"
COLLECT = ["--only", "workloads", "--workload", "mlp-stgan", "--profile", "standard", "--machine", "m"]
KILL_AFTER_ITEMS = (1, 3, 5)        # saved points and boundaries
KILL_AFTER_SECONDS = (1.5, 4.0)     # from the start: importing torch, measuring, or saving
SLEEPER = '''
import time
import torch

def build():
    def run(model, inputs):
        if inputs.shape[0] == 2:  # batch 2 hangs: a user step stuck in Python
            while True:
                try:
                    time.sleep(600)
                except Exception:  # a step that swallows errors must not swallow the time limit
                    pass
        return model(inputs)

    return {"name": "sleeper", "model": torch.nn.Linear(4, 4), "loss": torch.nn.functional.mse_loss, "run": run,
            "make_batch": lambda n, device: (torch.randn(n, 4, device=device), torch.randn(n, 4, device=device))}
'''


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_collection_left_running():
    """A failed test must not leave a collection running (one of them sleeps for ever)."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            kill(proc)


def start(out: Path, *args: str, log: str = "run") -> subprocess.Popen:
    """`python -m collectors` in its own process, its output in files beside `out` (a pipe could fill and block)."""
    streams = [open(out.parent / f"{out.name}-{log}.{kind}", "w") for kind in ("out", "err")]  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "collectors", *args, "--out", str(out)], cwd=REPO,
                            stdout=streams[0], stderr=streams[1], text=True)
    STARTED.append(proc)
    return proc


def stderr_of(out: Path, log: str = "run") -> str:
    return (out.parent / f"{out.name}-{log}.err").read_text()


def saved_items(path: Path) -> int:
    """Points and boundaries in the document now; it must always read back whole (never half-written)."""
    if not path.exists():
        return 0
    payload = load_document(path).payload
    return len(payload.points) + len(payload.boundaries)


def wait_for_items(proc: subprocess.Popen, path: Path, items: int, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while saved_items(path) < items:
        assert proc.poll() is None, f"the collection ended (exit {proc.returncode}) before {items} saved items"
        assert time.monotonic() < deadline, f"no {items} saved items after {timeout_s} s"
        time.sleep(0.02)


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> WorkloadPayload:
    """The same collection run through without a fault (in this process): what a resumed one must equal."""
    folder = tmp_path_factory.mktemp("whole")
    *_, (_, last) = iter_workload_documents(["mlp-stgan"], "standard", folder, torch.device("cpu"),
                                            Progress("t", 1, io.StringIO()))
    return last


def test_sigkill_at_five_moments_loses_and_repeats_no_point(tmp_path, uninterrupted):
    out = tmp_path / "results"
    path = out / "m" / DOC
    snapshots: list[WorkloadPayload] = []
    for i, items in enumerate(KILL_AFTER_ITEMS):
        proc = start(out, *COLLECT, log=f"kill{i}")
        # each kill after at least one point more than the last: every resumed run measures something
        wait_for_items(proc, path, max(items, saved_items(path) + 1))
        kill(proc)
        snapshots.append(load_document(path).payload)  # reads back whole: no half-written file
    for i, seconds in enumerate(KILL_AFTER_SECONDS):
        proc = start(out, *COLLECT, log=f"late{i}")
        time.sleep(seconds)
        kill(proc)
        snapshots.append(load_document(path).payload)
    assert [len(s.points) + len(s.boundaries) for s in snapshots[:3]] >= list(KILL_AFTER_ITEMS)
    assert not any(s.complete for s in snapshots[:3])
    proc = start(out, *COLLECT, log="final")
    assert proc.wait(timeout=600) == 0, stderr_of(out, "final")
    final = load_document(path).payload
    assert final.complete and keys(final) == keys(uninterrupted)  # every point, in order, none twice
    for snapshot in snapshots:  # what any killed run had saved is kept as it was measured
        assert final.points[:len(snapshot.points)] == snapshot.points
        assert final.boundaries[:len(snapshot.boundaries)] == snapshot.boundaries
    assert sorted(p.name for p in path.parent.iterdir()) == [DOC]  # no temp file, no lock left behind


def test_ctrl_c_stops_within_seconds_and_the_printed_command_resumes(tmp_path):
    out = tmp_path / "results"
    path = out / "m" / DOC
    proc = start(out, *COLLECT)
    wait_for_items(proc, path, 2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    err = stderr_of(out)
    assert "Ctrl-C: stopping now (everything finished is kept" in err
    assert "Left to measure" in err and "workload-mlp-stgan: " in err  # the stages a rerun measures
    resume = [line for line in err.splitlines() if line.startswith("Stopped by Ctrl-C")]
    assert len(resume) == 1
    command = shlex.split(resume[0].split("Resume with the same command: ", 1)[1])
    assert command[:3] == ["python3", "-m", "collectors"] and command[3:] == [*COLLECT, "--out", str(out)]
    partial = load_document(path).payload
    assert not partial.complete and len(partial.points) >= 2
    done = subprocess.run([sys.executable, *command[1:]], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    final = load_document(path).payload
    assert final.complete and final.points[:len(partial.points)] == partial.points
    assert "points reused from workload-mlp-stgan.json" in done.stderr


def test_ctrl_c_through_gpuplan_collect_prints_the_gpuplan_command(tmp_path, capfd):
    out = tmp_path / "results"
    args = ["collect", "--only", "workloads", "--workload", sleeper(tmp_path), "--profile", "standard",
            "--machine", "m", "--point-timeout", "10", "--out", str(out)]  # batch 1 takes seconds on a busy CPU
    path = out / "m" / "workload-sleeper.json"

    def press_ctrl_c() -> None:  # once batch 1 is saved: batch 2 then hangs (abandoned at the Ctrl-C)
        while saved_items(path) < 1:
            time.sleep(0.02)
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=press_ctrl_c, daemon=True)
    watcher.start()
    assert gpuplan(args) == 130
    watcher.join(timeout=5)
    err = capfd.readouterr().err
    assert f"Resume with the same command: gpuplan {shlex.join(args)}" in err
    payload = load_document(path).payload
    assert not payload.complete and [(p.batch, p.status) for p in payload.points] == [(1, "ok")]


def sleeper(tmp_path: Path) -> str:
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    return f"{tmp_path / 'sleeper.py'}:build"


def test_each_sweep_point_is_saved_before_the_next_is_measured(tmp_path):
    # Regression: the batch sweep's points were all measured before the first was yielded, so a run
    # killed in the middle of a sweep lost every point of it. Here batch 2's step stops the process.
    (tmp_path / "stops.py").write_text(SLEEPER.replace("while True:", "raise SystemExit(3)\n            while True:"))
    documents = iter_workload_documents([f"{tmp_path / 'stops.py'}:build"], "standard", tmp_path,
                                        torch.device("cpu"), Progress("t", 1, io.StringIO()))
    saved = []
    with pytest.raises(SystemExit):
        for _, payload in documents:
            saved.append([(p.sweep, p.batch) for p in payload.points])
    assert saved == [[("batch", 1)]]


def test_ctrl_c_abandons_the_point_in_progress(tmp_path):
    """A point that would never end (a step asleep in Python, swallowing Exception) is abandoned at the first Ctrl-C:
    the collection does not wait for it (tests/test_stop.py times this in every stage)."""
    out = tmp_path / "results"
    path = out / "m" / "workload-sleeper.json"
    proc = start(out, "--only", "workloads", "--workload", sleeper(tmp_path), "--profile", "standard",
                 "--machine", "m", "--point-timeout", "0")
    wait_for_items(proc, path, 1)  # batch 1 is saved; batch 2 sleeps for ever
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=5) == 130
    payload = load_document(path).payload
    assert not payload.complete and [(p.batch, p.status) for p in payload.points] == [(1, "ok")]
    assert "Resume with the same command" in stderr_of(out)


def test_a_hung_step_times_out_and_the_collection_goes_on(tmp_path):
    out = tmp_path / "results"
    proc = start(out, "--only", "workloads", "--workload", sleeper(tmp_path), "--profile", "standard",
                 "--machine", "m", "--point-timeout", "5")  # a normal point takes 0.5-1 s here
    assert proc.wait(timeout=300) == 1  # finished, with a failed benchmark to report
    payload = load_document(out / "m" / "workload-sleeper.json").payload
    assert payload.complete
    timed_out = [p for p in payload.points if p.status == "error"]
    assert [(p.sweep, p.batch) for p in timed_out] == [("batch", 2), ("probe", 2)]  # the sweep's, the search's
    assert {p.reason for p in timed_out} == {"timed out after 5 s (--point-timeout)"}
    assert all(5 <= p.wall_s < 15 for p in timed_out)
    others = [p for p in payload.points if p not in timed_out]
    assert others and {p.status for p in others} == {"ok"} and {p.precision for p in others} == {"bf16", "fp32"}
    err = stderr_of(out)
    assert "Failed (3;" in err  # two points and the boundary they ended
    assert "WorkloadPoint sweep=batch precision=bf16 batch=2 variant=default: timed out after 5 s" in err


def run_stuck(body: str) -> tuple[subprocess.CompletedProcess, float]:
    code = ("import time\nfrom collectors.core.time_limit import hard_limit, soft_limit\n"
            f"with hard_limit(0.5, 'the stuck point', grace_s=1.0):\n    {body}\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - started


def test_a_step_stuck_in_native_code_ends_the_process_after_the_grace():
    # time.sleep stands for a hung CUDA kernel: native, waiting with the GIL released, beyond the alarm
    done, took = run_stuck("time.sleep(600)")
    assert done.returncode == 124 and took < 30
    assert "the stuck point is still running 1.5 s after it started" in done.stderr
    assert "run the same command to resume" in done.stderr


def test_a_native_loop_holding_the_gil_is_ended_by_the_c_watchdog():
    # sum() over a range runs in C, holding the GIL, never looking at signals: no Python thread can run
    done, took = run_stuck("with soft_limit(0.5):\n        sum(range(10**15))")
    assert done.returncode == 1 and took < 30
    assert "Timeout (0:00:02.500000)!" in done.stderr and 'File "<string>", line 5 in <module>' in done.stderr


def test_a_second_collection_on_the_folder_stops_naming_the_first(tmp_path, capsys):
    out = tmp_path / "results"
    with results_lock(out / "m"):
        rc = collect_main(["--only", "environment", "--out", str(out), "--machine", "m"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"another collection (pid {os.getpid()})" in err and "--machine" in err
    assert sorted(p.name for p in (out / "m").iterdir()) == []  # nothing written; the lock file went with its holder


def test_the_lock_holds_across_processes_and_a_killed_holder_releases_it(tmp_path):
    out = tmp_path / "results"
    first = start(out, "--only", "workloads", "--workload", sleeper(tmp_path), "--profile", "standard",
                  "--machine", "m", "--point-timeout", "0", log="first")
    wait_for_items(first, out / "m" / "workload-sleeper.json", 1)  # it holds the lock, asleep in batch 2
    second = subprocess.run([sys.executable, "-m", "collectors", "--only", "environment", "--out", str(out),
                             "--machine", "m"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2 and f"(pid {first.pid})" in second.stderr
    assert not (out / "m" / "environment.json").exists()
    kill(first)
    assert (out / "m" / LOCK_NAME).exists()  # SIGKILL leaves the file, but not the lock
    assert collect_main(["--only", "environment", "--out", str(out), "--machine", "m"]) == 0
    assert (out / "m" / "environment.json").exists() and not (out / "m" / LOCK_NAME).exists()


def test_a_collector_that_fails_is_reported_and_the_next_one_runs(tmp_path, capsys):
    # real failure: the collectives launch cannot finish in 1 s (torchrun, 2 gloo ranks)
    rc = collect_main(["--only", "collectives", "environment", "--dist-backend", "gloo", "--gpus", "2",
                       "--dist-timeout", "1", "--out", str(tmp_path), "--machine", "m"])
    assert rc == 1
    captured = capsys.readouterr()
    assert (tmp_path / "m" / "environment.json").exists() and not (tmp_path / "m" / "collectives.json").exists()
    assert "collectives: failed: LaunchError:" in captured.err
    summary = captured.err.split("\nFailed (1;", 1)[1].split("\n\n", 1)[0].strip().splitlines()
    assert len(summary) == 2 and summary[1].startswith("  collectives: LaunchError: ")
    assert "environment" in captured.out and "Traceback" not in captured.err


def test_a_temp_file_left_by_a_kill_is_removed_under_the_lock(tmp_path, capsys):
    folder = tmp_path / "m"
    folder.mkdir()
    stale = folder / ".environment.json.k3y_x9.tmp"  # as write_bytes_atomic names them
    stale.write_text('{"schema_version": 1, "kin')
    assert collect_main(["--only", "environment", "--out", str(tmp_path), "--machine", "m"]) == 0
    assert not stale.exists() and f"removed {stale}" in capsys.readouterr().err
