"""What a value in a document may be, beyond its JSON type: the loader's sanity checks.

Documents come from disk, and a results folder may have been edited, truncated, or made by hand
to break the report. Every number a gpuplan document holds is a measured quantity, a size or a
count in SI units, named for its unit (`step_s`, `peak_bytes`, `achieved_flops_fraction`), so
the field name says what range makes sense:

- no number is negative, and none is beyond MAX_MAGNITUDE (far above any figure a machine gives:
  an H100's FLOP/s is 1e15, a host's bytes 1e12);
- a duration (`*_s`) is at most MAX_SECONDS (four months: longer than any collection runs);
- a fraction of a ceiling or an efficiency is at most MAX_FRACTION (1000× the measured roof means
  the document, or its ceiling, is wrong);
- a per-GPU batch, a max batch, a sequence length, a sample count or a number of GPUs is at least 1
  (a workload point's batch too: WorkloadPoint.check);
- a text holds no control character other than tab and newline, and no lone surrogate (neither
  can be written to HTML, PDF or UTF-8 files).

A Stat's own fields (median, q1, …) take the rules of the field that holds the Stat, so
`step_s.median` is a duration. Standard library only: this runs on bare GPU hosts.
"""

from __future__ import annotations

import functools
import re

MAX_MAGNITUDE = 1e30
# A whole number beyond this fits no 64-bit integer column (pandas' Int64, Parquet) a reader keeps counts in;
# no batch, count or byte total of a real run comes near it.
MAX_INTEGER = 2**62
MAX_SECONDS = 1e7
MAX_FRACTION = 1e3
# (`batch` is not here: a skipped dataloader document says batch 0; a workload point's is checked by the point)
AT_LEAST_ONE = frozenset({"per_gpu_batch", "max_batch", "first_oom_batch", "seq_len", "world_size", "gpus",
                          "n", "m", "k", "tokens_per_sample", "logical_cores", "batch_start"})
FRACTIONS = frozenset({"utilization", "cpu_utilization", "efficiency", "scaling_efficiency"})
STAT_PARTS = frozenset({"median", "q1", "q3", "min", "max"})
_INDEX = re.compile(r"\[\d+\]$")
_PLAIN_UP_TO = min(MAX_FRACTION, MAX_SECONDS, MAX_MAGNITUDE, MAX_INTEGER)  # from 1 to this, no field's rule bites
_BAD_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


@functools.lru_cache(maxsize=1 << 16)  # a machine's documents repeat their fields' paths, and so do its siblings'
def field_name(field: str) -> str:
    """The name whose unit rules a value: 'payload.points[3].step_s.median' -> 'step_s'."""
    parts = [_INDEX.sub("", p) for p in field.split(".") if p]
    if len(parts) > 1 and parts[-1] in STAT_PARTS:
        return parts[-2]
    return parts[-1] if parts else ""


def number_problem(value: float, field: str) -> str | None:
    """Why `value` cannot be the number at `field` (a dotted field path), or None."""
    if 1 <= value <= _PLAIN_UP_TO:
        return None  # every rule passes (the common case, checked first: a document holds thousands of numbers)
    name = field_name(field)
    if value < 0:
        return f"{value:g} is negative; a document holds measured quantities, sizes and counts, never below 0"
    if abs(value) > MAX_MAGNITUDE:
        return f"{value:.3g} is beyond any plausible measurement (at most {MAX_MAGNITUDE:g})"
    if isinstance(value, int) and value > MAX_INTEGER:
        return f"{value} is beyond any plausible count (at most 2**62)"
    if name.endswith("_s") and not name.endswith("_per_s") and value > MAX_SECONDS:
        return f"{value:.3g} s is longer than any collection runs (at most {MAX_SECONDS:g} s)"
    if (name.endswith("_fraction") or name in FRACTIONS) and value > MAX_FRACTION:
        return f"{value:.3g} is not a plausible fraction of a measured ceiling (at most {MAX_FRACTION:g})"
    if name in AT_LEAST_ONE and value < 1:
        return f"{value:g} is below 1; a {name.replace('_', ' ')} is at least 1"
    return None


def text_problem(value: str) -> str | None:
    """Why `value` cannot be a text of a document, or None."""
    bad = _BAD_TEXT.search(value)
    if bad is None:
        return None
    return f"holds the control character U+{ord(bad.group()):04X}, which no report can show"
