"""Row gathers and scatter-adds (`index_select`, `index_add_`: a graph network's message passing) in SM cycles.

CUDA's gather (`vectorized_gather_kernel`) looks each row up by its index, and its scatter-add
(`indexFuncLargeIndex`) adds each element by an atomic: neither is set by its bytes at the copy roof. Measured on an
H200 (benchmarks/gpu_index_add_grid.py, results/h200/diagnostics/newex5-2026-11-28/index-add-grid.json: 262,144 to
4,194,304 destination rows, 1 to 32 edges a row, rows of 128 and 256, bf16 and fp32, random and sorted indices):

- a gather takes GATHER_ROW_CYCLES SM cycles a row whatever its width and dtype up to 1 kB a row (157-163 over the
  28 points: 10.2 ms for 16.8 M rows of 256 B or of 1 kB), its bytes' time where larger;
- a scatter-add takes SCATTER_CYCLES SM cycles an element added, more the more rows it adds (the same destination
  rows and widths: 2.25 at 4 M rows, 3.14 at 16.8 M, 3.45 from 33.5 M in bf16; fp32 0.3 fewer), sorted indices no
  faster (the atomics, not their order, set it): the medians per row count, interpolated in its logarithm and held
  beyond the grid's ends.

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
# SM cycles an element added, by the element's bytes, at each row count of the grid (its medians; the test derives them)
SCATTER_CYCLES = {2: ((1 << 20, 2.26), (1 << 22, 2.25), (1 << 24, 3.14), (1 << 25, 3.45), (1 << 26, 3.47)),
                  4: ((1 << 20, 1.94), (1 << 22, 1.92), (1 << 24, 2.78), (1 << 25, 3.11), (1 << 26, 3.15))}
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
    rows = op.shapes[1][0] if op.shapes[1] else 0
    cycles = scatter_cycles(rows, 2 if ELEMENT.get(op.dtype or "", 4) == 2 else 4)
    return math.prod(op.shapes[2]) * cycles / (sms * clock_hz)


def scatter_cycles(rows: int, element_bytes: int) -> float:
    """SM cycles an element added for a scatter-add of `rows` rows: the grid's, linear in log2(rows) between its row
    counts, its first or last beyond them."""
    table = SCATTER_CYCLES[element_bytes]
    if rows <= table[0][0]:
        return table[0][1]
    for (r0, c0), (r1, c1) in zip(table, table[1:], strict=False):
        if rows <= r1:
            return c0 + (c1 - c0) * math.log2(rows / r0) / math.log2(r1 / r0)
    return table[-1][1]
