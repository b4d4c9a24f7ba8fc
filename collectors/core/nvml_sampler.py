"""Background NVML sampling of utilisation, power, SM clock and memory used while a loop is timed."""

from __future__ import annotations

import threading
from typing import Any

from gpuplan_schema.payloads import DeviceSamples
from gpuplan_schema.stats import summarize

INTERVAL_S = 0.02


class NvmlSampler:
    """`with NvmlSampler(0) as s: ...` then `s.result()`; does nothing where NVML is missing."""

    def __init__(self, index: int | None):
        self.index = index
        self.util: list[float] = []
        self.power: list[float] = []
        self.sm_clock_mhz: list[float] = []   # read by benchmarks/step_clocks.py; not in the document
        self.max_used: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nv: Any = None

    def __enter__(self) -> NvmlSampler:
        if self.index is None:
            return self
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:  # NVML is optional: no library, no driver access
            return self
        self._nv = pynvml
        self._handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        nv, h = self._nv, self._handle
        while not self._stop.wait(INTERVAL_S):
            try:
                self.util.append(nv.nvmlDeviceGetUtilizationRates(h).gpu / 100)
                self.power.append(nv.nvmlDeviceGetPowerUsage(h) / 1e3)
                self.sm_clock_mhz.append(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
                used = int(nv.nvmlDeviceGetMemoryInfo(h).used)
                self.max_used = max(used, self.max_used or 0)
            except nv.NVMLError:
                return

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._nv.nvmlShutdown()

    def result(self) -> DeviceSamples | None:
        if not self.util:
            return None
        return DeviceSamples(utilization=summarize(self.util), power_w=summarize(self.power))
