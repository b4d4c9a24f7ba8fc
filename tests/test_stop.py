"""Ctrl-C within 5 s in every stage of a collection: a real SIGINT, to a real `python -m collectors` on the CPU,
while it is timing a sweep point, probing the out-of-memory boundary in its child process, compiling with
torch.compile (inductor's compile workers), profiling, and running torchrun's ranks. Each time the process ends
within STOP_S, exit 130, with every finished point saved and no process it started left running; a second Ctrl-C
ends it at once.

Sent two ways: to the process group, as a terminal's Ctrl-C is (the children get it too), and to the collector's
pid alone (`kill -INT`): the collector then ends its children itself.

The GPU's paths (the boundary's child process, torch.compile) run on the CPU here with GPUPLAN_CPU_GPU_PATHS=1. The
workload file's step is slow only where the test wants the collection to be when the signal comes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import REPO

from collectors.core.children import descendants
from collectors.workloads.sweep_plan import GPU_PATHS_ENV
from gpuplan_schema.schema import load_document

pytestmark = pytest.mark.slow
STOP_S = 5.0  # the acceptance: Ctrl-C ends the collection within this, whatever it is doing

# A tiny MLP whose step is slow where SLOW says: at batch 2 of the sweep ("sweep"), in the boundary's probes
# ("probe": the probe_run, which only the boundary search calls, in its child process), in every step
# ("profile"), or in one long native call at batch 2 ("native"). A slow step loops over small torch ops, as a real
# one would: Python regains control between ops.
WORKLOAD = '''
import os
import time

import torch
import torch.nn.functional as F

SLOW = os.environ.get("STOP_TEST_SLOW", "")
OOM_ABOVE = int(os.environ.get("STOP_TEST_OOM_ABOVE", "0"))  # a batch above this "runs out of memory"
BATCH_START = int(os.environ.get("STOP_TEST_BATCH_START", "1"))


def spin(seconds):
    ends = time.monotonic() + seconds
    x = torch.randn(64, 64)
    while time.monotonic() < ends:
        x = torch.tanh(x @ x) * 0.5


def run(model, inputs):
    if (SLOW == "sweep" and inputs.shape[0] == 2) or SLOW == "profile":
        spin(120 if SLOW == "sweep" else 0.5)
    if SLOW == "native" and inputs.shape[0] == 2:  # one call that stays in native code for many seconds
        torch.linalg.matrix_power(torch.randn(4096, 4096), 1 << 14)  # 14 squarings, never back in Python
    return model(inputs)


def probe_run(model, inputs):
    if SLOW == "probe":
        spin(600)
    return model(inputs)


def make_batch(n, device):
    if OOM_ABOVE and n > OOM_ABOVE:
        raise torch.OutOfMemoryError(f"CUDA out of memory (test: batch > {OOM_ABOVE})")
    return torch.randn(n, 32, device=device), torch.randn(n, 32, device=device)


def build():
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU()) for _ in range(6)])
    return {"name": "stopme", "model": model, "loss": F.mse_loss, "run": run, "probe_run": probe_run,
            "make_batch": make_batch, "batch_start": BATCH_START}
'''


class Collection:
    """`python -m collectors` in a session of its own (so a group SIGINT reaches only it and its children)."""

    def __init__(self, tmp: Path, slow: str, *args: str, gpu_paths: bool = False, env: dict | None = None):
        (tmp / "stopme.py").write_text(WORKLOAD)
        self.out, self.err = tmp / "runs", tmp / "stderr.txt"
        environ = dict(os.environ, STOP_TEST_SLOW=slow, PYTHONUNBUFFERED="1", **(env or {}))
        if gpu_paths:
            environ[GPU_PATHS_ENV] = "1"
        command = [sys.executable, "-m", "collectors", "--out", str(self.out), "--machine", "m", "--profile",
                   "standard", *(args or ("--only", "workloads", "--workload", f"{tmp / 'stopme.py'}:build"))]
        self.proc = subprocess.Popen(command, cwd=REPO, env=environ, stdout=subprocess.DEVNULL,
                                     stderr=self.err.open("w"), start_new_session=True)

    def stderr(self) -> str:
        return self.err.read_text().replace("\r", "\n")

    def wait_for(self, text: str, timeout_s: float = 300) -> None:
        ends = time.monotonic() + timeout_s
        while text not in self.stderr():
            assert self.proc.poll() is None, f"ended (exit {self.proc.returncode}) before {text!r}:\n{self.stderr()}"
            assert time.monotonic() < ends, f"no {text!r} after {timeout_s} s:\n{self.stderr()[-2000:]}"
            time.sleep(0.1)

    def interrupt(self, group: bool) -> tuple[float, list[int]]:
        """SIGINT (to the group or the pid); (seconds until the process ended, the processes it had started)."""
        started = descendants(self.proc.pid)
        sent = time.monotonic()
        if group:
            os.killpg(self.proc.pid, signal.SIGINT)
        else:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        return time.monotonic() - sent, started

    def document(self, stem: str = "workload-stopme"):  # noqa: ANN201 - a payload
        return load_document(self.out / "m" / f"{stem}.json").payload


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def assert_stopped(c: Collection, seconds: float, started: list[int]) -> None:
    assert c.proc.returncode == 130, c.stderr()[-2000:]
    assert seconds < STOP_S, f"{seconds:.1f} s to stop:\n{c.stderr()[-2000:]}"
    left = [pid for pid in started if alive(pid)]
    assert not left, f"still running after the stop: {left}"
    assert "Resume with the same command" in c.stderr()


@pytest.mark.parametrize("group", [True, False], ids=["group", "pid"])
def test_ctrl_c_during_a_sweep_point(tmp_path, group):
    c = Collection(tmp_path, "sweep")
    c.wait_for("stopme bf16 batch 1: ok")
    time.sleep(1.0)  # batch 2's step is spinning now
    seconds, started = c.interrupt(group)
    assert_stopped(c, seconds, started)
    payload = c.document()
    assert [(p.batch, p.status) for p in payload.points] == [(1, "ok")] and not payload.complete
    assert "workload-stopme: the main precision's batch sweep" in c.stderr()  # the stages left, named


@pytest.mark.parametrize("group", [True, False], ids=["group", "pid"])
def test_ctrl_c_during_a_boundary_probe_in_its_child_process(tmp_path, group):
    # the sweep runs 4, then 8 out of memory: the search probes between them; torch.compile a no-op here
    c = Collection(tmp_path, "probe", gpu_paths=True,
                   env={"TORCHDYNAMO_DISABLE": "1", "STOP_TEST_BATCH_START": "4", "STOP_TEST_OOM_ABOVE": "5"})
    c.wait_for("searching the OOM boundary")
    deadline = time.monotonic() + 120
    while not any(p.sweep == "probe" for p in c.document().points):  # the child probed 6 (OOM), now spins at 5
        assert time.monotonic() < deadline and c.proc.poll() is None, c.stderr()[-2000:]
        time.sleep(0.1)
    time.sleep(1.0)
    seconds, started = c.interrupt(group)
    assert started, "no child process to stop"
    assert_stopped(c, seconds, started)
    payload = c.document()
    assert [(p.batch, p.status) for p in payload.points if p.sweep == "probe"] == [(6, "oom")]  # kept; 5 spun
    assert {p.sweep for p in payload.points} >= {"batch", "variant"} and not payload.boundaries
    stages = {s.name: s.status for s in payload.stages}
    assert stages["precisions"] == "done" and "boundary" not in stages


def test_ctrl_c_while_torch_compile_compiles(tmp_path):
    c = Collection(tmp_path, "", gpu_paths=True)
    c.wait_for("torch.compile at batch")
    time.sleep(4.0)  # dynamo traced; inductor compiles (its workers, a C++ compiler)
    seconds, started = c.interrupt(group=False)
    assert_stopped(c, seconds, started)
    payload = c.document()
    assert payload.points and not any("compile" in p.variant for p in payload.points)
    assert [s.name for s in payload.stages] == ["knee"]


@pytest.mark.parametrize("group", [True, False], ids=["group", "pid"])
def test_ctrl_c_while_profiling(tmp_path, group):
    c = Collection(tmp_path, "profile", "--only", "roofline", "--workload", f"{tmp_path / 'stopme.py'}:build")
    c.wait_for("profiling")
    time.sleep(1.0)
    seconds, started = c.interrupt(group)
    assert_stopped(c, seconds, started)
    assert not (c.out / "m" / "roofline-stopme.json").exists()


def test_ctrl_c_while_torchrun_runs_its_ranks(tmp_path):
    c = Collection(tmp_path, "", "--only", "collectives", "--dist-backend", "gloo", "--gpus", "2")
    c.wait_for("ranks (gloo)")
    deadline = time.monotonic() + 120
    while len(descendants(c.proc.pid)) < 3:  # torchrun and its two ranks
        assert time.monotonic() < deadline and c.proc.poll() is None, c.stderr()[-2000:]
        time.sleep(0.1)
    seconds, started = c.interrupt(group=False)  # torchrun has a session of its own: a terminal would not reach it
    assert_stopped(c, seconds, started)


def test_a_step_held_in_native_code_is_ended_by_the_watchdog(tmp_path):
    """The main thread is inside one long matmul, where no Python handler can run: the watchdog thread (woken by the
    signal's wakeup descriptor) ends the process DEADLINE_S after the Ctrl-C."""
    c = Collection(tmp_path, "native")
    c.wait_for("stopme bf16 batch 1: ok")
    time.sleep(2.0)
    seconds, started = c.interrupt(group=False)
    assert c.proc.returncode == 130 and seconds < STOP_S, (seconds, c.stderr()[-1000:])
    assert "did not end within 4 s of the stop" in c.stderr()
    assert [(p.batch, p.status) for p in c.document().points] == [(1, "ok")]


def test_a_second_ctrl_c_ends_it_at_once(tmp_path):
    """Held in native code as above, a second Ctrl-C does not wait for the watchdog's deadline."""
    c = Collection(tmp_path, "native")
    c.wait_for("stopme bf16 batch 1: ok")
    time.sleep(2.0)
    os.kill(c.proc.pid, signal.SIGINT)
    time.sleep(1.0)  # a second press (two SIGINTs within SECOND_PRESS_S are one press delivered twice)
    sent = time.monotonic()
    os.kill(c.proc.pid, signal.SIGINT)
    assert c.proc.wait(timeout=30) == 130
    assert time.monotonic() - sent < 2.0 and "Stopped at once (a second Ctrl-C)" in c.stderr()


def test_one_press_delivered_twice_is_one_ctrl_c(tmp_path):
    """`timeout -s INT` signals the process, then its group: two SIGINTs within microseconds. They stop the
    collection as one Ctrl-C does (the summary, the stages left, the resume command), not as a second press."""
    c = Collection(tmp_path, "sweep")
    c.wait_for("stopme bf16 batch 1: ok")
    time.sleep(1.0)
    os.kill(c.proc.pid, signal.SIGINT)
    os.killpg(c.proc.pid, signal.SIGINT)
    assert c.proc.wait(timeout=30) == 130
    assert "Stopped at once" not in c.stderr() and "Resume with the same command" in c.stderr()
    assert [(p.batch, p.status) for p in c.document().points] == [(1, "ok")]
