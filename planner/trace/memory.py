"""A traced workload's memory against batch, and its largest batch on a GPU.

A step's memory on the meta device is exact up to what the allocator adds (planner/trace/learn.py MemoryModel:
cuBLAS's workspace, the context's own allocations), and grows linearly with the batch (weights, gradients and
optimizer state fixed; activations per sample), so the traced runs of a precision give its line exactly:

    peak(batch) = fixed + per_sample × batch          (least squares over the precision's traced batches)

The largest batch on a GPU of `card_bytes` is where the line, plus the allocator's offset, reaches the share of the
card the reference workloads' measured boundaries reached (`usable`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import TracePayload
from planner.model.memory import least_squares


@dataclass(frozen=True)
class MemoryLine:
    fixed_bytes: float
    per_sample_bytes: float
    batches: int

    def peak(self, batch: int) -> float:
        return self.fixed_bytes + self.per_sample_bytes * batch

    def max_batch(self, card_bytes: float, usable: float, offset_bytes: float) -> int:
        room = usable * card_bytes - offset_bytes - self.fixed_bytes
        return max(0, int(room / self.per_sample_bytes)) if self.per_sample_bytes > 0 else 0


def memory_line(trace: TracePayload, precision: str) -> MemoryLine | None:
    """The precision's line through its traced peaks; None with fewer than two batches."""
    peaks = {r.batch: float(r.memory.peak_bytes) for r in trace.ok_runs(precision) if r.memory}
    if len(peaks) < 2:
        return None
    fixed, per_sample = least_squares(list(peaks), list(peaks.values()))
    return MemoryLine(fixed, per_sample, len(peaks)) if per_sample > 0 else None
