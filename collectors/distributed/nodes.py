"""Several nodes: the launcher options (`--nnodes`, `--node-rank` or `--rdzv-id`, `--rdzv-endpoint`) and
the torchrun arguments they become.

Every node runs the same `gpuplan collect --only collectives ddp ...` with its own `--node-rank`; the
torchrun agents meet at the rendezvous endpoint and number the ranks node by node. Two ways to meet:

- `--node-rank R`: torchrun's *static* rendezvous; node 0 hosts the store at the endpoint and holds
  rank 0, so node 0 writes the documents. The usual choice on a cluster with a fixed node list.
- `--rdzv-id ID` without `--node-rank`: the elastic *c10d* rendezvous; the agents number themselves in
  the order they arrive, and rank 0's node (whichever that is) writes.

Standard library only: the parent process (`python -m collectors`) imports this before torch.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

ENDPOINT = re.compile(r"^(?P<host>[A-Za-z0-9._:\[\]-]+):(?P<port>\d{1,5})$")
LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}
MAX_NODES = 4096


class DistributedOptionError(ValueError):
    """--gpus, --dist-backend, --batch or the node options cannot be honoured; one line for the user, exit 2."""


NodeOptionError = DistributedOptionError


@dataclass(frozen=True)
class NodeOptions:
    nnodes: int
    endpoint: str
    node_rank: int | None = None   # static rendezvous when given
    rdzv_id: str | None = None     # the elastic (c10d) rendezvous' run id

    @property
    def rendezvous(self) -> str:
        return "static" if self.node_rank is not None else "c10d"

    @property
    def host(self) -> str:
        return self.endpoint.rsplit(":", 1)[0]

    @property
    def on_loopback(self) -> bool:
        """Every node on this host (the emulation, the CPU test): gloo must then use the loopback device."""
        return self.host in LOOPBACK

    @property
    def writes_here(self) -> bool | None:
        """Whether rank 0 runs on this node: True on static node 0, False on the others, None (not
        known before the rendezvous) with c10d."""
        return None if self.node_rank is None else self.node_rank == 0

    def torchrun_args(self) -> list[str]:
        if self.node_rank is not None:
            return ["--nnodes", str(self.nnodes), "--node-rank", str(self.node_rank), "--rdzv-backend", "static",
                    "--rdzv-endpoint", self.endpoint]
        return ["--nnodes", str(self.nnodes), "--rdzv-backend", "c10d", "--rdzv-endpoint", self.endpoint,
                "--rdzv-id", self.rdzv_id or "gpuplan"]


def add_node_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "several nodes (collectives, ddp)",
        "Run the same command on every node; torchrun's rendezvous joins them. Rank 0 writes the documents "
        "(node 0 with --node-rank). Example, two nodes of 8 GPUs: --nnodes 2 --node-rank 0|1 "
        "--rdzv-endpoint node0:29400")
    group.add_argument("--nnodes", type=int, metavar="N", help="nodes taking part (default: this one alone)")
    group.add_argument("--node-rank", type=int, metavar="R", help="this node's rank, 0..N-1 (static rendezvous)")
    group.add_argument("--rdzv-id", metavar="ID", help="elastic c10d rendezvous id, instead of --node-rank")
    group.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="where the nodes meet (node 0's host)")


def node_options(nnodes: int | None, node_rank: int | None, rdzv_id: str | None,
                 endpoint: str | None) -> NodeOptions | None:
    """The parsed options, None for one node (torchrun --standalone). Raises NodeOptionError."""
    if nnodes is None and node_rank is None and rdzv_id is None and endpoint is None:
        return None
    if nnodes is None or not 1 <= nnodes <= MAX_NODES:
        raise NodeOptionError(f"--nnodes {nnodes}: expected 1..{MAX_NODES} with --node-rank/--rdzv-id/--rdzv-endpoint")
    if endpoint is None or not ENDPOINT.match(endpoint) or not 0 < int(endpoint.rsplit(":", 1)[1]) < 65536:
        raise NodeOptionError(f"--rdzv-endpoint {endpoint}: expected HOST:PORT, e.g. node0:29400")
    if node_rank is None and rdzv_id is None:
        raise NodeOptionError("--nnodes: give --node-rank R (static rendezvous) or --rdzv-id ID (elastic)")
    if node_rank is not None and not 0 <= node_rank < nnodes:
        raise NodeOptionError(f"--node-rank {node_rank}: expected 0..{nnodes - 1} for --nnodes {nnodes}")
    if rdzv_id is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", rdzv_id):
        raise NodeOptionError(f"--rdzv-id {rdzv_id!r}: letters, digits, '.', '_', '-' (at most 64)")
    return NodeOptions(nnodes, endpoint, node_rank, rdzv_id)
