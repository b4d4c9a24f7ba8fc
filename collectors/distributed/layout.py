"""The nodes a run spanned and the transport between them, as rank 0 records them (`NodeLayout`).

Each rank reports its host, torchrun's node number (GROUP_RANK) and ranks per node (LOCAL_WORLD_SIZE),
and, under NCCL, the connection lines of its own NCCL_DEBUG file (`nccl_debug_env` points NCCL's log
into a private folder so the console stays clean). Rank 0 maps ranks to nodes and reads them.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from collectors.distributed.transport import CONNECTION, name_with_nvlink, parse_connections, transport_from_env
from gpuplan_schema.payloads import NodeLayout

RENDEZVOUS_ENV = "GPUPLAN_RENDEZVOUS"  # the launcher names the rendezvous kind for the record
NVLINK_GRAPH = "type NVL/"            # NCCL's GRAPH line of an intra-node ring over NVLink


@dataclass(frozen=True)
class RankReport:
    rank: int
    host: str
    node: int
    local_world_size: int
    lines: list[str]  # NCCL's connection and graph lines; empty under gloo or without the log


def nccl_debug_env(env: Mapping[str, str]) -> dict[str, str]:
    """NCCL_DEBUG=INFO into a private file, unless the caller chose NCCL's logging already."""
    if "NCCL_DEBUG" in env:
        return {}
    folder = tempfile.mkdtemp(prefix="gpuplan-nccl-")
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH", "NCCL_DEBUG_FILE": f"{folder}/nccl.%h.%p"}


def own_report(rank: int) -> RankReport:
    """This rank's part, read after the collectives ran (NCCL connects lazily, on first use)."""
    lines: list[str] = []
    log = os.environ.get("NCCL_DEBUG_FILE")
    if log and "gpuplan-nccl-" in log:
        for path in sorted(Path(log).parent.glob(f"*.{os.getpid()}")):
            text = path.read_text(errors="replace")
            lines += [ln for ln in text.splitlines() if CONNECTION.search(ln) or NVLINK_GRAPH in ln]
    return RankReport(rank, socket.gethostname(), int(os.environ.get("GROUP_RANK", "0")),
                      int(os.environ.get("LOCAL_WORLD_SIZE", "1")), lines)


def build_layout(reports: list[RankReport], backend: str, env: Mapping[str, str]) -> NodeLayout:
    """One record of the nodes from every rank's report (rank 0 holds them all)."""
    node_of = {r.rank: r.node for r in reports}
    nodes = sorted(set(node_of.values()))
    hosts = [next(r.host for r in reports if r.node == n) for n in nodes]
    per_node = max(r.local_world_size for r in reports)
    rendezvous = env.get(RENDEZVOUS_ENV, "standalone")
    if backend == "gloo":
        between = "gloo/tcp" if len(nodes) > 1 else None
        within = "gloo/tcp" if per_node > 1 else None
        return NodeLayout(len(nodes), per_node, hosts, rendezvous, between, "backend" if between else None, within)
    lines = [ln for r in reports for ln in r.lines]
    nvlink = any(NVLINK_GRAPH in ln for ln in lines)
    between, within = parse_connections(lines, node_of)
    source = "nccl-debug" if between else None
    if between is None and len(nodes) > 1 and (forced := transport_from_env(env)):
        between, source = forced, "environment"
    if len(nodes) == 1:
        between, source = None, None
    return NodeLayout(len(nodes), per_node, hosts, rendezvous, name_with_nvlink(between, nvlink), source,
                      name_with_nvlink(within, nvlink))
