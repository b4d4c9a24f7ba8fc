"""The changes worth making, read from the plan's own recommendations: each setting the plan recommends that differs
from PyTorch's default, with the measured gain behind it (Recommendation.gain). The report's decision page shows
the first three; the plan JSON lists them. Nothing is judged here that the recommendations did not judge: the
batch is the plan's knee, the precision the plan's choice, torch.compile the plan's.

Ranking (`top_changes`): what a change is worth to the person is what it gains over all the workloads they
measured, each counting once: the geometric mean of its throughput ratio over every measured workload, 1× for
those it does not help. So a setting that speeds up four workloads 2–5× outranks one workload's 8× batch change,
which still outranks a change worth 1.2× to a single workload. The geometric mean because gains multiply (a 2× and
a 0.5× cancel) and no one workload's units or scale should dominate. A batch-size gain counts at half its log
(SETTING_WEIGHT): a larger batch changes the optimisation, so its samples/s gain reaches time-to-result only below
the critical batch size (McCandlish et al., "An Empirical Model of Large-Batch Training", 2018) and only with the
learning rate retuned; the other changes leave the maths as it was.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from planner.plan.recommend import Recommendation

CHANGES_SHOWN = 3    # the changes the decision page shows
MIN_GAIN = 1.05      # repeated runs agree within about 1%: a change is proposed from 5%
SETTING_WEIGHT = {"batch size": 0.5}   # exponent on the gain when ranking (module docstring: why)
# recommendation setting → (the change's name, whether the recommended choice differs from PyTorch's default)
CHANGED = {
    "precision": ("precision", lambda choice: choice != "fp32"),
    "batch_size": ("batch size", lambda choice: True),
    "torch_compile": ("torch.compile", lambda choice: choice == "true"),
    "channels_last": ("channels_last", lambda choice: choice == "true"),
    "cudnn_benchmark": ("cudnn.benchmark", lambda choice: choice == "true"),
}


@dataclass(frozen=True)
class Change:
    setting: str             # what to change, as a person would search for it: "precision", "batch size"
    value: str               # to what: "bf16 (torch.autocast)", "yes", "512"
    workload: str | None     # the workload it was measured on; None for the machine as a whole
    gain: float              # expected throughput ratio against not changing it (2.0: twice the samples/s)
    evidence: str            # the measurement behind the gain (the recommendation's reason)
    also: tuple[tuple[str, float], ...] = ()  # the other workloads the same setting helps, with their gains
    worth: float | None = None  # geometric-mean gain over all measured workloads (see top_changes)

    @property
    def workloads(self) -> list[str]:
        return [w for w in (self.workload, *(a for a, _ in self.also)) if w]

    def to_dict(self) -> dict:
        return {"setting": self.setting, "value": self.value, "workload": self.workload, "gain": self.gain,
                "evidence": self.evidence, "also": [list(a) for a in self.also], "worth": self.worth}


def changes_of(recommendations: Iterable[Recommendation]) -> list[Change]:
    """Each recommended setting that differs from PyTorch's default and gains MIN_GAIN or more, as measured."""
    out = []
    for r in recommendations:
        name, differs = CHANGED.get(r.setting, (None, None))
        if name is None or r.gain is None or 1 + r.gain < MIN_GAIN or not differs(r.choice or r.value):
            continue
        out.append(Change(name, r.value, r.workload, 1 + r.gain, r.reason))
    return out


def change_worth(changes: list[Change], workload_count: int) -> float:
    """The geometric-mean gain over `workload_count` workloads of one setting's changes (the best per
    workload; 1× for workloads not listed; a machine-wide change, workload None, helps every one)."""
    weight = SETTING_WEIGHT.get(changes[0].setting, 1.0)
    if any(c.workload is None for c in changes):
        return max(c.gain for c in changes) ** weight
    best: dict[str, float] = {}
    for c in changes:
        best[c.workload] = max(best.get(c.workload, 0.0), c.gain)  # type: ignore[index]
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
    return replace(best, also=tuple((c.workload, c.gain) for c in others), worth=worth)  # type: ignore[misc]
