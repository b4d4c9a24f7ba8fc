"""The measured figures behind a workload's verdict, in plain words, and the points they come from.

The verdict itself (which bound, judged where) is the plan's (planner/plan/judge.py, read through the plan's
expected figure); this module only words the evidence at the judged point: its throughput and step, the
achieved fraction of each ceiling, how throughput grows when the batch doubles, memory headroom and the OOM
boundary, and torch.compile's gain at the same batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults
from planner.model.split import PLAIN_VARIANTS
from planner.units import format_bytes, format_duration, format_number, format_percent, unit_label


@dataclass(frozen=True)
class Verdict:
    bound: str             # the bound's label (planner/plan/bounds.py)
    reason: str            # one sentence: why, with the deciding figures
    evidence: list[str]    # every figure the rules looked at, one line each
    precision: str | None = None
    batch: int | None = None


def main_batch(payload: WorkloadPayload) -> int | None:
    """The batch the trials ran at: the `variant` points' (else the first batch-sweep point's)."""
    point = next((p for p in payload.points if p.sweep == "variant"), None) or \
        next((p for p in payload.points if p.sweep == "batch"), None)
    return point.batch if point else None


def gpu_memory_bytes(machine: MachineResults) -> int | None:
    env = machine.environment
    return env.gpus[0].memory_bytes if env and env.gpus else None


def judged_point(payload: WorkloadPayload, main: int) -> WorkloadPoint | None:
    """The fastest default-variant point at the main batch (a variant trial over a sweep point)."""
    ok = [p for p in payload.points if p.batch == main and p.variant == "default" and p.status == "ok"
          and p.seq_len is None and p.throughput_per_s and p.sweep in ("variant", "batch")]
    ok.sort(key=lambda p: p.sweep != "variant")
    return max(ok, key=lambda p: p.throughput_per_s, default=None)


def plain_point(payload: WorkloadPayload, batch: int, precision: str) -> WorkloadPoint | None:
    """The measured plain run of (precision, batch): a variant trial, else the sweep's point."""
    found = [p for p in payload.points if p.batch == batch and p.precision == precision and p.status == "ok"
             and p.seq_len is None and p.variant in PLAIN_VARIANTS and p.step_s and p.sweep in ("variant", "batch")]
    found.sort(key=lambda p: p.sweep != "variant")
    return found[0] if found else None


def sweep_throughput(payload: WorkloadPayload, precision: str) -> dict[int, float]:
    return {p.batch: p.throughput_per_s for p in payload.points
            if p.sweep == "batch" and p.precision == precision and p.status == "ok" and p.throughput_per_s}


def gain_at(thr: dict[int, float], batch: int) -> tuple[int, int, float] | None:
    """(from, to, gain) for the doubling from `batch`, else the doubling into it."""
    for low in (batch, batch // 2 if batch % 2 == 0 else 0):
        if low in thr and 2 * low in thr:
            return low, 2 * low, thr[2 * low] / thr[low] - 1
    return None


def last_gain(thr: dict[int, float]) -> tuple[int, int, float] | None:
    top = max((b for b in thr if b % 2 == 0 and b // 2 in thr), default=None)
    return None if top is None else (top // 2, top, thr[top] / thr[top // 2] - 1)


def fusion_gain(payload: WorkloadPayload, point: WorkloadPoint) -> float | None:
    compiled = next((p for p in payload.points if p.sweep == "variant" and p.variant == "compile"
                     and p.precision == point.precision and p.batch == point.batch and p.throughput_per_s), None)
    return compiled.throughput_per_s / point.throughput_per_s if compiled else None


def swept(payload: WorkloadPayload, precision: str) -> tuple[str, dict[int, float]]:
    """The batch sweep at `precision`, else at the precision that was swept (bf16 first): (precision, sweep)."""
    thr = sweep_throughput(payload, precision)
    if thr:
        return precision, thr
    others = sorted({p.precision for p in payload.points if p.sweep == "batch"}, key=lambda d: (d != "bf16", d))
    for other in others:
        if thr := sweep_throughput(payload, other):
            return other, thr
    return precision, {}


def _pct(value: float | None) -> str:
    return format_percent(value)


def _signed(gain: float) -> str:
    return ("+" if gain >= 0 else "") + format_percent(gain)


def evidence_lines(payload: WorkloadPayload, point: WorkloadPoint, gpu_memory: int | None) -> list[str]:
    unit = unit_label(payload.unit)
    tokens = f" ({format_number(point.tokens_per_s)} tokens/s)" if point.tokens_per_s else ""
    how = "Predicted from the trace (no GPU measured): throughput" if payload.from_trace else "Throughput"
    lines = [f"{how} at {point.precision}, batch {point.batch}: {format_number(point.throughput_per_s)} "
             f"{unit}/s{tokens}, step {format_duration(point.step_s.median)}."]
    if point.achieved_flops_fraction is not None or point.achieved_bytes_fraction is not None:
        lines.append(f"Achieved {_pct(point.achieved_flops_fraction)} of the measured {point.precision} matmul "
                     f"FLOP/s ceiling and {_pct(point.achieved_bytes_fraction)} of the copy bandwidth (bytes "
                     "from the traffic estimate, a floor).")
    lines += scaling_lines(payload, point) + memory_lines(payload, point, gpu_memory)
    gain = fusion_gain(payload, point)
    if gain:
        lines.append(f"torch.compile: {format_number(gain)}× the default throughput at the same batch.")
    return lines + sequence_lines(payload)


def scaling_lines(payload: WorkloadPayload, point: WorkloadPoint) -> list[str]:
    """The doubling at the main batch and the sweep's last doubling (once, when they are the same)."""
    precision, thr = swept(payload, point.precision)
    found = [g for g in (gain_at(thr, point.batch), last_gain(thr)) if g]
    lines = []
    for low, high, gain in dict.fromkeys(found):
        plateau = " (a plateau: under 10%)" if gain < 0.10 else ""
        lines.append(f"Doubling the batch at {precision} from {low} to {high} changes throughput by "
                     f"{_signed(gain)}{plateau}.")
    return lines


def memory_lines(payload: WorkloadPayload, point: WorkloadPoint, gpu_memory: int | None) -> list[str]:
    lines = []
    peak = point.memory.peak_allocated_bytes if point.memory else None
    if peak:
        share = f": {_pct(peak / gpu_memory)} of the {format_bytes(gpu_memory)} GPU" if gpu_memory else ""
        lines.append(f"Peak allocated at batch {point.batch}: {format_bytes(peak)}{share}.")
    b = payload.boundary(point.precision)
    if b and b.max_batch and b.capped:
        lines.append(f"No OOM at {point.precision} up to the profile's cap, batch {b.max_batch}.")
    elif b and b.max_batch:
        lines.append(f"Largest batch that fits at {point.precision}: {b.max_batch} "
                     f"(batch {b.first_oom_batch} runs out of memory).")
    return lines


def sequence_lines(payload: WorkloadPayload) -> list[str]:
    """Sequence length is its own question: where it runs out of memory, capacity bounds the context."""
    seq = [p for p in payload.points if p.sweep == "sequence" and p.seq_len]
    fits = [p for p in seq if p.status == "ok"]
    oom = next((p for p in seq if p.status == "oom"), None)
    if not fits or oom is None:
        return []
    top = max(fits, key=lambda p: p.seq_len)
    peak = f" ({format_bytes(top.memory.peak_allocated_bytes)} peak)" if top.memory else ""
    return [f"Sequence length at batch {top.batch} is capacity-bound: {top.seq_len} tokens fit{peak}, "
            f"{oom.seq_len} runs out of memory."]
