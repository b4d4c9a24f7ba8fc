"""A scan along an outer dimension (a cumsum over the tokens of [tokens, experts]: a router's slot counts) in SM
cycles: CUDA runs it as ATen's outer-dimension scan (`tensor_kernel_scan_outer_dim`), each thread one column stepping
through the scanned dimension, so its time is that dimension's length times one dependent step, whatever its bytes.

Measured on an H200 (benchmarks/gpu_scan_grid.py, results/h200/diagnostics/scan-grid-2026-11-28): cumsum over dim 0
of [N, C] took N steps of 310 SM cycles (the median; the points 0.6-2.4x it) from 8 to 64 columns and 725
(0.4-1.35x) from 512 to 65,536, in int64, fp32 and bf16 (bf16's few columns the fastest), N from 4,096 to 65,536.
moe-lm's [65,536, 8] int64 routing cumsum: 10.1 ms a call on the grid, 0.154 µs a row, where its bytes at the copy
roof are 1 µs; in its own H200 profile 11.9 ms a call, 95 ms of a 316 ms step, which the trace had timed 0.03 ms.
benchmarks/scan_fit.py derives the two figures from the grid (tests/test_trace_scan.py checks the constants are its
fit). An innermost scan runs a parallel kernel at about its bytes' rate: not timed here.
"""

from __future__ import annotations

import math

from gpuplan_schema.payloads import TracedOp

OUTER = "outer:"            # TracedOp.variant of an outer-dimension scan: "outer:<dim>" (collectors/trace/recorder.py)
MANY_COLUMNS = 256          # between the grid's 64 (the few columns' step) and 512 (the many's)
CYCLES_FEW = 310.0          # SM cycles a step with fewer columns (benchmarks/scan_fit.py)
CYCLES_MANY = 725.0         # with MANY_COLUMNS and more


def outer_scan(op: TracedOp) -> tuple[int, int] | None:
    """(the scanned dimension's length, the columns scanned alongside) of an outer-dimension scan; None otherwise."""
    if not (op.variant or "").startswith(OUTER) or not op.shapes:
        return None
    shape, dim = op.shapes[0], int(op.variant[len(OUTER):])   # type: ignore[index]
    if dim >= len(shape):
        return None
    return shape[dim], math.prod(shape) // max(1, shape[dim])


def scan_cycles(columns: int) -> float:
    return CYCLES_MANY if columns >= MANY_COLUMNS else CYCLES_FEW


def scan_s(op: TracedOp, clock_hz: float) -> float:
    """One call's seconds: its dependent steps at the GPU's clock (0 where the clock is unknown or not a scan)."""
    scan = outer_scan(op)
    if scan is None or clock_hz <= 0:
        return 0.0
    length, columns = scan
    return length * scan_cycles(columns) / clock_hz
