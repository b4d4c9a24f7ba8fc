"""This host: its default machine id (hostname + GPU model + count, made filesystem-safe) and its CPU."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

import torch

from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import CpuInfo


def gpu_summary() -> str:
    """'2x-nvidia-h100-80gb-hbm3', or 'cpu' when no GPU is visible to torch."""
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return "cpu"
    name = torch.cuda.get_device_name(0).removeprefix("NVIDIA ")
    return f"{torch.cuda.device_count()}x-{name}"


def default_machine_id() -> str:
    return sanitize_machine_id(f"{socket.gethostname()}-{gpu_summary()}")


def describe_cpu() -> CpuInfo:
    first, physical = _read_cpuinfo()
    vendor, family, model, stepping = (first.get("vendor_id"), _int(first.get("cpu family")), _int(first.get("model")),
                                       _int(first.get("stepping")))
    return CpuInfo(model=first.get("model name") or platform.processor() or platform.machine(),
                   logical_cores=os.cpu_count() or 1, physical_cores=physical, ram_bytes=_ram_bytes(),
                   vendor=vendor, family=family, model_number=model, stepping=stepping,
                   microarchitecture=microarchitecture(vendor, family, model, stepping),
                   nominal_mhz=_float(first.get("cpu MHz")), l3_bytes=_l3_bytes(),
                   virtualized="hypervisor" in first.get("flags", "").split() if "flags" in first else None)


# CPUID family/model → microarchitecture, for the server CPUs cloud GPU hosts run (Intel: the Linux kernel's
# arch/x86/include/asm/intel-family.h; AMD: family 17h Zen/Zen 2, 19h Zen 3/Zen 4, 1Ah Zen 5 by model range).
_INTEL = {63: "Haswell-SP", 79: "Broadwell-SP", 106: "Ice Lake-SP", 143: "Sapphire Rapids",
          207: "Emerald Rapids", 173: "Granite Rapids"}
_AMD = [(23, range(0x00, 0x10), "Naples (Zen)"), (23, range(0x30, 0x40), "Rome (Zen 2)"),
        (25, range(0x00, 0x10), "Milan (Zen 3)"), (25, range(0x10, 0x20), "Genoa (Zen 4)"),
        (25, range(0xA0, 0xB0), "Bergamo (Zen 4c)"), (26, range(0x00, 0x100), "Turin (Zen 5)")]


def microarchitecture(vendor: str | None, family: int | None, model: int | None, stepping: int | None) -> str | None:
    """The server microarchitecture a CPUID vendor, family and model name; None for one not in the table."""
    if family is None or model is None:
        return None
    if vendor == "GenuineIntel" and family == 6:
        if model == 85:  # one model number, three generations told apart by stepping
            return {4: "Skylake-SP", 10: "Cooper Lake", 11: "Cooper Lake"}.get(stepping or 0, "Cascade Lake")
        return _INTEL.get(model)
    if vendor == "AuthenticAMD":
        return next((name for fam, models, name in _AMD if fam == family and model in models), None)
    return None


def _read_cpuinfo() -> tuple[dict[str, str], int | None]:
    """The first processor's fields of /proc/cpuinfo, and the physical core count (distinct physical id + core
    id); ({}, None) where there is no /proc/cpuinfo."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}, None
    first: dict[str, str] = {}
    cores, phys, seen_processor = set(), "0", 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        seen_processor += key == "processor"
        if seen_processor <= 1 and key:
            first.setdefault(key, value)
        if key == "physical id":
            phys = value
        elif key == "core id":
            cores.add((phys, value))
    return first, len(cores) or None


def _l3_bytes() -> int | None:
    """The level-3 cache cpu0 sees, from sysfs ('32768K'); None without one."""
    units = {"K": 1024, "M": 1024 ** 2}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level, size = int((index / "level").read_text()), (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if level == 3:
            return int(size[:-1]) * units[size[-1]] if size[-1] in units else _int(size)
    return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _ram_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
