"""A traced step's time on a GPU whose per-op efficiency and host were learned (planner/trace/learn.py).

    gpu busy  = Σ over the step's ops of their predicted time (efficiency.py: per kind, launches × fixed cost +
                slowdown × roof); fp32 products (no profile runs them: the profiles are bf16 and TF32) × their family's
                fp32 scale (efficiency.Fp32Scale)
    host      = Σ over the phases (forward, backward, optimizer) of the step's aten calls × the host's seconds per
                call in that phase, + its nn.Module calls × seconds per module call, + a fixed cost per step, + the
                kernels its ops launch beyond one a call (a cuDNN RNN's per time step) × the host's cost of a
                library's launch (LIBRARY_LAUNCH × the dispatch benchmark's `op_issue_s`)
    step      = the phases (forward, backward, optimizer) in turn, each joining the GPU's work left over from the
                phases before (`lag`) and its own with its host time: H + (lag + gpu^p + host^p)… (pipeline below)

A host issues kernels while the GPU runs earlier ones, so a phase takes about the slower of the two; where the two
are close, neither hides the other entirely (the first kernels wait for the host, the last host work for the GPU).
A p-norm (p = `sharpness`, learned) is both: the larger of the two when they are far apart, 2^(1/p) times it when
they are equal. The phases run in order, not as one pool: the collector times a step of 20 ms and more alone, from
an idle GPU to the end of its last kernel (collectors/core/timing.py: one call a sample, synchronised at its end),
so a step whose GPU work comes last (dlrm-small's fused AdamW over 1 G parameters: 12 of its 15 GPU ms) waits for the
host's forward and backward first and then runs its optimizer: 21 ms measured, where the larger of the GPU's busy
time and the host's issue time is 15 ms. A forward call costs the host most (the model's Python, autocast's casts),
a backward one least (autograd's C++ engine issues it).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpuplan_schema.payloads import TraceRun
from planner.trace.efficiency import AT_ROOF, Efficiency, Fp32Scale
from planner.trace.kinds import RNN_KINDS, SCAN_OUTER, Roofs, op_kind
from planner.trace.training import STEP_PHASES, phase_of, traced_kinds

PHASES = ("forward", "backward", "optimizer", "modules")
# The host's seconds to issue a kernel cuDNN launches inside one call (a time step's product or cell kernel), over the
# dispatch benchmark's seconds to issue one ATen op (`op_issue_s`): on an H200 a call's issue time grew 9.2 µs a
# launch from 16 to 64 time steps (the median of eight such pairs, forward and backward, 5.1-10.6 µs:
# results/h200/diagnostics/rnn-kernels-2026-11-28), 1.46 times the H200's op_issue_s (6.3 µs; derived by
# benchmarks/rnn_kernel_grid.py, checked by tests/test_trace_rnn_grid.py). Each is a cuBLASLt product or a cuDNN kernel
# launched through the driver with its own arguments, not one op's dispatch.
LIBRARY_LAUNCH = 1.5


@dataclass(frozen=True)
class HostModel:
    per_call_s: dict[str, float]   # phase → host seconds per aten call (a training step's)
    fixed_s: float                 # per step
    sharpness: float = 4.0         # p of the p-norm that joins the GPU's and the host's time into the step
    op_issue_s: float = 0.0        # the dispatch benchmark's seconds to issue one op without autograd (measured)

    @property
    def launch_s(self) -> float:
        """The host's seconds per kernel a library launches beyond one a call (LIBRARY_LAUNCH)."""
        return LIBRARY_LAUNCH * self.op_issue_s

    def issue_s(self, calls: dict[str, int], training: bool = True) -> float:
        """A training step's issue time (learned per phase); an inference step's (under no_grad: no autograd node to
        record, no backward) its aten and module calls at the measured cost of issuing one op, which no reference
        training step can teach."""
        if not training:
            return self.fixed_s + self.op_issue_s * sum(calls.values())
        return self.fixed_s + sum(self.per_call_s.get(p, 0.0) * n for p, n in calls.items())

    def to_dict(self) -> dict:
        return {"per_call_s": self.per_call_s, "fixed_s": self.fixed_s, "sharpness": self.sharpness,
                "op_issue_s": self.op_issue_s}


@dataclass(frozen=True)
class OpTime:
    kind: str
    cls: str
    calls: int
    seconds: float
    learned: bool
    math_s: float          # Σ math time at the roof (no efficiency)
    memory_s: float        # Σ memory time at the roof (a per-channel or per-row kernel's bytes too)
    plane_s: float = 0.0   # of `seconds`, what a compiled step does not pay: what a native batch norm's one block a
                           # channel, a layer norm's one block a row add (plane.py, rows.py), an outer scan (scan.py)
    bias_s: float = 0.0    # of `seconds`, a cuDNN convolution's bias add (efficiency.py BIAS_ADD_OPS)
    padded_s: float = 0.0  # of `seconds`, what an unaligned product's alignment adds, which Inductor pads away
                           # (efficiency.py PADDED_KINDS)

    @property
    def op_class(self) -> str:
        """The roofline's class of the op at the measured roofs: math-bound where its math time is the larger."""
        return "math-bound" if self.math_s >= self.memory_s and self.math_s > 0 else "memory-bound"


@dataclass(frozen=True)
class PhaseTime:
    """One phase of a step: the host's seconds to issue it, the GPU's to run it, and of those the matmul kinds', what
    native batch norms' per-channel blocks add (`plane_s`: a compiled step's Inductor kernels fill the GPU) and the
    convolutions' bias adds (`bias_s`: Inductor peels the bias off a convolution and fuses its add into the next
    pointwise kernel, torch/_inductor/kernel/conv.py) and the unaligned products' alignment (`padded_s`: Inductor
    pads them, efficiency.py PADDED_KINDS)."""

    name: str
    host_s: float
    gpu_s: float
    matmul_s: float
    plane_s: float = 0.0
    bias_s: float = 0.0
    padded_s: float = 0.0


@dataclass(frozen=True)
class StepTime:
    gpu_s: float
    host_s: float
    step_s: float
    ops: list[OpTime]
    phases: tuple[PhaseTime, ...] = ()

    @property
    def unknown_share(self) -> float:
        """The share of the GPU's predicted time in kinds no profile showed (timed with their family's figures or the
        pooled ones: efficiency.py)."""
        return sum(o.seconds for o in self.ops if not o.learned) / self.gpu_s if self.gpu_s else 0.0

    @property
    def matmul_s(self) -> float:
        return sum(o.seconds for o in self.ops if o.cls != "any")


def phase_calls(run: TraceRun) -> dict[str, int]:
    """The step's aten calls per phase, and its nn.Module calls ("modules": each is Python the host runs)."""
    out: dict[str, int] = defaultdict(int)
    for op in run.ops:
        out[op.phase] += op.calls
    out["modules"] = run.module_calls
    return dict(out)


def extra_launches(run: TraceRun) -> dict[str, int]:
    """Per phase, the kernels the step's ops launch beyond one a call: a cuDNN RNN's per time step, layer and direction
    (collectors/trace/rnn.py), each a launch its library issues from the host."""
    out: dict[str, int] = defaultdict(int)
    for op in run.ops:
        if op_kind(op.name) in RNN_KINDS:
            out[phase_of(op)] += max(0, op.launches - op.calls)
    return dict(out)


def op_times(run: TraceRun, efficiency: Efficiency, roofs: Roofs, fp32_scale: Fp32Scale = AT_ROOF,
             phase: str | None = None) -> list[OpTime]:
    """The step's ops (those of `phase` alone if given) with their predicted seconds, the slowest first."""
    out = []
    for (kind, cls), groups in traced_kinds(run, roofs, phase).items():
        seconds, learned = efficiency.time_s(kind, cls, groups, fp32_scale)
        moved = sum(g.calls * (g.memory_s + g.plane_s) for g in groups)
        # a compiled step does not pay an outer scan's dependent steps: Inductor lowers a cumsum to a scan of its own
        # over the whole tensor (moe-lm on an H200: 49.8 ms compiled at 16 sequences, 161 eager, 47.5 of it cumsum)
        excess = seconds if kind.endswith(SCAN_OUTER) else efficiency.plane_excess_s(kind, cls, groups)
        out.append(OpTime(kind, cls, sum(g.calls for g in groups), seconds, learned,
                          sum(g.calls * g.math_s for g in groups), moved, excess, sum(g.outright_s for g in groups),
                          efficiency.padded_excess_s(kind, cls, groups)))
    return sorted(out, key=lambda o: o.seconds, reverse=True)


def combine(gpu_s: float, host_s: float, sharpness: float) -> float:
    big = max(gpu_s, host_s)
    return big * (1 + (min(gpu_s, host_s) / big) ** sharpness) ** (1 / sharpness) if big > 0 else 0.0


def pipeline(phases: tuple[PhaseTime, ...], sharpness: float) -> float:
    """One step from an idle GPU to its last kernel. The phases in order, each as soon as the host has issued it and
    the GPU has run the ones before (`ordered`: the GPU never waits inside a phase, the host never waits at all), is
    the larger of the GPU's and the host's totals where neither waits for the other across phases; what it adds
    beyond that larger total is the phases' order (module docstring), added to the p-norm of the two totals (the
    wait inside a phase, learned)."""
    host = gpu = 0.0
    for p in phases:
        gpu = max(gpu + p.gpu_s, host + p.host_s)
        host += p.host_s
    busy, issue = sum(p.gpu_s for p in phases), sum(p.host_s for p in phases)
    return combine(busy, issue, sharpness) + gpu - max(busy, issue)


def step_phases(run: TraceRun, efficiency: Efficiency, roofs: Roofs, host: HostModel,
                fp32_scale: Fp32Scale = AT_ROOF) -> tuple[PhaseTime, ...]:
    """The step's phases in their order, its issue time shared among them by their aten calls (the measured issue
    times are of whole steps: they cannot tell what a phase's call costs apart, so each call is taken to cost alike),
    each phase with the kernels its ops launch beyond one a call (extra_launches, at the host's `launch_s` each); an
    inference step is one phase."""
    calls, extra = phase_calls(run), extra_launches(run)
    training = any(op.phase == "backward" for op in run.ops)
    issue = host.issue_s(calls, training)
    names = STEP_PHASES if training else (None,)
    aten = sum(calls.get(n, 0) for n in STEP_PHASES) or 1
    out = []
    for name in names:
        ops = op_times(run, efficiency, roofs, fp32_scale, name)
        share = calls.get(name, 0) / aten if name else 1.0
        launched = host.launch_s * (extra.get(name, 0) if name else sum(extra.values()))
        out.append(PhaseTime(name or "forward", issue * share + launched, sum(o.seconds for o in ops),
                             sum(o.seconds for o in ops if o.cls != "any"), sum(o.plane_s for o in ops),
                             sum(o.bias_s for o in ops), sum(o.padded_s for o in ops)))
    return tuple(out)


def predict_step(run: TraceRun, efficiency: Efficiency, roofs: Roofs, host: HostModel,
                 fp32_scale: Fp32Scale = AT_ROOF) -> StepTime:
    ops = op_times(run, efficiency, roofs, fp32_scale)
    phases = step_phases(run, efficiency, roofs, host, fp32_scale)
    return StepTime(sum(o.seconds for o in ops), sum(p.host_s for p in phases), pipeline(phases, host.sharpness), ops,
                    phases)
