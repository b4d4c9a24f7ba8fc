"""`environment` collector: a fingerprint of the machine, enough to explain a surprising number later."""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Callable
from typing import Any

import torch

from collectors.core.allocator import configured_by_environment
from collectors.core.machine import describe_cpu
from gpuplan_schema.payloads import EnvironmentPayload, GpuInfo

NAME, VERSION = "environment", "2"  # 2: the CPU's family, model and microarchitecture


def collect_environment() -> EnvironmentPayload:
    gpus, absent, driver = describe_gpus()
    return EnvironmentPayload(
        hostname=socket.gethostname(),
        os=_os_name(),
        kernel=platform.release(),
        cpu=describe_cpu(),
        python=platform.python_version(),
        torch=torch.__version__,
        cuda_runtime=torch.version.cuda,
        cudnn=str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
        driver=driver,
        gpus=gpus,
        gpu_absent_reason=absent,
        allocator_config=configured_by_environment(),
    )


def _os_name() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", platform.platform())
    except OSError:
        return platform.platform()


def describe_gpus() -> tuple[list[GpuInfo], str | None, str | None]:
    """(gpus, reason there are none, driver version)."""
    if not torch.cuda.is_available():
        reason = "torch sees no CUDA device" + ("" if torch.version.cuda else " (CPU build of torch)")
        return [], reason, None
    try:
        import pynvml
    except ImportError:
        return _torch_only_gpus("nvidia-ml-py is not installed"), None, None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return _torch_only_gpus(f"NVML failed to start: {e}"), None, None
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        return [_nvml_gpu(pynvml, i) for i in range(torch.cuda.device_count())], None, driver
    finally:
        pynvml.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _torch_only_gpus(why: str) -> list[GpuInfo]:
    return [_torch_only_gpu(i, why) for i in range(torch.cuda.device_count())]


def _torch_only_gpu(index: int, why: str) -> GpuInfo:
    props = torch.cuda.get_device_properties(index)
    nvml_fields = ("sm_clock_max_hz", "sm_clock_hz", "memory_clock_max_hz", "memory_clock_hz", "power_limit_w",
                   "pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max", "ecc_enabled", "mig_enabled",
                   "other_processes")
    return GpuInfo(index=index, name=props.name, memory_bytes=props.total_memory,
                   sm_count=props.multi_processor_count, l2_bytes=getattr(props, "L2_cache_size", None),
                   compute_capability=f"{props.major}.{props.minor}",
                   unavailable={f: why for f in nvml_fields})


def _nvml_gpu(nv: Any, index: int) -> GpuInfo:
    """Read each field on its own so one unsupported query leaves the rest (and says why)."""
    props = torch.cuda.get_device_properties(index)
    h = nv.nvmlDeviceGetHandleByIndex(index)
    missing: dict[str, str] = {}

    def read(field: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except nv.NVMLError as e:
            missing[field] = f"NVML: {e}"
            return None

    mhz = 1e6
    clock = nv.NVML_CLOCK_SM
    mem = nv.NVML_CLOCK_MEM
    sm_max = read("sm_clock_max_hz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, clock) * mhz)
    sm_now = read("sm_clock_hz", lambda: nv.nvmlDeviceGetClockInfo(h, clock) * mhz)
    mem_max = read("memory_clock_max_hz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, mem) * mhz)
    mem_now = read("memory_clock_hz", lambda: nv.nvmlDeviceGetClockInfo(h, mem) * mhz)
    power = read("power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3)
    ecc = read("ecc_enabled", lambda: bool(nv.nvmlDeviceGetCurrentEccMode(h)))
    mig = read("mig_enabled", lambda: bool(nv.nvmlDeviceGetMigMode(h)[0]))
    procs = read("other_processes", lambda: _other_processes(nv, h))
    return GpuInfo(
        index=index, name=_text(nv.nvmlDeviceGetName(h)),
        memory_bytes=read("memory_bytes", lambda: int(nv.nvmlDeviceGetMemoryInfo(h).total)),
        sm_count=props.multi_processor_count, l2_bytes=getattr(props, "L2_cache_size", None),
        compute_capability=f"{props.major}.{props.minor}",
        sm_clock_max_hz=sm_max, sm_clock_hz=sm_now, memory_clock_max_hz=mem_max, memory_clock_hz=mem_now,
        power_limit_w=power,
        pcie_gen=read("pcie_gen", lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h)),
        pcie_gen_max=read("pcie_gen_max", lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h)),
        pcie_width=read("pcie_width", lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h)),
        pcie_width_max=read("pcie_width_max", lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h)),
        ecc_enabled=ecc, mig_enabled=mig, other_processes=procs, unavailable=missing,
    )


def _other_processes(nv: Any, handle: Any) -> int:
    """Processes other than this one holding a context on the GPU (compute and graphics)."""
    pids = {p.pid for p in nv.nvmlDeviceGetComputeRunningProcesses(handle)}
    pids |= {p.pid for p in nv.nvmlDeviceGetGraphicsRunningProcesses(handle)}
    pids.discard(os.getpid())
    return len(pids)

