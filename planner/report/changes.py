"""Changes worth making, each with the gain measured on this machine: the summary's "three things to change".

A `Change` is typed and self-contained (what to set, to what, the expected throughput ratio and the
measurement behind it), so that any part of gpuplan can propose one: today they are read from the
workload trials and sweeps below; the planner's recommendations add theirs through a `changes`
attribute on their section (see planner/report/summary.py).

From a workload's measurements, at its main batch and best precision:
- precision: the best precision's default run against fp32 (TF32 off), the plain PyTorch default;
- torch.compile: the `compile` trial against the default run;
- cudnn.benchmark, channels_last: the default run against the trial that turns each off;
- batch size: the throughput knee of the batch sweep (the smallest batch within 5% of the best measured,
  leaving 10% of GPU memory free) against the main batch, when it is larger.
A change is proposed only when its gain is at least MIN_GAIN (5%: repeated runs agree within about 1%).

Ranking (`top_changes`): what a change is worth to the person is what it gains over all the workloads they
measured, reference and their own alike, each counting once: the geometric mean of its throughput ratio
over every measured workload, 1× for those it does not help. So a setting that speeds up four workloads
2–5× outranks one workload's 8× batch change, which still outranks a change worth 1.2× to a single
workload. The geometric mean because gains multiply (a 2× and a 0.5× cancel) and no one workload's
units or scale should dominate. Each change names the workload it was measured on and those it also helps.
A batch-size gain counts at half its log (SETTING_WEIGHT): a larger batch changes the optimisation, so its
samples/s gain reaches time-to-result only below the critical batch size (McCandlish et al., "An Empirical
Model of Large-Batch Training", 2018) and only with the learning rate retuned; the other changes leave
the maths as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from planner.report.workloads import PointRow, TrialRow, WorkloadSection
from planner.units import format_bytes, format_duration, format_number

MIN_GAIN = 1.05
SETTING_WEIGHT = {"batch size": 0.5}   # exponent on the gain when ranking (module docstring: why)
KNEE = 0.95            # within 5% of the best measured throughput
MEMORY_MARGIN = 0.10   # the knee must leave this much GPU memory free
PRECISION_SETTINGS = {"bf16": "bf16 autocast", "fp16": "fp16 autocast + GradScaler", "tf32": "TF32 matmuls",
                      "fp8": "fp8"}
# Trials that turn one of the workload's defaults off: the default is the change, the trial the baseline.
DEFAULTS_TURNED_OFF = {"no cudnn benchmark": ("cudnn.benchmark", "on"),
                       "contiguous": ("memory format", "channels_last")}


@dataclass(frozen=True)
class Change:
    setting: str             # what to change, as a person would search for it: "precision", "batch size"
    value: str               # to what: "bf16 autocast", "on", "16384"
    workload: str | None     # the workload it was measured on; None for the machine as a whole
    gain: float              # expected throughput ratio against not changing it (2.0: twice the samples/s)
    evidence: str            # the measurement behind the gain, one sentence
    anchor: str | None = None  # the report section that holds the evidence
    also: tuple[tuple[str, float], ...] = ()  # the other workloads the same setting helps, with their gains
    worth: float | None = None  # geometric-mean gain over all measured workloads (see top_changes)

    @property
    def workloads(self) -> list[str]:
        return [w for w in (self.workload, *(a for a, _ in self.also)) if w]


def change_worth(changes: list[Change], workload_count: int) -> float:
    """The geometric-mean gain over `workload_count` workloads of one setting's changes (the best per
    workload; 1× for workloads not listed; a machine-wide change, workload None, helps every one)."""
    if any(c.workload is None for c in changes):
        return max(c.gain for c in changes) ** SETTING_WEIGHT.get(changes[0].setting, 1.0)
    best: dict[str, float] = {}
    for c in changes:
        best[c.workload] = max(best.get(c.workload, 0.0), c.gain)  # type: ignore[index]
    weight = SETTING_WEIGHT.get(changes[0].setting, 1.0)
    return math.exp(weight * sum(math.log(g) for g in best.values()) / max(workload_count, len(best)))


def top_changes(changes: list[Change], n: int = 3, workload_count: int | None = None) -> list[Change]:
    """The n settings worth most over the measured workloads (`workload_count`; by default those the changes
    name), one per setting: its largest single gain, with the other workloads it helps in `also`; gains under
    MIN_GAIN never."""
    kept = [c for c in changes if c.gain >= MIN_GAIN]
    count = workload_count or len({c.workload for c in kept}) or 1
    by_setting: dict[str, list[Change]] = {}
    for c in sorted(kept, key=lambda c: (-c.gain, c.workload or "", c.value)):
        by_setting.setdefault(c.setting, []).append(c)
    merged = [_merged(group, change_worth(group, count)) for group in by_setting.values()]
    return sorted(merged, key=lambda c: (-(c.worth or 0), -c.gain, c.setting))[:n]


def _merged(group: list[Change], worth: float) -> Change:
    best = group[0]
    others = list({c.workload: c for c in reversed(group[1:]) if c.workload and c.workload != best.workload}
                  .values())[::-1]  # one per workload: its largest gain (the group is sorted largest first)
    evidence = best.evidence
    if others:
        evidence += "; also " + ", ".join(f"{c.workload} {c.gain:.2f}×" + (f" ({c.value})" if c.value != best.value
                                                                             else "") for c in others)
    return replace(best, also=tuple((c.workload, c.gain) for c in others), worth=worth,  # type: ignore[misc]
                   evidence=evidence)


def build_workload_changes(section: WorkloadSection) -> list[Change]:
    """Every change the workload's own measurements support, best first."""
    if section.tiny:  # reduced sizes on a CPU test run say nothing about what to change on a GPU
        return []
    found = [precision_change(section), compile_change(section), batch_change(section),
             *default_changes(section)]
    return sorted((c for c in found if c is not None), key=lambda c: -c.gain)


def _default_trial(section: WorkloadSection, precision: str | None) -> TrialRow | None:
    return next((r for r in section.trials if r.precision == precision and r.variant == "default"
                 and r.status == "ok" and r.throughput), None)


def _rate(section: WorkloadSection, value: float | None) -> str:
    return f"{format_number(value)} {section.unit}/s" if value else "—"


PLAIN_TRIALS = ("default", "no cudnn benchmark")  # runs with no other change than their precision


def precision_change(section: WorkloadSection) -> Change | None:
    """The fastest precision's plain run against fp32's (like the recommendation: resnet50's fp16 against
    bf16 alike), whichever variant the trials ran as."""
    plain = [r for r in section.trials if r.variant in PLAIN_TRIALS and r.status == "ok" and r.throughput]
    fp32 = next((r for r in plain if r.precision == "fp32"), None)
    rated = [r for r in plain if r.precision != "fp32" and r.vs_fp32]
    if fp32 is None or not rated:
        return None
    row = max(rated, key=lambda r: r.vs_fp32)  # type: ignore[arg-type, return-value]
    if row.vs_fp32 < MIN_GAIN:  # type: ignore[operator]
        return None
    evidence = (f"{section.name} at batch {section.main_batch}: {_rate(section, row.throughput)} in {row.precision} "
                f"against {_rate(section, fp32.throughput)} in fp32 (TF32 off)")
    return Change("precision", PRECISION_SETTINGS.get(row.precision, row.precision), section.name,
                  row.vs_fp32, evidence, section.anchor)  # type: ignore[arg-type]


def compile_change(section: WorkloadSection) -> Change | None:
    precision = section.verdict.precision
    default = _default_trial(section, precision)
    row = next((r for r in section.trials if r.precision == precision and r.variant == "compile" and r.status == "ok"
                and r.vs_default), None)
    if default is None or row is None or row.vs_default < MIN_GAIN or not (default.step and row.step):
        return None
    evidence = (f"{section.name} at {precision}, batch {section.main_batch}: step "
                f"{format_duration(default.step.median)} → {format_duration(row.step.median)}")
    saved = default.step.median - row.step.median
    if row.compile_s and saved > 0:
        evidence += (f"; compiling took {format_duration(row.compile_s)}, paid back after "
                     f"{format_number(row.compile_s / saved, 2)} steps")
    return Change("torch.compile", "on", section.name, row.vs_default, evidence, section.anchor)


def default_changes(section: WorkloadSection) -> list[Change]:
    """The workload's defaults (cudnn.benchmark, channels_last) against the trials that turn them off."""
    changes = []
    for row in section.trials:
        if row.variant in DEFAULTS_TURNED_OFF and row.status == "ok" and row.vs_default:
            setting, value = DEFAULTS_TURNED_OFF[row.variant]
            evidence = (f"{section.name} at {row.precision}, batch {section.main_batch}: {row.vs_default:.2f}× the "
                        f"default throughput with {row.variant}")
            changes.append(Change(setting, value, section.name, 1 / row.vs_default, evidence, section.anchor))
    return changes


def throughput_knee(rows: list[PointRow], gpu_memory: int | None) -> PointRow | None:
    """The smallest batch within 5% of the best measured throughput that leaves 10% of memory free."""
    ok = [r for r in rows if r.status == "ok" and r.throughput]
    if not ok:
        return None
    best = max(r.throughput for r in ok)
    room = [r for r in ok if not gpu_memory or not r.peak_bytes or r.peak_bytes <= (1 - MEMORY_MARGIN) * gpu_memory]
    return min((r for r in room if r.throughput >= KNEE * best), key=lambda r: r.batch, default=None)


def batch_change(section: WorkloadSection) -> Change | None:
    precision, main = section.verdict.precision, section.main_batch
    rows = [r for r in section.batches if r.precision == precision]
    base = next((r for r in rows if r.batch == main and r.status == "ok" and r.throughput), None)
    knee = throughput_knee(rows, section.gpu_memory_bytes)
    if base is None or knee is None or knee.batch <= base.batch or knee.throughput / base.throughput < MIN_GAIN:
        return None
    memory = f", {format_bytes(knee.peak_bytes)} peak memory" if knee.peak_bytes else ""
    evidence = (f"{section.name} at {precision}: {_rate(section, base.throughput)} at batch {main}, "
                f"{_rate(section, knee.throughput)} at {knee.batch} (the throughput knee{memory}); "
                "scale the learning rate with the batch")
    return Change("batch size", str(knee.batch), section.name, knee.throughput / base.throughput, evidence,
                  section.anchor)
