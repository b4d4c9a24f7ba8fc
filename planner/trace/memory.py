"""A traced workload's memory against batch, and its largest batch on a GPU.

A step's memory on the meta device is exact up to what the allocator adds (planner/trace/learn.py MemoryModel:
cuBLAS's workspace, the context's own allocations), and grows linearly with the batch (weights, gradients and
optimizer state fixed; activations per sample), so the traced runs of a precision give its line exactly:

    peak(batch) = fixed + per_sample × batch          (least squares over the precision's traced batches)

The largest batch on a GPU of `card_bytes` is where the line, plus the allocator's offset and room for its largest
block (fragmentation), reaches the share of the card the reference workloads' measured boundaries reached.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import TracePayload
from planner.model.memory import least_squares

# The lines are drawn through the runs that hold at most this (where there are two): the catalog's largest card
# has 192 GB, and a replayed reservation is not linear across sizes no GPU has (nanoGPT's at batch 1,024 and 2,048,
# 0.9 and 1.8 TB, pulled its line 4.6 GB above its own replay at the H100's boundary, 76).
FIT_BYTES = 256 << 30
REPLAYS = ("kept", "lesser", "capacity", "job")   # the replays a boundary may read (MemoryLine.reserved_lines)


@dataclass(frozen=True)
class MemoryLine:
    fixed_bytes: float
    per_sample_bytes: float
    batches: int
    largest_fixed: float = 0.0       # the largest single block, against batch too
    largest_per_sample: float = 0.0
    reserved_fixed: float = 0.0      # what the caching allocator reserves (collectors/trace/allocator.py), against
    reserved_per_sample: float = 0.0  # batch; 0: a trace made before it was replayed
    released_fixed: float = 0.0      # the same with its empty segments returned before each new one (allocator.py);
    released_per_sample: float = 0.0  # 0: a trace made before that replay
    capacity_fixed: float = 0.0      # the least memory the step runs in, the allocator replayed at a capacity
    capacity_per_sample: float = 0.0  # (collectors/trace/capacity.py); 0: a trace made before that replay
    capacity_released_fixed: float = 0.0      # the same, its empty segments returned before each new one
    capacity_released_per_sample: float = 0.0

    @property
    def replayed(self) -> bool:
        return self.reserved_per_sample > 0

    def peak(self, batch: int) -> float:
        return self.fixed_bytes + self.per_sample_bytes * batch

    def largest(self, batch: int) -> float:
        return self.largest_fixed + self.largest_per_sample * batch

    def reserved_lines(self, replay: str = "kept") -> list[tuple[float, float]]:
        """(fixed, per sample) of the replayed reservations a boundary reads: the allocator keeping its empty
        segments ("kept"), returning them ("released"), or either, whichever fits more ("lesser"); or the least
        capacity the step runs in, cuDNN's workspaces in it, either way ("capacity"), or keeping its segments alone
        ("job": a job started at the batch, as each boundary probe is since workloads collector 8; returning empty
        segments has no counterpart on a GPU); the kept one where the trace has not the replay asked for (for
        "capacity": "lesser")."""
        kept = (self.reserved_fixed, self.reserved_per_sample)
        released = (self.released_fixed, self.released_per_sample)
        if replay == "job" and self.capacity_per_sample > 0:
            return [(self.capacity_fixed, self.capacity_per_sample)]
        if replay == "capacity" and self.capacity_per_sample > 0:   # either, whichever fits more (as "lesser")
            return [(self.capacity_fixed, self.capacity_per_sample)] + \
                ([(self.capacity_released_fixed, self.capacity_released_per_sample)]
                 if self.capacity_released_per_sample > 0 else [])
        if replay == "kept" or self.released_per_sample <= 0:
            return [kept]
        return [released] if replay == "released" else [kept, released]

    def max_batch(self, card_bytes: float, usable: float, offset_bytes: float, fragmentation: float = 0.0,
                  replay: str = "kept") -> int:
        """The largest batch whose peak, the allocator's offset and `fragmentation` times its largest block's
        per-sample part fit `usable` of the card: a caching allocator fails when no free segment holds the next
        large block, however much is free in all (gpt-small's logits, nanoGPT's: the measured boundaries fall short
        by about one of them). A block that does not grow with the batch (an embedding table) is allocated once,
        before the step's, and takes no such room. A replayed trace reads its replayed reservation (`replay`)."""
        if self.replayed:  # the allocator's segments replayed: its holes counted, no room to guess
            room = usable * card_bytes - offset_bytes
            return max(_fits(room - fixed, slope) for fixed, slope in self.reserved_lines(replay))
        room = usable * card_bytes - offset_bytes - self.fixed_bytes
        return _fits(room, self.per_sample_bytes + fragmentation * self.largest_per_sample)

    def needed(self, batch: int, replay: str = "kept") -> float:
        """The bytes the allocator needs at `batch`: its replayed reservation (`replay`), else the live peak."""
        if not self.replayed:
            return self.peak(batch)
        return min(fixed + slope * batch for fixed, slope in self.reserved_lines(replay))


def _fits(room: float, slope: float) -> int:
    return max(0, int(room / slope)) if slope > 0 else 0


def memory_line(trace: TracePayload, precision: str) -> MemoryLine | None:
    """The precision's line through its traced peaks (and largest blocks, and replayed reservations); None with fewer
    than two batches."""
    runs = {r.batch: r.memory for r in trace.ok_runs(precision) if r.memory}
    within = {b: m for b, m in runs.items() if m.peak_bytes <= FIT_BYTES}
    runs = within if len(within) >= 2 else runs
    if len(runs) < 2:
        return None
    batches = list(runs)

    def line(part: str) -> tuple[float, float]:
        values = [float(getattr(m, part)) for m in runs.values()]
        return least_squares(batches, values) if all(values) else (0.0, 0.0)
    fixed, per_sample = line("peak_bytes")
    if per_sample <= 0:
        return None
    return MemoryLine(fixed, per_sample, len(runs), *line("largest_bytes"), *line("reserved_bytes"),
                      *line("released_bytes"), *line("capacity_bytes"), *line("capacity_released_bytes"))
