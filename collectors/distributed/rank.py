"""What every rank process of a multi-GPU collector shares.

A rank starts its process group from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK), on
its own GPU with NCCL, or on the CPU with gloo (tests, machines without GPUs). Results travel to
rank 0 over a second, gloo group ("control"): a rank waiting for the others then blocks on a
socket, not on a spinning NCCL kernel on its GPU. Only rank 0 writes documents.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn, TextIO

import torch
import torch.distributed as dist

from collectors.core.profiles import PROFILES
from collectors.distributed import layout
from collectors.distributed.launch import MULTICAST_OFF
from gpuplan_schema.payloads import LaunchInfo
from gpuplan_schema.schema import build_document, save_document

DEFAULT_TIMEOUT_S = 600.0


@dataclass
class RankContext:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str
    control: Any                      # the gloo process group results travel over
    multicast_env: dict[str, str | None]  # the multicast switches as this process found them

    @property
    def is_root(self) -> bool:
        return self.rank == 0


def start(backend: str | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> RankContext:
    """Join the process group torchrun set up. NCCL when this host has GPUs, unless told gloo."""
    seen = {name: os.environ.get(name) for name in MULTICAST_OFF}
    # Recorded as found (the launcher's contract), then enforced here too: a rank started by hand
    # under a bare torchrun must not use multicast either.
    os.environ.update(MULTICAST_OFF)
    if "LOCAL_RANK" not in os.environ:
        raise SystemExit("error: run under torchrun (python -m torch.distributed.run); see `gpuplan collect --gpus`")
    local_rank = int(os.environ["LOCAL_RANK"])
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    timeout = timedelta(seconds=timeout_s)
    if backend == "nccl":
        os.environ.update(layout.nccl_debug_env(os.environ))  # the transport between nodes, from NCCL's own words
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", timeout=timeout, device_id=device)
        control = dist.new_group(backend="gloo", timeout=timeout)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timeout)
        control = dist.group.WORLD
    return RankContext(dist.get_rank(), dist.get_world_size(), local_rank, device, backend, control, seen)


def gather(ctx: RankContext, value: Any) -> list[Any] | None:
    """Every rank's `value`, in rank order, on rank 0 (None elsewhere). Every rank must call it."""
    out = [None] * ctx.world_size if ctx.is_root else None
    dist.gather_object(value, out, dst=0, group=ctx.control)
    return out


def agree(ctx: RankContext, value: Any) -> list[Any]:
    """Every rank's `value` on every rank: for decisions all ranks must take alike."""
    out: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(out, value, group=ctx.control)
    return out


def launch_info(ctx: RankContext) -> LaunchInfo | None:
    """Gathered on rank 0: how the ranks were started, each one's multicast switches, the nodes."""
    envs = gather(ctx, ctx.multicast_env)
    reports = gather(ctx, layout.own_report(ctx.rank))
    if envs is None or reports is None:
        return None
    nccl = None
    if ctx.backend == "nccl":
        version = torch.cuda.nccl.version()  # a tuple in recent torch, an int in older ones
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    return LaunchInfo("torchrun", ctx.backend, ctx.world_size, envs, nccl,
                      layout.build_layout(reports, ctx.backend, os.environ))


def save_from_root(ctx: RankContext, kind: str, collector: str, version: str, machine: str, payload: Any,
                   path: Path) -> Path | None:
    """Rank 0 writes the document (atomically); every other rank writes nothing."""
    if not ctx.is_root:
        return None
    return save_document(build_document(kind, collector, version, machine, payload), path)


class _Nowhere:
    """Where ranks other than 0 draw their progress."""

    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def progress_stream(ctx: RankContext) -> TextIO:
    """Rank 0's progress goes to stderr (the launcher passes it on); the others' nowhere."""
    return sys.stderr if ctx.is_root else _Nowhere()  # type: ignore[return-value]


def finish(ctx: RankContext) -> NoReturn:
    """Every rank done (rank 0 has saved its document), then out without the interpreter's teardown.

    Under gloo, a rank that tore its process groups down and exited normally sometimes aborted in a C++
    destructor ("terminate called without an active exception", SIGABRT, seen twice in CI's two-node test
    with torch 2.13): its launcher then reported the collection failed and the other node's launcher waited
    for it until its time limit. After the barrier nothing is pending, so the rank flushes and leaves at once.
    NCCL's communicators are destroyed first, as PyTorch asks (an NCCL abort must be collective)."""
    dist.barrier(group=ctx.control)
    if ctx.backend == "nccl":
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def build_parser(description: str) -> argparse.ArgumentParser:
    """The options every entry takes; the launcher (collectors/distributed/collect.py) passes them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--folder", type=Path, required=True, help="the machine's results folder")
    parser.add_argument("--machine", required=True, help="machine id written into the documents")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    parser.add_argument("--backend", choices=("nccl", "gloo"), help="default: nccl with GPUs, gloo without")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds a collective may wait for the other ranks before failing")
    return parser
