"""PyTorch's CUDA caching allocator with expandable segments, switched on for a block.

A large out-of-memory boundary can be set by fragmentation rather than by what is allocated: with
the default allocator a freed block is reused only by a request that fits inside it, so a 34.04 GiB
request fails beside a cached 33.95 GiB block (conv-rollout tf32 on an H100, batch 8714: 37.3 GiB
allocated, 34.0 GiB reserved and unused, 7.2 GiB free). Expandable segments map physical pages into
one growing virtual range, so freed memory serves a request of any size: the boundary becomes what
is allocated. PyTorch reads the setting at each new segment, so it can be switched for a block once
the cache is empty (PyTorch's own test_cuda_expandable_segments.py switches it the same way).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator

import torch

from gpuplan_schema.payloads.workloads import EXPANDABLE  # noqa: F401 - the setting's one name, used here

ENV_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def configured_by_environment() -> str | None:
    """The allocator settings this process was started with, as the environment gave them."""
    return next((f"{name}={os.environ[name]}" for name in ENV_VARS if os.environ.get(name)), None)


def expandable_by_environment() -> bool:
    return any("expandable_segments:true" in os.environ.get(name, "").replace(" ", "").lower()
               for name in ENV_VARS)


def _set(settings: str) -> None:
    setter = getattr(torch._C, "_accelerator_setAllocatorSettings", None)
    if setter is not None:
        setter(settings)
        return
    with warnings.catch_warnings():  # older torch: the same call under its earlier, now deprecated name
        warnings.simplefilter("ignore", FutureWarning)
        torch.cuda.memory._set_allocator_settings(settings)


@contextlib.contextmanager
def expandable_segments(device: torch.device, enabled: bool = True) -> Iterator[None]:
    """Expandable segments for new allocations in the block (a CPU, or `enabled` False: nothing changes).
    The cache is emptied on entry and exit so that no segment of the other kind is reused."""
    if not enabled or device.type != "cuda":
        yield
        return
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    _set("expandable_segments:True")
    try:
        yield
    finally:
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        _set(f"expandable_segments:{expandable_by_environment()}")
