"""`ceilings` collector: the hardware roofs every later analysis divides by."""

from __future__ import annotations

import time

import torch

from collectors.ceilings import bandwidth, dispatch, matmul
from collectors.core.device import cpu_model, device_name, pick_device
from gpuplan_schema.payloads import CeilingsPayload
from gpuplan_schema.progress import Progress

NAME, VERSION = "ceilings", "3"  # 3: the host's dispatch speed (collectors/ceilings/dispatch.py)


def l2_bytes(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    return getattr(torch.cuda.get_device_properties(device), "L2_cache_size", None)


def collect_ceilings(progress: Progress, device: torch.device | None = None,
                     dtypes: tuple[str, ...] = matmul.DTYPES) -> CeilingsPayload:
    device = device or pick_device()
    started = time.perf_counter()
    space = matmul.search_space(device)
    # Steps: one per dtype, then memory, host-device, launch latency, dispatch.
    progress.total = len(dtypes) + 4
    results = []
    for dtype in dtypes:
        results.append(matmul.search_dtype(dtype, device, space, on_shape=progress.note))
        progress.advance(f"matmul {dtype}: {results[-1].status}")
    l2 = l2_bytes(device)
    memory = bandwidth.device_memory(device, l2)
    progress.advance("device memory bandwidth")
    links = bandwidth.host_device(device)
    progress.advance("host-device bandwidth")
    latency = bandwidth.launch_latency(device)
    progress.advance("launch latency")
    issue = dispatch.measure_dispatch(device, cpu_model())
    progress.advance(f"dispatch: {issue.op_issue_s.median * 1e6:.1f} µs per tiny op issued")
    return CeilingsPayload(
        device=device.type, device_name=device_name(device), matmul=results, memory=memory,
        host_device=links, launch_latency_s=latency, elapsed_s=time.perf_counter() - started,
        l2_bytes=l2, threads=torch.get_num_threads() if device.type == "cpu" else None, dispatch=issue,
    )
