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
    model, physical = _read_cpuinfo()
    return CpuInfo(model=model or platform.processor() or platform.machine(),
                   logical_cores=os.cpu_count() or 1, physical_cores=physical, ram_bytes=_ram_bytes())


def _read_cpuinfo() -> tuple[str | None, int | None]:
    """CPU model and physical core count from /proc/cpuinfo (distinct physical id + core id)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None, None
    model, cores, phys = None, set(), "0"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and model is None:
            model = value
        elif key == "physical id":
            phys = value
        elif key == "core id":
            cores.add((phys, value))
    return model, len(cores) or None


def _ram_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
