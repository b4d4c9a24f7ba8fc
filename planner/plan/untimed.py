"""What a workload's answer was not timed with here, and what that could change: a plan from a cut collection
(Ctrl-C, `--budget`, a lost host) says so beside the answer instead of answering as if it had everything.

A stage counts as untimed where the workload document records it as not done (workloads collector 7 records its
stages: collectors/workloads/stages.py); an older document without records is read from its points (no compiled
point: torch.compile untimed; a precision with no trial; no boundary), and a complete one as lacking nothing. The
per-op profile is untimed where the machine has no roofline document of the workload (in a collection that records
its stages, or a partial one).

What each could change comes from the committed reference runs (results/h100-80gb and results/h200, every workload
document there), computed by benchmarks/untimed_effects.py; tests/test_untimed.py checks these figures against
those documents, so a new committed run that moves them fails until they are updated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpuplan_schema.payloads import RooflinePayload, WorkloadPayload

MAIN = "bf16"
OTHER_PRECISIONS = ("fp16", "fp32", "tf32")

# benchmarks/untimed_effects.py over results/h100-80gb and results/h200 (2026-11-27):
# torch.compile against the plain run at the same batch and precision (bf16), 50 pairs
COMPILE_EFFECT = (-0.18, 0.29, 2.50)          # lowest, median, highest throughput change
# the fastest other precision against bf16 at the same batch, 50 batches
PRECISION_EFFECT = (-0.05, 0.07, 0.39)
# the batch sweep past its knee: the full sweep's knee against the knee a sweep stopped at its first flat doubling
# finds, in throughput there, 29 sweeps
SWEEP_EFFECT = (0.0, 0.0, 0.08)


@dataclass(frozen=True)
class Untimed:
    """A stage of the collection this answer was not timed with: its name (the collector's stage name, or
    `profile`), what it times, and what it could change (from the reference runs where they measured it)."""

    stage: str
    what: str
    could_change: str

    def to_dict(self) -> dict:
        return asdict(self)


def _range(effect: tuple[float, float, float]) -> str:
    low, median, high = effect
    return f"{low:+.0%}…{high:+.0%} (median {median:+.0%})".replace("+0%", "0%")


WORDS = {
    "knee": ("the batch sweep to the knee", "the batch is the largest timed so far, not the sweep's knee"),
    "compile": ("torch.compile", f"on the reference workloads it moved throughput {_range(COMPILE_EFFECT)}"),
    "sweep": ("the batch sweep past the knee", f"on the reference workloads the full sweep's knee ran "
              f"{_range(SWEEP_EFFECT)} faster than the first flat doubling's"),
    "precisions": ("the other precisions", f"on the reference workloads the fastest other precision ran "
                   f"{_range(PRECISION_EFFECT)} against bf16"),
    "boundary": ("the out-of-memory boundary", "the largest batch that fits is not known: the batch is not "
                 "checked against the memory"),
    "main-batch": ("the trials at the main batch", "only the report's precision table at the main batch"),
    "details": ("the repeat and the layout and cuDNN-autotuning variants", "how much a step moves when timed "
                "again, and whether channels_last or autotuning helps"),
    "steady": ("the steady timing of host-set steps", "a host-set step timed once: on the reference runs such a "
               "step moved up to 13% between two timings"),
    "profile": ("the per-op profile", "the bound is read from the batch sweep alone"),
}


def untimed_of(payload: WorkloadPayload, rooflines: list[RooflinePayload], traced: bool = False,
               trace_command: str = "") -> list[Untimed]:
    """The stages `payload`'s answer was not timed with, in the order the collector runs them. `rooflines`: the
    measured profiles; `traced`: the model's trace beside it splits its steps on other GPUs (planner/trace/hybrid.py);
    `trace_command`: the command that would put it there."""
    names = _from_records(payload) if payload.stages is not None else _from_points(payload)
    recorded = payload.stages is not None or not payload.complete  # a complete older collection: taken as it is
    if recorded and not any(r.workload == payload.workload and r.status == "ok" for r in rooflines):
        names.append("profile")
    return [_profile(traced, trace_command) if n == "profile" else Untimed(n, *WORDS[n]) for n in names if n in WORDS]


def _profile(traced: bool, command: str) -> Untimed:
    """The per-op profile not timed: what other GPUs' figures are split by instead."""
    what, bound = WORDS["profile"]
    if traced:
        return Untimed("profile", what, f"{bound}; other GPUs' figures split its step by the model's CPU trace, "
                                        "calibrated to the measured step")
    hint = f" (`{command}`, seconds on a CPU, splits it by the model's ops)" if command else ""
    return Untimed("profile", what, f"{bound}; other GPUs' figures split its step from its FLOP and byte counts{hint}")


def _from_records(payload: WorkloadPayload) -> list[str]:
    done = {r.name for r in payload.stages or [] if r.status == "done"}
    order = ("knee", "compile", "sweep", "precisions", "boundary", "main-batch", "details", "steady")
    return [] if payload.complete else [n for n in order if n not in done]


def _from_points(payload: WorkloadPayload) -> list[str]:
    """A document without stage records (workloads collector 6 or before): complete ones lack nothing; a partial
    one, what its points show missing."""
    if payload.complete:
        return []
    ok = [p for p in payload.points if p.status in ("ok", "skipped")]
    names = []
    if not any(p.variant == "compile" and p.precision == MAIN for p in ok):
        names.append("compile")
    if not all(any(p.precision == q for p in ok) for q in OTHER_PRECISIONS):
        names.append("precisions")
    if payload.boundary(MAIN) is None:
        names.append("boundary")
    return names


def untimed_line(untimed: list[Untimed]) -> str:
    """The plan text's line: every untimed stage and what it could change."""
    return "not timed here: " + "; ".join(f"{u.what} ({u.could_change})" for u in untimed)
