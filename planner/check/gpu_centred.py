"""The GPU part of a band on another architecture, centred on what the target GPU's own published rows showed.

Across architectures the published rows miss by GPU more than by model: the RTX 6000 Ada's fourteen rows all lie
+36 … +73 % (predicted too fast), the V100's fp32 stand-ins −24 … −25 %, while one model's rows spread both ways over
the GPUs. A band pooled over every row is then wide on every GPU and still misses the skewed ones. So the band of a
prediction on GPU G is read in two parts, both from measured residuals:

- its centre: where the truth lay against the prediction on G's own published rows (the median of 1 / (1 + error)
  over them, at least MIN_ROWS), else on the rows of G's architecture (its compute capability: the † GPUs' kin),
  else the prediction itself;
- its spread: the middle 90 % of every row's truth over its own GPU's centre (each GPU's skew taken out), pooled.

    low = 1 − centre · p5(truth / its GPU's centre)        high = centre · p95(truth / its GPU's centre) − 1

The prediction is not moved (the plan's figure stays the model's): the range around it leans the way G's published
rows leaned. Checked on the model held out (planner/check/coverage.py): a user's model is not among the published
families.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIN_ROWS = 3          # published rows of a GPU (or of its architecture) a centre is read from
SPREAD_QUANTILE = 0.05  # each side of the spread: 5 % of the pooled rows beyond it


@dataclass(frozen=True)
class Centred:
    low: float
    high: float
    centre: float     # where the truth lay on the target's rows: truth / prediction
    centred_on: str   # "its own n" (published rows), "the n of its architecture (8.9)", or "" (none: 1)
    rows: int         # rows pooled for the spread


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def gpu_centred(rows: Sequence[tuple[str, float]], gpu: str | None,
                capability: Callable[[str], str | None]) -> Centred | None:
    """The sides of the GPU part for a prediction on `gpu`, from published residuals (GPU name, error); None where
    no GPU has MIN_ROWS rows (nothing to centre on: the caller pools them plainly)."""
    truths: dict[str, list[float]] = {}
    for name, error in rows:
        truths.setdefault(name, []).append(1 / (1 + error))
    centres = {name: statistics.median(t) for name, t in truths.items() if len(t) >= MIN_ROWS}
    spread = [t / centres[name] for name, ts in truths.items() if name in centres for t in ts]
    if not spread:
        return None
    centre, words = 1.0, ""
    if gpu in centres:
        centre, words = centres[gpu], f"its own {len(truths[gpu])}"
    elif gpu is not None and (cap := capability(gpu)):
        kin = [t for name, ts in truths.items() if capability(name) == cap for t in ts]
        if len(kin) >= MIN_ROWS:
            centre, words = statistics.median(kin), f"the {len(kin)} of its architecture ({cap})"
    low = 1 - centre * _quantile(spread, SPREAD_QUANTILE)
    high = centre * _quantile(spread, 1 - SPREAD_QUANTILE) - 1
    return Centred(low, high, centre, words, len(spread))
