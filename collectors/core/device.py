"""The device a collector measures: which one, its name, freeing its memory between points, and one line
for an error met on it (an out-of-memory error is a result, not a failure)."""

from __future__ import annotations

import gc

import torch

from collectors.core.machine import describe_cpu
from collectors.core.time_limit import PointTimeout


def pick_device() -> torch.device:
    return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model()


def cpu_model() -> str:
    return describe_cpu().model


def free_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def is_oom(error: BaseException) -> bool:
    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in str(error).lower()


def error_line(error: BaseException) -> str:
    """One line for the document: the first line of the message, or the exception's type."""
    if isinstance(error, PointTimeout):
        return str(error)
    first = (str(error).splitlines() or [""])[0].strip()
    return f"{type(error).__name__}: {first}"[:300] if first else type(error).__name__
