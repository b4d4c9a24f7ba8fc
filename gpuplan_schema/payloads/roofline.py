"""Payload of the `roofline` document: per-operator times of one workload against the roofs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuplan_schema.payloads.common import Status
from gpuplan_schema.stats import Stat

OpClass = Literal["math-bound", "memory-bound", "latency-bound", "unclassified"]


@dataclass(frozen=True)
class KernelTime:
    """One device kernel (or, on a CPU, the op itself) launched by an op: time and launches per step."""

    name: str
    time_s: float
    calls: float


@dataclass(frozen=True)
class OpRoofline:
    """One aten operator of a profiled step, all its calls summed (per step); see collectors/roofline/op_roofline.py.

    `flops` is None when the op has no FLOP formula. `math_s` and `memory_s` are the times the op
    would take at the roofs (FLOPs / peak of its dtype, bytes / copy bandwidth), `expected_s` the sum
    over its calls of the larger of the two; `efficiency` = expected / measured median.
    """

    name: str
    calls: float
    time_s: Stat
    read_bytes: float
    written_bytes: float
    op_class: OpClass
    flops: float | None = None
    dtype: str | None = None
    math_s: float | None = None
    memory_s: float | None = None
    expected_s: float | None = None
    efficiency: float | None = None
    kernels: list[KernelTime] = field(default_factory=list)

    @property
    def bytes(self) -> float:
        return self.read_bytes + self.written_bytes

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity, FLOP per byte read or written."""
        return self.flops / self.bytes if self.flops is not None and self.bytes else None

    @property
    def lost_s(self) -> float | None:
        """Time spent beyond the roofline's expectation (never negative)."""
        return None if self.expected_s is None else max(0.0, self.time_s.median - self.expected_s)


@dataclass(frozen=True)
class RooflineRoofs:
    """The ceilings the classification used, copied from the machine's ceilings document, and what
    was missing from it (each missing roof is said here, never silently assumed)."""

    source: str
    flops_per_s: dict[str, float] = field(default_factory=dict)   # peak dense matmul per dtype
    memory_bytes_per_s: float | None = None                        # device copy, read + written
    launch_latency_s: float | None = None
    missing: list[str] = field(default_factory=list)


def class_times(ops: list[OpRoofline], unattributed_s: float = 0.0) -> dict[str, float]:
    """Measured seconds per step by class; device time outside any recorded op under "unattributed"."""
    shares: dict[str, float] = {}
    for op in ops:
        shares[op.op_class] = shares.get(op.op_class, 0.0) + op.time_s.median
    if unattributed_s:
        shares["unattributed"] = unattributed_s
    return shares


@dataclass(frozen=True)
class RooflineAtBatch:
    """The same step profiled at one batch (roofline collector 2): what the main batch's fields say, for
    this batch. `variant` is the step's settings as the workloads collector names them: a network with
    convolutions runs its other batches without cuDNN autotuning (`no_cudnn_benchmark`, as the
    workloads collector's batch sweep does; autotuning each new shape costs 5-20 s on an H100)."""

    batch: int
    status: Status
    variant: str = "default"
    reason: str | None = None
    steps: int = 0
    step_s: Stat | None = None
    unattributed_s: float = 0.0
    unmatched_calls: int = 0
    ops: list[OpRoofline] = field(default_factory=list)
    elapsed_s: float = 0.0

    def check(self) -> str | None:
        if self.batch < 1:
            return f"batch is {self.batch}; a profiled batch is at least 1"
        return None

    @property
    def op_time_s(self) -> float:
        return sum(op.time_s.median for op in self.ops)

    def class_time_s(self) -> dict[str, float]:
        return class_times(self.ops, self.unattributed_s)


@dataclass(frozen=True)
class RooflinePayload:
    """Per-operation roofline of one workload at its main configuration (batch, bf16), and (collector
    version 2) at a few other batches in `batches` (main/4 and 2 x main where they fit; empty in
    version 1 documents). `profiled()` lists all of them, the main one included, by batch.

    `timer` says what the op times are: "cuda" is device time of each op's kernels (CUPTI through
    torch.profiler), "cpu" the op's wall time on the CPU. `step_s` is the step timed without the
    profiler; `unattributed_s` is device time per step in kernels launched outside any recorded op.
    """

    workload: str
    source: str
    device: Literal["cuda", "cpu"]
    precision: str
    batch: int
    training: bool
    status: Status
    roofs: RooflineRoofs
    elapsed_s: float
    reason: str | None = None
    scale: str = "reference"
    timer: Literal["cuda", "cpu"] = "cuda"
    steps: int = 0
    step_s: Stat | None = None
    unattributed_s: float = 0.0
    unmatched_calls: int = 0
    ops: list[OpRoofline] = field(default_factory=list)
    batches: list[RooflineAtBatch] = field(default_factory=list)
    variant: str = "default"
    # the workload file's hash, as in its workload document: a changed file is profiled again
    source_sha256: str | None = None

    def profiled(self) -> list[RooflineAtBatch]:
        """Every profiled batch by batch size: the main one (as a RooflineAtBatch) and the others."""
        main = RooflineAtBatch(self.batch, self.status, self.variant, self.reason, self.steps, self.step_s,
                               self.unattributed_s, self.unmatched_calls, self.ops, self.elapsed_s)
        return sorted([main, *self.batches], key=lambda b: b.batch)

    def profiled_at(self, batch: int) -> RooflineAtBatch:
        return next(b for b in self.profiled() if b.batch == batch)

    @property
    def extra_precision(self) -> str:
        """'' for a profile at the precision the roofline collector profiles first (bf16 or fp16 on a GPU, fp32 on a
        CPU), else its precision: a profile taken beside it (tf32, roofline collector 4), which the report names
        apart and the padding advice does not read."""
        return "" if self.device != "cuda" or self.precision in ("bf16", "fp16") else self.precision

    @property
    def op_time_s(self) -> float:
        """Measured time of all recorded ops per step (medians summed)."""
        return sum(op.time_s.median for op in self.ops)

    @property
    def no_flop_formula(self) -> list[str]:
        return [op.name for op in self.ops if op.flops is None]
