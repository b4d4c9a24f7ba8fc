"""This host's default machine id: hostname + GPU model + count, made filesystem-safe."""

from __future__ import annotations

import socket

import torch

from gpuplan_schema.machine import sanitize_machine_id


def gpu_summary() -> str:
    """'2x-nvidia-h100-80gb-hbm3', or 'cpu' when no GPU is visible to torch."""
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return "cpu"
    name = torch.cuda.get_device_name(0).removeprefix("NVIDIA ")
    return f"{torch.cuda.device_count()}x-{name}"


def default_machine_id() -> str:
    return sanitize_machine_id(f"{socket.gethostname()}-{gpu_summary()}")
