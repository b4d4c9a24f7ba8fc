"""The one way a plan's settings, range and bound are written: the plan text, the report, the site and the job chooser
all call these (the templates as filters, planner/render/filters.py), so two screens never word one answer apart.

`settings_words` is the long form (the report's and --verbose's), `settings_short` the form of one 80-column line.
Both read the typed `Settings`; nothing here decides.
"""

from __future__ import annotations

from collections.abc import Callable

from planner.plan.expect import Expected
from planner.plan.settings import Settings
from planner.rank.ranking import RankedInstance
from planner.units import format_count, short_rate

PRECISION_WORDS = {"bf16": "bf16 autocast", "fp16": "fp16 autocast + GradScaler", "tf32": "tf32", "fp32": "fp32"}
DEFAULT_LOADER_MARK = "*"   # beside a worker count the plan did not measure (a stated default)


def compile_words(s: Settings) -> str:
    """torch.compile or eager, with the gain measured where it was timed ('torch.compile (+41%)')."""
    if s.torch_compile and s.compile_gain_here is None and s.compile_gain is not None:  # the bf16 gain, on fp16
        return f"torch.compile (timed in {s.compile_precision}: {s.compile_gain:+.0%} there)"
    if s.torch_compile:
        return f"torch.compile ({s.compile_gain:+.0%})" if s.compile_gain is not None else "torch.compile"
    if s.compile_gain_here is not None:
        return f"eager (compile {s.known} {s.compile_gain_here:+.0%})"
    if s.compile_gain is not None:  # timed in the sweep's precision only: its gain is over that one's eager
        return f"eager (compile timed in {s.compile_precision} only: {s.compile_gain:+.0%} there)"
    return "eager"


def loader_words(s: Settings) -> str:
    loader = s.loader
    mark = "" if loader.measured else DEFAULT_LOADER_MARK
    return f"{loader.workers} workers{mark}, prefetch {loader.prefetch_factor}{', pinned' if loader.pin_memory else ''}"


def settings_words(s: Settings) -> str:
    """'batch 512 · bf16 autocast · torch.compile (+41%) · channels_last · 15 workers, prefetch 2, pinned'."""
    parts = [f"batch {format_count(s.batch)}" if s.batch else "batch unmeasured",
             PRECISION_WORDS.get(s.precision, s.precision), compile_words(s)]
    if s.channels_last:
        parts.append("channels_last")
    if s.allocator:
        parts.append("expandable segments" if "expandable" in s.allocator else s.allocator)
    parts.append(loader_words(s))
    return " · ".join(parts)


def settings_short(s: Settings) -> str:
    """'bf16 512 compile cl 15w' for a line of 80 columns: precision, batch, compile, channels_last (cl), expandable
    segments (exp), loader workers (w; * where not measured)."""
    batch = batch_short(s.batch) if s.batch else "?"
    parts = [s.precision, batch, "compile" if s.torch_compile else "eager"]
    if s.channels_last:
        parts.append("cl")
    if s.allocator:
        parts.append("exp")
    parts.append(f"{s.loader.workers}w{'' if s.loader.measured else DEFAULT_LOADER_MARK}")
    return " ".join(parts)


def short_count(n: int | None) -> str:
    """Batches up to 6 digits whole (format_count); larger ones as 1.05M (a table stays narrow)."""
    if n is None:
        return "-"
    return format_count(n) if n < 1_000_000 else f"{n / 1e6:.3g}M"


def batch_short(n: int) -> str:
    """A batch in a settings line: its digits up to a million (131072: one word), then 1.05M."""
    return str(n) if n < 1_000_000 else short_count(n)


def rate_range(e: Expected | None) -> str:
    """'1523–1617' (short_rate at each end; one figure where they round alike); '?' without a figure."""
    if e is None:
        return "?"
    low, high = short_rate(e.low_per_s), short_rate(e.high_per_s)
    return low if low == high else f"{low}–{high}"


def range_words(e: Expected | None) -> str:
    """'1685–1959 images/s', and why where the range is wide: '(±50%: no comparable measurement)'."""
    if e is None:
        return "?"
    words = f"{rate_range(e)} {e.unit}/s"
    return f"{words} ({e.wide_note})" if e.wide_note else words


def bound_label(e: Expected | None) -> str:
    """'memory-bandwidth-bound' (the judgement's label: typed, never cut out of a sentence)."""
    return e.judgement.label if e else "undetermined"


def format_hours(hours: float | None) -> str:
    if hours is None:
        return "—"
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:,.1f} h" if hours < 100 else f"{hours:,.0f} h"


def format_usd(usd: float | None) -> str:
    if usd is None:
        return "—"
    return f"${usd:,.2f}" if usd < 10 else f"${usd:,.0f}"


def band_words(low: float | None, high: float | None, fmt: Callable[[float | None], str]) -> str:
    """'3.1–4.4 h' where both ends are known; empty otherwise."""
    return f"{fmt(low)}–{fmt(high)}" if low is not None and high is not None else ""


def pick_settings(r: RankedInstance) -> str:
    """What a ranked instance runs, as the plan predicts it on its GPU: 'bf16 256 compile'."""
    if r.batch_per_gpu is None:
        return "—"
    parts = [r.precision or "?", batch_short(r.batch_per_gpu)]
    if r.torch_compile is not None:
        parts.append("compile" if r.torch_compile else "eager")
    return " ".join(parts)


def feed_words(r: RankedInstance) -> str:
    """What its vCPUs' loader workers feed, where the loader was measured: '≈ 4120/s (3 workers/GPU)'; '—' else."""
    if r.feed_samples_per_s is None:
        return "—"
    workers = f" ({r.loader_workers_per_gpu} workers/GPU)" if r.loader_workers_per_gpu else ""
    return f"{short_rate(r.feed_samples_per_s)}/s{workers}"
