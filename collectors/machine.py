"""Machine ids: stable, filesystem-safe names for a results folder."""

from __future__ import annotations

import re
import socket

import torch

_UNSAFE = re.compile(r"[^a-z0-9._-]+")
MAX_ID_LENGTH = 80


def sanitize_machine_id(text: str) -> str:
    """Lower-case letters, digits, '.', '_' and '-' only; never empty, never '.' or '..'."""
    cleaned = _UNSAFE.sub("-", text.lower()).strip("-.")[:MAX_ID_LENGTH].strip("-.")
    return cleaned or "machine"


def gpu_summary() -> str:
    """'2x-nvidia-h100-80gb-hbm3', or 'cpu' when no GPU is visible to torch."""
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return "cpu"
    name = torch.cuda.get_device_name(0).removeprefix("NVIDIA ")
    return f"{torch.cuda.device_count()}x-{name}"


def default_machine_id() -> str:
    return sanitize_machine_id(f"{socket.gethostname()}-{gpu_summary()}")
