"""Payload of the `trace` document: one workload's training step traced on the meta device, no GPU (collectors/trace).

A trace folder holds one `trace-<workload>.json` per workload. Each `TraceRun` is one step at a precision and a
batch (the standard profile's: the main batch at every precision, the batch sweep at bf16): every aten op a GPU
would run, aggregated by name, phase, dtype and input shapes (the same layer repeated is one row with its calls),
with FLOPs (None: no formula) and bytes as the roofline collector counts them, the kernels it launches, and the
memory the step holds (each storage rounded to the CUDA allocator's blocks) by category at its peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuplan_schema.payloads.common import Status

Phase = Literal["forward", "backward", "optimizer"]


@dataclass(frozen=True)
class TracedOp:
    """All calls of one op with the same phase, dtype and input shapes (figures are per step, all calls summed)."""

    name: str                         # "aten::mm", as the profiler names it
    phase: Phase
    calls: int
    read_bytes: float
    written_bytes: float
    launches: int                     # kernels it would launch on a GPU (0: a view, an allocation)
    dtype: str | None = None
    shapes: list[list[int]] = field(default_factory=list)   # of its first tensor arguments
    flops: float | None = None        # None: no FLOP formula for this op
    variant: str | None = None        # what sets its kernel apart beside its shapes: "masked" or "causal" (an
                                      # attention), "channels_last" (an NHWC image batch), "native" (a
                                      # training batch norm on ATen's kernels, per-channel NCHW or channels-last,
                                      # not cuDNN's: collectors/trace/batchnorm.py), "persistent" (a cuDNN
                                      # RNN's persistent kernels), "outer:<dim>" (a scan along a dimension
                                      # that is not the innermost: collectors/trace/recorder.py); None: nothing

    def check(self) -> str | None:
        if self.calls < 1 or self.launches < 0 or self.read_bytes < 0 or self.written_bytes < 0:
            return "calls is below 1, or launches or a byte count is negative"
        if self.flops is not None and self.flops < 0:
            return f"flops is {self.flops}; a FLOP count is never negative"
        return None

    @property
    def bytes(self) -> float:
        return self.read_bytes + self.written_bytes


@dataclass(frozen=True)
class TraceMemory:
    """Bytes the step holds at its peak, by what holds them (`gradients` is everything backward allocates: the
    parameters' gradients and backward's own buffers), the live bytes along the step (op index, bytes) and the
    largest single block it allocates."""

    peak_bytes: int
    parameters_bytes: int
    inputs_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    timeline: list[list[int]] = field(default_factory=list)
    largest_bytes: int = 0            # the largest single block the step allocates (fragmentation must fit it)
    reserved_bytes: int = 0           # what the CUDA caching allocator would reserve at its most (collectors/trace/
                                      # allocator.py: live blocks, the holes between them, a new segment); 0: not run
    released_bytes: int = 0           # the same, the allocator returning its empty segments before each new one (as
                                      # when the GPU is full); 0: a trace made before it was replayed so
    capacity_bytes: int = 0           # the least memory the step runs in: the allocator replayed at a capacity, its
                                      # cached segments returned when full, cuDNN's workspaces shrinking to fit
                                      # (collectors/trace/capacity.py); 0: a trace made before it was replayed so
    capacity_released_bytes: int = 0  # the same, the empty segments returned before each new one, full or not

    def check(self) -> str | None:
        parts = (self.parameters_bytes, self.inputs_bytes, self.gradients_bytes, self.optimizer_bytes,
                 self.activations_bytes)
        if min(parts) < 0 or self.peak_bytes < 0:
            return "a byte count is negative"
        if sum(parts) > self.peak_bytes * 1.0001 + 1:
            return f"the parts add up to {sum(parts)} bytes, more than peak_bytes {self.peak_bytes}"
        return None


@dataclass(frozen=True)
class TraceRun:
    """One traced step. `status` is `error` (with `reason`) where the model could not run on the meta device."""

    precision: str
    batch: int
    status: Status
    reason: str | None = None
    ops: list[TracedOp] = field(default_factory=list)
    memory: TraceMemory | None = None
    trace_s: float = 0.0              # the CPU's wall time to trace it
    module_calls: int = 0             # nn.Module calls of the step (each costs the host Python time)

    def check(self) -> str | None:
        if self.batch < 1:
            return f"batch is {self.batch}; a traced batch is at least 1"
        if self.status == "ok" and (self.memory is None or not self.ops):
            return "status is ok but the run has no ops or no memory"
        return None

    @property
    def flops(self) -> float:
        return sum(op.flops or 0.0 for op in self.ops)

    @property
    def launches(self) -> int:
        return sum(op.launches for op in self.ops)

    @property
    def no_formula_bytes_share(self) -> float:
        """The share of the step's bytes moved by ops without a FLOP formula (each is still timed by its bytes)."""
        total = sum(op.bytes for op in self.ops)
        return sum(op.bytes for op in self.ops if op.flops is None) / total if total else 0.0


@dataclass(frozen=True)
class TracePayload:
    workload: str
    source: str                       # built-in, or the workload file
    unit: str
    training: bool
    parameters: int
    main_batch: int
    runs: list[TraceRun]
    elapsed_s: float
    torch_version: str
    tokens_per_sample: int | None = None
    device: Literal["meta"] = "meta"

    def check(self) -> str | None:
        if self.parameters < 0 or self.main_batch < 1:
            return "parameters is negative or main_batch is below 1"
        keys = [(r.precision, r.batch) for r in self.runs]
        if len(keys) != len(set(keys)):
            return "two runs of the same precision and batch"
        return None

    def run(self, precision: str, batch: int) -> TraceRun | None:
        return next((r for r in self.runs if r.precision == precision and r.batch == batch), None)

    def ok_runs(self, precision: str | None = None) -> list[TraceRun]:
        return sorted((r for r in self.runs if r.status == "ok" and precision in (None, r.precision)),
                      key=lambda r: (r.precision, r.batch))
