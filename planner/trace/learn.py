"""Everything a trace-only plan learns from one measured reference GPU (results/h100-80gb, results/h200): the per-op
efficiency (efficiency.py, from the roofline profiles), the host's cost per aten call, how the GPU's and the host's
times join, fp32's matmul speed (no profile runs fp32), torch.compile's effect and the memory the allocator adds and
leaves usable. Each from the reference workloads' committed measurements; `leave_out` learns as if one workload had
not been measured (benchmarks/trace_leave_one_out.py), which is how the bands are calibrated (planner/trace/loo.py).

- host: a least squares of the measured issue time (`host_issue_s`) on the trace's calls per phase and its module
  calls, each aten call at least the dispatch benchmark's cost of issuing one op (and each kernel an op launches
  beyond one a call, a cuDNN RNN's per time step, LIBRARY_LAUNCH times that cost: predict.py), over the training
  steps whose issue time is the host's own: those the host set (GPU busy under HOST_SET of the issue time), and those
  that launch fewer kernels than CUDA's launch queue holds (QUEUE) and do not synchronise inside (`step_syncs` 0). The
  issue time is measured from an idle GPU, so only a step that fills the queue waits for the GPU while issuing;
  taking those steps too (dlrm-small's, BERT's at large batches) brought the held-out median from 13.9 % to 12.7 %
  (H100) and 15.5 % to 14.2 % (H200). An inference step's calls cost the dispatch benchmark's measured issue time
  of one op (ceilings.json), which no reference training step can teach;
- sharpness (how the GPU's and the host's times join, predict.py), fp32_scale: grids, each minimising the squared
  log error of the predicted plain steps (every plain point; fp32's points for its matrix products' scale: its
  convolutions' are measured, efficiency.FP32_CONV);
- compile: a compiled step is its eager prediction with the ops of the matmul kinds kept, the others × `fused`
  (fusion removes their memory traffic) and the host × `host` (a graph issues fewer calls), both from a grid over
  the measured compiled/eager pairs; a native batch norm's per-channel excess (plane.py) is dropped first (Inductor
  lowers batch norm to reductions of its own, not ATen's one block per channel), and so are the convolutions' bias
  adds (Inductor peels the bias off a convolution and fuses its add into the next pointwise kernel:
  torch/_inductor/kernel/conv.py; conv-rollout's compiled step was predicted +108 % with them kept);
- memory: the allocator's own bytes (`offset`: the context's allocations; cuBLAS's workspaces are traced since
  collectors/trace/workspace.py) = median of measured peak − traced peak; the room fragmentation takes
  (`fragmentation`, in largest blocks: a grid), which of the replays sets a boundary (`replay`: the allocator keeping
  its empty segments, or the lesser of that and returning them, collectors/trace/allocator.py; or the least capacity
  the step runs in, cuDNN's workspaces shrinking to fit, either way, collectors/trace/capacity.py) and the usable
  share of the card (`usable`: what the replay needs, or the traced peak and that room, with the offset, at the
  measured boundary over the memory its search had, median over the workloads and precisions whose boundary was
  found) minimising the boundaries' squared log error. The memory a search had is the card less what other
  processes held on it (planner/trace/boundary.py).
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, replace

import numpy as np

from gpuplan_schema.payloads import TracePayload, TraceRun, WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.model.split import machine_rooflines
from planner.specs import match_gpu
from planner.trace.boundary import others_during
from planner.trace.efficiency import FP32_CONV, Efficiency, Fp32Scale, fit_efficiency
from planner.trace.kinds import Roofs
from planner.trace.memory import REPLAYS, MemoryLine, memory_line
from planner.trace.predict import (
    LIBRARY_LAUNCH,
    PHASES,
    HostModel,
    StepTime,
    extra_launches,
    phase_calls,
    pipeline,
    predict_step,
)
from planner.trace.training import build_rows, roofs_of

PLAIN = ("default", "no_cudnn_benchmark")
HOST_SET = 0.7
QUEUE = 1024      # kernels CUDA queues before a launch blocks the host (its default launch queue)
SHARPNESS = (1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 12.0)
FP32_SCALES = tuple(0.1 + i / 20 for i in range(39))
FUSED = tuple(i / 20 for i in range(4, 21))
COMPILED_HOST = (0.25, 0.5, 0.75, 1.0, 1.25)
FRAGMENTATION = (0.0, 0.5, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class CompileModel:
    fused: float = 1.0
    host: float = 1.0

    def step_s(self, eager: StepTime, sharpness: float) -> float:
        kept = (replace(p, gpu_s=p.matmul_s - p.bias_s - p.padded_s + self.fused * (p.gpu_s - p.matmul_s - p.plane_s),
                        host_s=p.host_s * self.host) for p in eager.phases)
        return pipeline(tuple(kept), sharpness)


@dataclass(frozen=True)
class MemoryModel:
    offset_bytes: float
    usable: float             # of the card's memory, at the default allocator's boundary
    fragmentation: float = 0.0  # the room kept free for the largest block, in largest blocks (memory.py)
    replay: str = "kept"      # which replayed reservation sets the boundary (memory.py REPLAYS)

    def max_batch(self, line: MemoryLine, card_bytes: float, others_bytes: float = 0.0) -> int:
        """On a card of `card_bytes` of which other processes hold `others_bytes` (boundary.py; 0: a job alone)."""
        return line.max_batch(card_bytes, self.usable, self.offset_bytes + others_bytes, self.fragmentation,
                              self.replay)


@dataclass(frozen=True)
class GpuModel:
    machine: str
    gpu: str
    roofs: Roofs
    efficiency: Efficiency
    host: HostModel
    fp32_scale: Fp32Scale
    compile: CompileModel
    memory: MemoryModel

    def step(self, run: TraceRun, host: HostModel | None = None) -> StepTime:
        return predict_step(run, self.efficiency, self.roofs, host or self.host, self.fp32_scale)


@dataclass(frozen=True)
class Measured:
    """A measured point of a reference workload beside its traced run."""

    workload: WorkloadPayload
    point: WorkloadPoint
    run: TraceRun


def measured_points(machine: MachineResults, traces: dict[str, TracePayload], leave_out: str | None = None,
                    variants: tuple[str, ...] = PLAIN) -> list[Measured]:
    out = []
    for w in machine.workloads:
        if w.workload == leave_out or w.workload not in traces:
            continue
        for p in w.points:
            run = traces[w.workload].run(p.precision, p.batch)
            if p.variant in variants and p.status == "ok" and p.step_s and p.seq_len is None and p.sweep != "probe" \
                    and run is not None and run.status == "ok":
                out.append(Measured(w, p, run))
    return out


def fit_host(points: list[Measured], floor_s: float = 0.0) -> HostModel:
    """Non-negative least squares of the issue time, relative, on the calls per phase and a constant, each aten call
    costing at least `floor_s` (the dispatch benchmark's cost to issue one op: the issue times alone cannot tell the
    phases apart, and without the floor the fit gave a backward call 1 µs, below what issuing any op costs)."""
    rows = [m for m in points if m.point.host_issue_s and m.point.gpu_busy_s is not None and m.workload.training
            and (m.point.gpu_busy_s < HOST_SET * m.point.host_issue_s.median
                 or m.point.step_syncs == 0 and sum(op.launches for op in m.run.ops) < QUEUE)]
    floors = [floor_s] * (len(PHASES) - 1) + [0.0]   # per phase ("modules": Python, no launch of its own)
    if len(rows) < 4:
        return HostModel({p: max(2e-5, f) for p, f in zip(PHASES, floors, strict=True)}, 0.0)
    calls = [phase_calls(m.run) for m in rows]
    x = np.array([[c.get(p, 0) for p in PHASES] + [1.0] for c in calls], dtype=float)
    y = np.array([m.point.host_issue_s.median for m in rows])  # type: ignore[union-attr]
    launched = np.array([sum(extra_launches(m.run).values()) for m in rows]) * floor_s * LIBRARY_LAUNCH  # predict.py's
    y_left = y - x[:, :len(PHASES)] @ np.array(floors) - launched
    keep = list(range(x.shape[1]))
    while True:
        coef, *_ = np.linalg.lstsq(x[:, keep] / y[:, None], y_left / y, rcond=None)
        if (coef >= 0).all() or len(keep) == 1:
            break
        keep.pop(int(np.argmin(coef)))
    full = dict.fromkeys(range(x.shape[1]), 0.0) | {k: max(0.0, float(c)) for k, c in zip(keep, coef, strict=True)}
    return HostModel({p: full[i] + floors[i] for i, p in enumerate(PHASES)}, full[len(PHASES)])


def _log_error(pred: float, measured: float) -> float:
    return math.log(pred / measured) ** 2 if pred > 0 and measured > 0 else 0.0


def fit_sharpness(points: list[Measured], steps: list[StepTime]) -> float:
    def error(sharpness: float) -> float:
        return sum(_log_error(pipeline(s.phases, sharpness), m.point.step_s.median)  # type: ignore
                   for m, s in zip(points, steps, strict=True))
    return min(SHARPNESS, key=error)


def fit_fp32(points: list[Measured], efficiency: Efficiency, roofs: Roofs, host: HostModel) -> Fp32Scale:
    """fp32's matrix products' slowdown (Fp32Scale.gemm) from the measured fp32 steps, a grid; the convolutions'
    are measured, not learned (efficiency.FP32_CONV)."""
    fp32 = [m for m in points if m.point.precision == "fp32"]
    if not fp32:
        return FP32_CONV

    def error(gemm: float) -> float:
        scale = replace(FP32_CONV, gemm=gemm)
        return sum(_log_error(predict_step(m.run, efficiency, roofs, host, scale).step_s, m.point.step_s.median)
                   for m in fp32)  # type: ignore[union-attr]
    return replace(FP32_CONV, gemm=min(FP32_SCALES, key=error))


def compile_pairs(machine: MachineResults, traces: dict[str, TracePayload], leave_out: str | None
                  ) -> list[tuple[Measured, float]]:
    """(the eager point beside its compiled twin, the compiled step) for every compiled point measured."""
    eager = {(m.workload.workload, m.point.precision, m.point.batch): m
             for m in measured_points(machine, traces, leave_out)}
    out = []
    for c in measured_points(machine, traces, leave_out, ("compile",)):
        twin = eager.get((c.workload.workload, c.point.precision, c.point.batch))
        if twin:
            out.append((twin, c.point.step_s.median))  # type: ignore[union-attr]
    return out


def fit_compile(pairs: list[tuple[Measured, float]], model: GpuModel) -> CompileModel:
    if not pairs:
        return CompileModel()
    eager = [model.step(m.run) for m, _ in pairs]

    def error(c: CompileModel) -> float:
        return sum(_log_error(c.step_s(e, model.host.sharpness), t) for e, (_, t) in zip(eager, pairs, strict=True))
    return min((CompileModel(f, h) for f, h in itertools.product(FUSED, COMPILED_HOST)), key=error)


def _boundaries(machine: MachineResults, traces: dict[str, TracePayload], leave_out: str | None
                ) -> list[tuple[MemoryLine, int, float]]:
    """(the traced memory line, the measured largest batch, what other processes held on the GPU during its search:
    boundary.py) of every boundary found with the default allocator."""
    out = []
    for w in machine.workloads:
        if w.workload == leave_out or w.workload not in traces:
            continue
        for b in w.default_boundaries:
            line = memory_line(traces[w.workload], b.precision)
            if b.status == "ok" and b.max_batch and not b.capped and line:
                out.append((line, b.max_batch, others_during(w, b)))
    return out


def fit_memory(machine: MachineResults, traces: dict[str, TracePayload], leave_out: str | None,
               card_bytes: int) -> MemoryModel:
    offsets = [m.point.memory.peak_allocated_bytes - m.run.memory.peak_bytes
               for m in measured_points(machine, traces, leave_out)
               if m.point.memory and m.point.memory.peak_allocated_bytes and m.run.memory]
    offset = statistics.median(offsets) if offsets else 0.0
    found = _boundaries(machine, traces, leave_out)
    if not found:
        return MemoryModel(offset, 0.9)

    def at(fragmentation: float, replay: str) -> tuple[float, MemoryModel]:
        usable = statistics.median((line.needed(b, replay) + offset + others + (0 if line.replayed else fragmentation)
                                    * line.largest_per_sample * b) / card_bytes for line, b, others in found)
        model = MemoryModel(offset, usable, fragmentation, replay)
        return sum(math.log(max(1, model.max_batch(line, card_bytes, others)) / b) ** 2
                   for line, b, others in found), model
    return min((at(f, r) for f in FRAGMENTATION for r in REPLAYS), key=lambda t: t[0])[1]


def learn_gpu(machine: MachineResults, traces: dict[str, TracePayload], leave_out: str | None = None) -> GpuModel:
    """The model of one reference GPU, learned from its measurements (as if `leave_out` had not been measured)."""
    spec = match_gpu(machine.gpu_name or "")
    if spec is None or machine.ceilings is None:
        raise ValueError(f"{machine.folder}: not a reference GPU machine (no catalog GPU or no ceilings)")
    roofs = roofs_of(machine.ceilings)
    efficiency = fit_efficiency(build_rows(machine_rooflines(machine), traces, roofs, leave_out), spec.sm_count or 1,
                                roofs.half_over_tf32)
    points = measured_points(machine, traces, leave_out)
    dispatch = machine.ceilings.dispatch
    op_issue_s = dispatch.op_issue_s.median if dispatch else 1e-5
    host = replace(fit_host(points, op_issue_s), op_issue_s=op_issue_s)
    fp32 = fit_fp32(points, efficiency, roofs, host)
    steps = [predict_step(m.run, efficiency, roofs, host, fp32) for m in points]
    host = replace(host, sharpness=fit_sharpness(points, steps))
    model = GpuModel(machine.machine, spec.name, roofs, efficiency, host, fp32, CompileModel(),
                     fit_memory(machine, traces, leave_out, spec.memory_bytes))
    return GpuModel(**{**model.__dict__, "compile": fit_compile(compile_pairs(machine, traces, leave_out), model)})
