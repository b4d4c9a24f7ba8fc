"""Memory ceilings: device memory bandwidth, host↔device transfers and launch latency."""

from __future__ import annotations

from collections.abc import Callable

import torch

from collectors.core.timing import CPU_PLAN, TimingPlan, time_callable
from gpuplan_schema.payloads import BandwidthCeiling
from gpuplan_schema.stats import Stat

GPU_PLAN = TimingPlan(warmup_s=0.05, sample_s=0.01, min_samples=9, max_samples=30, budget_s=0.6,
                      target_rel_iqr=0.01)
LAUNCH_PLAN = TimingPlan(warmup_s=0.05, sample_s=0.005, min_samples=9, max_samples=30, budget_s=0.5)
L2_MULTIPLE = 16          # device buffers are at least this many times the L2
MIN_GPU_BUFFER = 1 << 30  # and at least 1 GiB
CPU_BUFFER = 256 << 20    # far past any CPU's last-level cache, small enough for a laptop
TRANSFER_BYTES = 256 << 20


def buffer_bytes(device: torch.device, l2_bytes: int | None) -> int:
    if device.type == "cpu":
        return CPU_BUFFER
    size = max(MIN_GPU_BUFFER, L2_MULTIPLE * (l2_bytes or 0))
    free, _ = torch.cuda.mem_get_info(device)
    return min(size, free // 4)


def device_memory(device: torch.device, l2_bytes: int | None) -> list[BandwidthCeiling]:
    """copy (read + write counted), read-only (a sum) and write-only (a fill) over large buffers."""
    size = buffer_bytes(device, l2_bytes)
    plan = GPU_PLAN if device.type == "cuda" else CPU_PLAN
    results = [_bandwidth(name, fn, moved, device, plan, size)
               for name, (fn, moved) in _memory_ops(size, device).items()]
    if device.type == "cuda":
        torch.cuda.empty_cache()  # the buffers died with the closures above
    return results


def _memory_ops(size: int, device: torch.device) -> dict[str, tuple[Callable[[], object], int]]:
    """name → (operation, bytes it moves) over two buffers of `size` bytes of random floats."""
    src = torch.rand(size // 4, device=device)
    dst = torch.empty_like(src)
    scratch = torch.empty((), device=device)
    return {
        "copy": (lambda: dst.copy_(src), 2 * size),
        "read": (lambda: torch.sum(src, dim=0, out=scratch), size),
        "write": (lambda: dst.fill_(1.5), size),
    }


def host_device(device: torch.device) -> list[BandwidthCeiling]:
    """Host→device and device→host copies of 256 MiB, from pinned and from pageable host memory."""
    names = ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable")
    if device.type != "cuda":
        return [BandwidthCeiling(name, "skipped", reason="no GPU: there is no host-device link") for name in names]
    n = TRANSFER_BYTES // 4
    gpu = torch.rand(n, device=device)
    results = []
    for pinned in (True, False):
        host = torch.rand(n, pin_memory=pinned)
        kind = "pinned" if pinned else "pageable"
        h2d = lambda h=host, p=pinned: gpu.copy_(h, non_blocking=p)  # noqa: E731 - bind this loop's values
        d2h = lambda h=host, p=pinned: h.copy_(gpu, non_blocking=p)  # noqa: E731
        results.append(_bandwidth(f"h2d_{kind}", h2d, TRANSFER_BYTES, device, GPU_PLAN, TRANSFER_BYTES))
        results.append(_bandwidth(f"d2h_{kind}", d2h, TRANSFER_BYTES, device, GPU_PLAN, TRANSFER_BYTES))
    order = {name: i for i, name in enumerate(names)}
    return sorted(results, key=lambda r: order[r.name])


def _bandwidth(name: str, fn: Callable[[], object], moved: int, device: torch.device, plan: TimingPlan,
               size: int) -> BandwidthCeiling:
    try:
        seconds: Stat = time_callable(fn, device, plan)
    except RuntimeError as e:
        return BandwidthCeiling(name, "error", reason=str(e).splitlines()[0], buffer_bytes=size)
    return BandwidthCeiling(name, "ok", bytes_per_s=seconds.inverted(float(moved)), buffer_bytes=size)


def launch_latency(device: torch.device) -> Stat:
    """Seconds per launch of a one-element kernel queued back to back: the floor under any op."""
    x = torch.zeros(1, device=device)
    return time_callable(lambda: x.add_(1.0), device, LAUNCH_PLAN)
