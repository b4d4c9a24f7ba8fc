"""How the GPUs of one host reach each other (NVLinks, P2P status, PCIe path): the data of a
`collectives` document, and its one-line description. Reading it through NVML is the collectors'
job (collectors/distributed/topology.py); this module needs neither torch nor pynvml.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NvLink:
    """One NVLink of a GPU as NVML reports it; `remote` is "gpu N", "nvswitch" or another device."""

    link: int
    active: bool
    version: int | None = None
    remote: str | None = None


@dataclass(frozen=True)
class GpuLinks:
    gpu: int                          # torch's device index (= the rank's local GPU)
    name: str
    nvlinks: list[NvLink]
    pcie_gen: int | None = None
    pcie_width: int | None = None
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def active_nvlinks(self) -> int:
        return sum(link.active for link in self.nvlinks)


@dataclass(frozen=True)
class GpuPair:
    """How two GPUs reach each other: direct NVLinks, NVML's P2P status and their common PCIe ancestor."""

    a: int
    b: int
    direct_nvlinks: int | None = None
    p2p_nvlink: str | None = None     # NVML P2P status over NVLink: "ok" or why not
    p2p_read: str | None = None       # NVML P2P read status (over any path)
    pcie_path: str | None = None      # nvidia-smi topo's names: PIX, PXB, PHB, NODE, SYS
    peer_access: bool | None = None   # torch.cuda.can_device_access_peer


@dataclass(frozen=True)
class Topology:
    gpus: list[GpuLinks]
    pairs: list[GpuPair]


def describe_topology(topology: Topology | None) -> str:
    """One line: '4× NVIDIA H200, 18 active NVLinks each (to NVSwitches); P2P over NVLink ok on 6/6 pairs'."""
    if topology is None or not topology.gpus:
        return "topology not recorded"
    names = {g.name for g in topology.gpus}
    head = f"{len(topology.gpus)}× {' / '.join(sorted(names))}"
    links = sorted({g.active_nvlinks for g in topology.gpus})
    if links == [0]:
        head += ", no active NVLink"
    else:
        remotes = sorted({link.remote.split()[0] for g in topology.gpus for link in g.nvlinks
                          if link.active and link.remote})
        to = f" (to {', '.join('NVSwitches' if r == 'nvswitch' else 'GPUs' if r == 'gpu' else r for r in remotes)})"
        head += f", {'/'.join(map(str, links))} active NVLinks each" + (to if remotes else "")
    if topology.pairs:
        ok = sum(p.p2p_nvlink == "ok" for p in topology.pairs)
        head += f"; P2P over NVLink ok on {ok}/{len(topology.pairs)} pairs"
        paths = sorted({p.pcie_path for p in topology.pairs if p.pcie_path})
        if paths:
            head += f"; PCIe path {', '.join(paths)}"
    return head
