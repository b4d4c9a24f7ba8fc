"""What each untimed stage could change, from the committed reference runs: the figures planner/plan/untimed.py
quotes beside an answer that a cut collection did not time with (torch.compile, the other precisions, the sweep past
its knee). Reads every workload document of the machines named (default: results/h100-80gb, results/h200).

    python benchmarks/untimed_effects.py [MACHINE_DIR ...]

Prints each effect as (lowest, median, highest) relative throughput change, and how many pairs it is over.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuplan_schema.payloads import WorkloadPayload  # noqa: E402
from gpuplan_schema.payloads.workloads import KNEE, PLAIN_VARIANTS, knee_batch  # noqa: E402
from gpuplan_schema.results import load_machine  # noqa: E402

MACHINES = ("results/h100-80gb", "results/h200")
TRIALS = ("variant", "knee")


def plain_trials(payload: WorkloadPayload) -> dict[tuple[str, str, int], float]:
    """(sweep, precision, batch) → throughput of the plain trials (the main batch's and the knee's)."""
    return {(p.sweep, p.precision, p.batch): p.throughput_per_s for p in payload.points
            if p.status == "ok" and p.throughput_per_s and p.seq_len is None and p.sweep in TRIALS
            and p.variant in PLAIN_VARIANTS}


def compile_gains(payload: WorkloadPayload) -> list[float]:
    """torch.compile against the plain run at the same batch and precision (bf16), where both were timed."""
    plain = plain_trials(payload)
    return [p.throughput_per_s / plain[(p.sweep, "bf16", p.batch)] - 1 for p in payload.points
            if p.status == "ok" and p.throughput_per_s and p.variant == "compile" and p.precision == "bf16"
            and (p.sweep, "bf16", p.batch) in plain]


def precision_gains(payload: WorkloadPayload) -> list[float]:
    """The fastest other precision against bf16 at the same batch, where bf16 and another were timed."""
    plain = plain_trials(payload)
    out = []
    for (sweep, precision, batch), bf16 in plain.items():
        others = [t for (s, p, b), t in plain.items() if (s, b) == (sweep, batch) and p != precision]
        if precision == "bf16" and others:
            out.append(max(others) / bf16 - 1)
    return out


def sweep_gain(payload: WorkloadPayload) -> float | None:
    """The full bf16 sweep's knee against the knee of the same sweep stopped at its first doubling that gained less
    than the knee's margin (what the collector's first stage does), in throughput."""
    sweep = payload.sweep_throughput("bf16")
    if len(sweep) < 2:
        return None
    coarse: dict[int, float] = {}
    for batch in sorted(sweep):
        coarse[batch] = sweep[batch]
        if batch // 2 in coarse and sweep[batch] < (1 + KNEE) * coarse[batch // 2]:
            break
    return sweep[knee_batch(sweep)] / sweep[knee_batch(coarse)] - 1


def summary(values: list[float]) -> tuple[float, float, float]:
    return round(min(values), 2), round(statistics.median(values), 2), round(max(values), 2)


def effects(machines: list[Path]) -> dict[str, tuple[tuple[float, float, float], int]]:
    """effect name → ((lowest, median, highest), pairs)."""
    payloads = [w for m in machines for w in load_machine(m).workloads]
    compiled = [g for w in payloads for g in compile_gains(w)]
    precisions = [g for w in payloads for g in precision_gains(w)]
    sweeps = [g for w in payloads if (g := sweep_gain(w)) is not None]
    return {"compile": (summary(compiled), len(compiled)), "precisions": (summary(precisions), len(precisions)),
            "sweep": (summary(sweeps), len(sweeps))}


def main(argv: list[str]) -> int:
    machines = [Path(a) for a in argv] or [ROOT / m for m in MACHINES]
    for name, (effect, n) in effects(machines).items():
        print(f"{name:<11} lowest {effect[0]:+.2f}  median {effect[1]:+.2f}  highest {effect[2]:+.2f}  ({n} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
