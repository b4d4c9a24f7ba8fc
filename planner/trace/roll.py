"""torch.roll (Swin's shifted windows) in SM cycles: CUDA's `roll_cuda_kernel` works out each element's source index
with integer division and modulo over the rolled dimensions, so it runs at an element rate set by the SMs'
arithmetic, whatever the dtype, at about a tenth of the copy roof.

Measured on an H200 (benchmarks/gpu_scan_grid.py, results/h200/diagnostics/scan-grid-2026-11-28): a channels-last
[B, H, W, C] rolled by (-3, -3) over (H, W) took 2.77 SM cycles an element (the median of 12 points, 2.4-4.9: the
small ones carry their launch) in bf16 and fp32 alike (0.356 and 0.374 ms for 38.5 M elements), where the trace,
with no profile of it, had timed swin-tiny's rolls by the pooled bytes' figure at 0.7 ms for 3.3 measured.
"""

from __future__ import annotations

from gpuplan_schema.payloads import TracedOp
from planner.trace.kinds import ELEMENT_BYTES

ROLL_CYCLES = 2.77   # SM cycles an element (the grid's median; tests/test_trace_scan.py derives it)


def roll_s(op: TracedOp, sms: int, clock_hz: float) -> float:
    """One call's seconds: its elements at ROLL_CYCLES on every SM (0 where the GPU's SMs or clock are unknown)."""
    if sms <= 0 or clock_hz <= 0:
        return 0.0
    elements = op.read_bytes / max(op.calls, 1) / ELEMENT_BYTES.get(op.dtype or "", 4)
    return elements * ROLL_CYCLES / (sms * clock_hz)
