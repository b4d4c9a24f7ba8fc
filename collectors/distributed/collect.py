"""The parent side of `gpuplan collect --gpus N`: how many ranks, the launch, rank 0's document read back.

With GPUs the ranks use NCCL, one per GPU (default: every visible GPU). With fewer than two GPUs the
multi-GPU collectors are skipped, with the reason on the console, unless `--dist-backend gloo` asks
for CPU processes (a test of the path: its figures say nothing about GPUs).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from collectors.distributed.busbw import OPS
from collectors.distributed.ddp_points import parse_batch_pairs
from collectors.distributed.launch import LaunchError, launch
from collectors.distributed.nodes import DistributedOptionError, NodeOptions
from gpuplan_schema.payloads import CollectivesPayload, DdpPayload
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import Document, DocumentError, load_document

GLOO_DEFAULT_RANKS = 2


@dataclass(frozen=True)
class Entry:
    module: str
    stem: str
    timeout_s: float  # for the whole launch; a collective inside may wait 80 % of it


ENTRIES = {
    "collectives": Entry("collectors.distributed.collectives", "collectives", 300.0),
    "ddp": Entry("collectors.distributed.ddp", "ddp", 900.0),
}


@dataclass(frozen=True)
class World:
    ranks: int
    backend: str


def visible_gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_world(requested: int | None, backend: str | None, visible: int,
                  nnodes: int = 1) -> tuple[World | None, str | None]:
    """(how to launch, None) or (None, why the multi-GPU collectors are skipped). `ranks` is per node:
    with several nodes one rank per node is enough for something to travel between ranks."""
    if requested is not None and requested < 1:
        raise DistributedOptionError(f"--gpus {requested}: expected a positive number of GPUs")
    if nnodes > 1:
        if backend != "gloo" and visible == 0:
            return None, "no GPU visible on this node (--dist-backend gloo runs the path on CPU processes)"
        if backend != "gloo" and requested is not None and requested > visible:
            raise DistributedOptionError(f"--gpus {requested}: only {visible} GPU(s) visible")
        per_node = requested or (1 if backend == "gloo" else visible)
        return World(per_node, backend or "nccl"), None
    if backend == "gloo":
        ranks = requested or GLOO_DEFAULT_RANKS
        if ranks < 2:
            return None, "one rank: nothing travels between ranks (--gpus 2 or more)"
        return World(ranks, "gloo"), None
    if visible == 0:
        return None, ("no GPU visible; the multi-GPU collectors need 2 or more "
                      "(--dist-backend gloo runs their path on CPU processes, for testing)")
    if requested is not None and requested > visible:
        raise DistributedOptionError(f"--gpus {requested}: only {visible} GPU(s) visible")
    ranks = requested or visible
    if ranks < 2:
        return None, f"{ranks} GPU{'s' if ranks > 1 else ''} {'visible' if requested is None else 'asked for'}; " \
                     "the multi-GPU collectors need 2 or more"
    return World(ranks, "nccl"), None


def check_options(gpus: int | None, backend: str | None, batches: list[str] | None,
                  nodes: NodeOptions | None = None) -> None:
    """Fail on bad options before any collector runs (a second, not after minutes of measuring)."""
    try:
        parse_batch_pairs(batches or [])
    except ValueError as e:
        raise DistributedOptionError(str(e)) from None
    resolve_world(gpus, backend, visible_gpus(), nodes.nnodes if nodes else 1)


def entry_args(name: str, folder: Path, profile: str, world: World, timeout_s: float,
               workloads: list[str] | None, batches: list[str] | None) -> list[str]:
    args = ["--folder", str(folder.resolve()), "--machine", folder.name, "--profile", profile,
            "--backend", world.backend, "--timeout", f"{0.8 * timeout_s:g}"]
    if name == "ddp":
        args += [a for w in workloads or [] for a in ("--workload", w)]
        args += [a for b in batches or [] for a in ("--batch", b)]
    return args


def iter_distributed_documents(name: str, folder: Path, progress: Progress, *, gpus: int | None,
                               backend: str | None, profile: str, timeout_s: float | None = None,
                               workloads: list[str] | None = None,
                               batches: list[str] | None = None,
                               nodes: NodeOptions | None = None) -> Iterator[tuple[str, Document]]:
    """Launch collector `name` on its ranks; yields (stem, document) that rank 0 wrote, already on disk.
    With several nodes every node launches; only the node holding rank 0 finds a document to yield."""
    world, reason = resolve_world(gpus, backend, visible_gpus(), nodes.nnodes if nodes else 1)
    if world is None:
        progress.note(f"skipped: {reason}")
        print(f"{name}: skipped: {reason}", file=sys.stderr)
        return
    entry = ENTRIES[name]
    timeout = timeout_s or entry.timeout_s
    path = folder / f"{entry.stem}.json"
    before = path.stat().st_mtime_ns if path.exists() else None
    where = f" on each of {nodes.nnodes} nodes ({nodes.rendezvous} rendezvous at {nodes.endpoint})" if nodes else ""
    progress.note(f"{world.ranks} ranks ({world.backend}){where} under torchrun, at most {timeout:.0f} s")
    launch(entry.module, world.ranks, entry_args(name, folder, profile, world, timeout, workloads, batches), timeout,
           nodes=nodes)
    written = path.exists() and path.stat().st_mtime_ns != before
    if nodes is not None and not written and nodes.writes_here is not True:
        # Not a failure: rank 0 ran on another node and wrote there (or into the shared results root).
        progress.note("rank 0 ran on another node; its document is written there")
        print(f"{name}: rank 0 ran on another node; its document is written there", file=sys.stderr)
        return
    if not written:
        raise LaunchError(f"{entry.module}: the ranks exited cleanly but rank 0 wrote no {path}")
    try:
        yield entry.stem, load_document(path)
    except DocumentError as e:
        raise LaunchError(f"{entry.module}: rank 0 wrote a document that does not read back: {e}") from None


def summarize(payload: Any) -> str:
    """The console's one line about a multi-GPU document."""
    if isinstance(payload, CollectivesPayload):
        parts = []
        for op in OPS:
            ok = [p for p in payload.points if p.op == op and p.busbw_bytes_per_s]
            if ok:
                best = max(ok, key=lambda p: p.busbw_bytes_per_s.median)
                parts.append(f"{op} {best.busbw_bytes_per_s.median / 1e9:.4g} GB/s")
        return f"{payload.world_size} ranks ({payload.backend}){_nodes(payload)}, peak bus bandwidth: " + \
            ", ".join(parts)
    if isinstance(payload, DdpPayload):
        parts = [f"{p.workload} ×{p.gpus} {p.scaling_efficiency:.0%}" for p in payload.points
                 if p.gpus > 1 and p.scaling_efficiency is not None]
        spread = payload.matmul_spread
        tail = f"; matmul spread {spread:.1%}" if spread is not None else ""
        return "scaling efficiency " + (", ".join(parts) or "not measured") + tail
    return ""


def _nodes(payload: CollectivesPayload) -> str:
    layout = payload.launch.nodes
    if layout is None or layout.nodes < 2:
        return ""
    return f" on {layout.nodes} nodes × {layout.gpus_per_node} via {layout.transport or 'an unnamed transport'}"
