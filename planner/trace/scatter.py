"""Row gathers and scatter-adds (`index_select`, `index_add_`: a graph network's message passing) in SM cycles.

CUDA's gather (`vectorized_gather_kernel`) looks each row up by its index, and its scatter-add
(`indexFuncLargeIndex`) adds each element by an atomic: neither is set by its bytes at the copy roof. Measured on an
H200 (benchmarks/gpu_index_add_grid.py, results/h200/diagnostics/newex5-2026-11-28/index-add-grid.json: 262,144 to
4,194,304 destination rows, 1 to 32 edges a row, rows of 128 and 256, bf16 and fp32, random and sorted indices):

- a gather takes GATHER_ROW_CYCLES SM cycles a row whatever its width and dtype up to 1 kB a row (157-163 over the
  28 points: 10.2 ms for 16.8 M rows of 256 B or of 1 kB), its bytes' time where larger;
- a scatter-add takes SCATTER_CYCLES SM cycles an element added: 3.12 for 2-byte elements (bf16; 2.2-3.5 over 14
  points), 2.74 for 4-byte ones (fp32; 1.8-3.2), sorted indices no faster (the destination rows' atomics, not
  their order, set it).

graph-sage (examples/graph_sage.py) on the same H200 spent 230 of its 299 ms bf16 step in five scatter-adds and 50
in five gathers, where the trace, with no profile of either kind, had timed them at the pooled bytes' figure (53 ms
the whole step).
"""

from __future__ import annotations

import math

from gpuplan_schema.payloads import TracedOp

GATHER = "index_select"
SCATTER = "index_add"
GATHER_ROW_CYCLES = 159.0
SCATTER_CYCLES = {2: 3.12, 4: 2.74}   # by the element's bytes (the grid's medians; tests/test_trace_scatter.py)
ELEMENT = {"bf16": 2, "fp16": 2, "fp32": 4}


def gather_s(op: TracedOp, sms: int, clock_hz: float) -> float:
    """One call's seconds: its index's rows at GATHER_ROW_CYCLES on every SM (0: the shapes or the GPU unknown)."""
    if sms <= 0 or clock_hz <= 0 or len(op.shapes) < 2 or not op.shapes[1]:
        return 0.0
    return op.shapes[1][0] * GATHER_ROW_CYCLES / (sms * clock_hz)


def scatter_s(op: TracedOp, sms: int, clock_hz: float) -> float:
    """One call's seconds: its source's elements at SCATTER_CYCLES on every SM."""
    if sms <= 0 or clock_hz <= 0 or len(op.shapes) < 3:
        return 0.0
    cycles = SCATTER_CYCLES[2 if ELEMENT.get(op.dtype or "", 4) == 2 else 4]
    return math.prod(op.shapes[2]) * cycles / (sms * clock_hz)
