"""Start one process per GPU with PyTorch's own launcher, and watch it.

    python -m torch.distributed.run --standalone --nproc_per_node N -m collectors.distributed.<entry> ARGS

The children always get NVLink multicast switched off (`MULTICAST_OFF`), whatever the caller's
environment says: NVLS/multicast on shared machines can put the hardware out of service for days.
Their output is passed through line by line (rank 0's progress) and its tail kept for the error
message; a run past its time limit has its whole process group stopped. Standard library only.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from collectors.distributed.layout import RENDEZVOUS_ENV
from collectors.distributed.nodes import NodeOptions

# Never removed, never overridable: NCCL's NVLink SHARP, torch's symmetric-memory multicast, NVSHMEM's NVLS.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
ROOT = Path(__file__).resolve().parent.parent.parent  # the folder holding the `collectors` package
TAIL_LINES = 200  # torchrun's own traceback and summary follow the rank's, ~50 lines
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*:")
ROOT_CAUSE_RANK = re.compile(r"^rank\s*:\s*(?P<rank>\d+)")
STOP_GRACE_S = 10.0


class LaunchError(RuntimeError):
    """The rank processes failed or ran out of time; the message is one line for the user."""


def child_env(base: Mapping[str, str], nodes: NodeOptions | None = None) -> dict[str, str]:
    """The children's environment: `base`, multicast off, and this checkout importable as `-m collectors...`."""
    env = dict(base)
    env.update(MULTICAST_OFF)
    env[RENDEZVOUS_ENV] = nodes.rendezvous if nodes else "standalone"
    # One host (--standalone, or nodes meeting on loopback): gloo (the ranks' control channel) over
    # loopback, not over whatever interface the hostname resolves to (which fails in some containers).
    # Across hosts the interface must reach the other nodes: gloo's own choice. A caller's choice stays.
    if nodes is None or nodes.on_loopback:
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if nodes is not None and nodes.on_loopback:
        # torchrun sets one OpenMP thread per rank only with several ranks per agent; emulated nodes share
        # this host's cores, so one rank per "node" would otherwise take every core and oversubscribe them.
        env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [base.get("PYTHONPATH")])])
    return env


def build_command(module: str, nproc: int, args: Sequence[str], nodes: NodeOptions | None = None) -> list[str]:
    where = nodes.torchrun_args() if nodes else ["--standalone"]
    return [sys.executable, "-m", "torch.distributed.run", *where, f"--nproc_per_node={nproc}", "-m", module, *args]


def launch(module: str, nproc: int, args: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None,
           stream: TextIO | None = None, nodes: NodeOptions | None = None) -> float:
    """Run `module` on `nproc` ranks; returns the wall time. Raises LaunchError on failure or timeout."""
    stream = stream or sys.stderr
    command = build_command(module, nproc, args, nodes)
    started = time.perf_counter()
    # A session of its own, so that a timeout stops torchrun and every rank it started, nothing else.
    proc = subprocess.Popen(command, env=child_env(os.environ if env is None else env, nodes), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    stopping = threading.Event()
    reader = threading.Thread(target=_pass_through, args=(proc, tail, stream, stopping), daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        last = _last_words(tail)  # before stopping: what follows is torchrun reporting our own SIGTERM
        stopping.set()            # … which is not passed on either (its traceback read as a failure of its own)
        _stop(proc)
        reader.join(timeout=5)
        raise LaunchError(f"{module}: no result after {timeout_s:g} s on {nproc} ranks; stopped them "
                          f"(last output: {last})") from None
    reader.join(timeout=5)
    elapsed = time.perf_counter() - started
    if code != 0:
        raise LaunchError(f"{module}: the {nproc} rank processes failed (exit {code} after {elapsed:.1f} s): "
                          f"{_last_words(tail)}")
    return elapsed


def _pass_through(proc: subprocess.Popen, tail: deque[str], stream: TextIO, stopping: threading.Event) -> None:
    """Each line of the launch's output to `stream` as it comes, until the launch is being stopped."""
    assert proc.stdout is not None
    for line in proc.stdout:
        tail.append(line.rstrip())
        if not stopping.is_set():
            stream.write(line)
            stream.flush()


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group (torchrun passes it on to the ranks), SIGKILL after a grace period."""
    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _last_words(tail: deque[str]) -> str:
    """The most telling line of the output: the last exception a rank raised (not torchrun's own
    ChildFailedError), with the failing rank from torchrun's summary; else the last line."""
    lines = [line.strip() for line in tail if line.strip()]
    raised = [line for line in lines if EXCEPTION_LINE.match(line) and "ChildFailedError" not in line]
    ranks = [m["rank"] for line in lines if (m := ROOT_CAUSE_RANK.match(line))]
    text = (raised or lines or ["no output"])[-1]
    if ranks:
        text = f"rank {ranks[-1]}: {text}"
    return text if len(text) <= 300 else text[:299] + "…"
