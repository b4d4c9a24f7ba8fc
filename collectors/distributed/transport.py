"""Which transport carried data between nodes, read the way NCCL reports it.

With NCCL_DEBUG=INFO every connection NCCL sets up prints one line, e.g.

    host:123:456 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [send] via NET/Socket/0
    host:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    host:123:456 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via SHM/direct/direct

(ranks are global; the bracket is the CUDA device). A connection joins two ranks of different
nodes or of the same node, which the rank -> node map says; the most used transport of each kind is
the answer. Without those lines (NCCL_DEBUG set otherwise by the caller) the NCCL_* switches that
force a path say it; gloo always pairs ranks over TCP. Standard library only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

CONNECTION = re.compile(r"Channel \d+(?:/\d+)?\s*:\s*(?P<src>\d+)\[\w+\]\s*->\s*(?P<dst>\d+)\[\w+\]"
                        r".*?\bvia\s+(?P<via>\S+)")


def canonical(via: str) -> str:
    """NCCL's "via" word as one family: NET/IB/0/GDRDMA -> NET/IB, P2P/CUMEM/read -> P2P, SHM/... -> SHM."""
    parts = via.split("/")
    if parts[0] == "NET" and len(parts) > 1:
        return "NET/IB" if parts[1].startswith("IB") else f"NET/{parts[1]}" if parts[1] == "Socket" else "NET/IB"
    if parts[0] in ("P2P", "SHM"):
        return parts[0]
    return "unknown"


def parse_connections(lines: Iterable[str], node_of: Mapping[int, int]) -> tuple[str | None, str | None]:
    """(between nodes, within a node): the most frequent transport family of each, None where no line says."""
    between: Counter[str] = Counter()
    within: Counter[str] = Counter()
    for line in lines:
        m = CONNECTION.search(line)
        if not m:
            continue
        src, dst = int(m["src"]), int(m["dst"])
        if src not in node_of or dst not in node_of:
            continue
        (between if node_of[src] != node_of[dst] else within)[canonical(m["via"])] += 1
    pick = lambda c: c.most_common(1)[0][0] if c else None  # noqa: E731
    return pick(between), pick(within)


def transport_from_env(env: Mapping[str, str]) -> str | None:
    """What the NCCL switches force between nodes, None when they leave NCCL its choice."""
    net = env.get("NCCL_NET", "").strip().lower()
    if net == "socket" or env.get("NCCL_IB_DISABLE") == "1":
        return "NET/Socket"
    if net == "ib":
        return "NET/IB"
    if env.get("NCCL_P2P_DISABLE") == "1" and env.get("NCCL_SHM_DISABLE") == "1":
        return "NET/Socket"  # nothing but the network left; Socket unless an IB/EFA plugin is loaded
    return None


def name_with_nvlink(family: str | None, nvlink: bool) -> str | None:
    """NCCL's P2P between GPUs joined by NVLink is NVLink; without it (PCIe) it stays plain P2P."""
    return "P2P/NVLink" if family == "P2P" and nvlink else family
