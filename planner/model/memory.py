"""Memory model: peak memory against batch, fitted on the source, and the largest batch on a target.

    peak(batch) = fixed + per_sample × batch

fitted by least squares over every plain run of a precision (timed points and the boundary search's
probes). `fixed` is the weights, gradients and optimizer state; `per_sample` the activations. No
sequence² term: gpt-small's attention is `scaled_dot_product_attention`, whose flash and
memory-efficient kernels keep no seq × seq matrix (the sequence sweep's memory grows linearly).

The peak a program can reach is less than the card: the CUDA context, cuBLAS/cuDNN workspaces and the
caching allocator's fragmentation take the rest. The source's measured boundary says how much:
usable = peak(max_batch) as a fraction of the card's datasheet memory. A target is given the same
fraction of its own memory (docs/history.md, "Usable memory"), and the
recommended batch keeps SAFETY_MARGIN below the predicted boundary.

A fit is made per allocator whose boundary was measured (collectors/core/allocator.py). With PyTorch's
default allocator, fragmentation is part of the usable fraction, and it is not the same from one
collection to the next; with expandable segments what is allocated sets the boundary, and collections
agree (docs/measured.md, "Fragmentation sets some boundaries").
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import Allocator, WorkloadPayload
from planner.model.performance import PLAIN_VARIANTS

SAFETY_MARGIN = 0.05
ASSUMED_USABLE = 0.90  # where the source's boundary was not measured (quick profile, capped search)


@dataclass(frozen=True)
class MemoryFit:
    workload: str
    precision: str
    fixed_bytes: float
    per_sample_bytes: float
    points: int
    worst_residual: float              # the largest |measured − fitted| / measured over the points
    source_max_batch: int | None       # the measured boundary, where found
    usable_fraction: float             # of the source card's datasheet memory
    usable_measured: bool
    allocator: Allocator = "default"   # the allocator of the boundary that set usable_fraction

    def peak(self, batch: int) -> float:
        return self.fixed_bytes + self.per_sample_bytes * batch

    def max_batch(self, memory_bytes: int) -> int:
        return max(0, int((self.usable_fraction * memory_bytes - self.fixed_bytes) / self.per_sample_bytes))

    def safe_batch(self, memory_bytes: int) -> int:
        return int(self.max_batch(memory_bytes) * (1 - SAFETY_MARGIN))


def memory_points(payload: WorkloadPayload, precision: str) -> dict[int, float]:
    """Peak allocated bytes by batch (the highest reading of a batch) over the plain runs."""
    peak: dict[int, float] = {}
    for p in payload.points:
        if (p.precision == precision and p.status == "ok" and p.seq_len is None and p.memory
                and p.variant in PLAIN_VARIANTS and p.memory.peak_allocated_bytes):
            peak[p.batch] = max(peak.get(p.batch, 0.0), float(p.memory.peak_allocated_bytes))
    return peak


def fit_memory(payload: WorkloadPayload, precision: str, card_bytes: int,
               allocator: Allocator = "default") -> MemoryFit | None:
    """The line through the precision's memory readings, its usable memory from the boundary measured with
    `allocator`; None with fewer than two batches."""
    peak = memory_points(payload, precision)
    if len(peak) < 2:
        return None
    fixed, per_sample = least_squares(list(peak), list(peak.values()))
    if per_sample <= 0:
        return None
    worst = max(abs(m - (fixed + per_sample * b)) / m for b, m in peak.items())
    boundary = payload.boundary(precision, allocator)
    if boundary is not None and not (boundary.status == "ok" and boundary.max_batch and not boundary.capped):
        boundary = None
    if boundary is not None:
        usable = (fixed + per_sample * boundary.max_batch) / card_bytes  # type: ignore[operator]
    else:
        usable = ASSUMED_USABLE
    return MemoryFit(payload.workload, precision, fixed, per_sample, len(peak), worst,
                     boundary.max_batch if boundary else None, usable, boundary is not None, allocator)


def least_squares(xs: list[int], ys: list[float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx, slope
