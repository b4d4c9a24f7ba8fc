"""Reading how the GPUs of one host reach each other through NVML: NVLinks, P2P status, PCIe path.

The dataclasses it fills are part of the `collectives` document (gpuplan_schema/payloads/topology.py);
this module imports torch and pynvml only inside `read_topology`. Every NVML query may fail on some
driver or board: a failed query leaves its field empty and says why (`GpuLinks.unavailable`), the rest is still read.
"""

from __future__ import annotations

from typing import Any

from gpuplan_schema.payloads.topology import GpuLinks, GpuPair, NvLink, Topology

# NVML constants as plain numbers: some nvidia-ml-py releases define NVML_P2P_CAPS_INDEX_READ as a tuple.
P2P_READ, P2P_NVLINK = 0, 2
P2P_STATUS = {0: "ok", 1: "chipset not supported", 2: "GPU not supported", 3: "IOH topology not supported",
              4: "disabled by regkey", 5: "not supported", 6: "unknown"}
# nvmlDeviceGetTopologyCommonAncestor, named as `nvidia-smi topo -m` names the path between two GPUs.
PCIE_PATH = {0: "same board", 10: "PIX (one PCIe switch)", 20: "PXB (several PCIe switches)",
             30: "PHB (PCIe host bridge)", 40: "NODE (within one NUMA node)", 50: "SYS (across CPU sockets)"}
REMOTE_TYPE = {0: "gpu", 1: "ibmnpu", 2: "nvswitch"}
MAX_LINKS = 36


def read_topology(count: int) -> tuple[Topology | None, str | None]:
    """The topology of torch's GPUs 0..count-1, or (None, why not)."""
    import torch

    if not torch.cuda.is_available():
        return None, "no GPU: the ranks ran on the CPU"
    try:
        import pynvml as nv
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        nv.nvmlInit()
    except nv.NVMLError as e:
        return None, f"NVML failed to start: {e}"
    try:
        handles = [_handle(nv, torch, i) for i in range(count)]
        bus_ids = [_bus_id(nv, h) for h in handles]
        gpus = [_gpu_links(nv, i, h, bus_ids) for i, h in enumerate(handles)]
        pairs = [_pair(nv, torch, gpus, handles, a, b) for a in range(count) for b in range(a + 1, count)]
        return Topology(gpus, pairs), None
    except Exception as e:  # the topology explains the figures; never let it cost the measurement
        return None, f"{'NVML' if isinstance(e, nv.NVMLError) else type(e).__name__}: {e}"
    finally:
        nv.nvmlShutdown()


def _handle(nv: Any, torch: Any, index: int) -> Any:
    """NVML's handle of torch's device `index`, matched by PCI bus id: with CUDA_VISIBLE_DEVICES set
    (or another device order) torch's index and NVML's differ."""
    props = torch.cuda.get_device_properties(index)
    if getattr(props, "pci_bus_id", None) is not None:
        domain, bus, device = getattr(props, "pci_domain_id", 0), props.pci_bus_id, getattr(props, "pci_device_id", 0)
        try:
            return nv.nvmlDeviceGetHandleByPciBusId(f"{domain:08X}:{bus:02X}:{device:02X}.0")
        except nv.NVMLError:
            pass
    return nv.nvmlDeviceGetHandleByIndex(index)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _bus_id(nv: Any, handle: Any) -> str:
    return _normal_bus_id(_text(nv.nvmlDeviceGetPciInfo(handle).busId))


def _normal_bus_id(bus_id: str) -> str:
    """'00000000:1B:00.0' and '0000:1b:00.0' name the same device: compare the last three fields."""
    return ":".join(bus_id.lower().split(":")[-2:])


def _gpu_links(nv: Any, index: int, handle: Any, bus_ids: list[str]) -> GpuLinks:
    missing: dict[str, str] = {}

    def read(name: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except nv.NVMLError as e:
            missing[name] = f"NVML: {e}"
            return None

    links = []
    for link in range(MAX_LINKS):
        try:
            active = bool(nv.nvmlDeviceGetNvLinkState(handle, link))
        except nv.NVMLError as e:
            if link == 0:  # no NVLink at all (a PCIe card): say so once
                missing["nvlinks"] = f"NVML: {e}"
            break  # links are numbered from 0; the first invalid one ends the list
        version = read(f"nvlink {link} version", nv.nvmlDeviceGetNvLinkVersion, handle, link)
        remote = _remote(nv, handle, link, bus_ids, missing) if active else None
        links.append(NvLink(link, active, int(version) if version is not None else None, remote))
    return GpuLinks(
        gpu=index, name=_text(nv.nvmlDeviceGetName(handle)), nvlinks=links,
        pcie_gen=read("pcie_gen", nv.nvmlDeviceGetCurrPcieLinkGeneration, handle),
        pcie_width=read("pcie_width", nv.nvmlDeviceGetCurrPcieLinkWidth, handle), unavailable=missing)


def _remote(nv: Any, handle: Any, link: int, bus_ids: list[str], missing: dict[str, str]) -> str | None:
    """'gpu N' when the link ends at one of our GPUs, else the remote device's type (an NVSwitch on HGX boards)."""
    try:
        remote_bus = _normal_bus_id(_text(nv.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId))
        if remote_bus in bus_ids:
            return f"gpu {bus_ids.index(remote_bus)}"
        kind = nv.nvmlDeviceGetNvLinkRemoteDeviceType(handle, link)
        return REMOTE_TYPE.get(int(kind), f"device type {kind}")
    except (nv.NVMLError, AttributeError) as e:  # AttributeError: an nvidia-ml-py without the query
        missing[f"nvlink {link} remote"] = f"NVML: {e}"
        return None


def _pair(nv: Any, torch: Any, gpus: list[GpuLinks], handles: list[Any], a: int, b: int) -> GpuPair:
    def status(index: int) -> str | None:
        try:
            return P2P_STATUS.get(int(nv.nvmlDeviceGetP2PStatus(handles[a], handles[b], index)), "unknown")
        except nv.NVMLError as e:
            return f"NVML: {e}"

    try:
        path = PCIE_PATH.get(int(nv.nvmlDeviceGetTopologyCommonAncestor(handles[a], handles[b])))
    except nv.NVMLError as e:
        path = f"NVML: {e}"
    direct = sum(1 for link in gpus[a].nvlinks if link.remote == f"gpu {b}")
    return GpuPair(a, b, direct_nvlinks=direct, p2p_nvlink=status(P2P_NVLINK), p2p_read=status(P2P_READ),
                   pcie_path=path, peer_access=bool(torch.cuda.can_device_access_peer(a, b)))
