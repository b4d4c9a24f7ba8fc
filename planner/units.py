"""Human units: plain number formatting every stage may use (a leaf: no jinja2, no altair).

The data is SI (seconds, bytes, FLOP/s); these turn it into the units people read. A column
keeps one unit (TFLOP/s, GB/s) so figures line up across machines; numbers keep three
significant figures but never round away whole digits (3007 GB/s, not 3010 GB/s). Spreads
keep two. Missing values show as an em dash, never as "None". The report's Jinja filters
(planner/render/filters.py) are these functions, registered in one place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from gpuplan_schema.stats import Stat

MISSING = "—"
VALUE_SIG = 3
SPREAD_SIG = 2
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def format_number(value: float, sig: int = VALUE_SIG) -> str:
    """`sig` significant figures, but whole digits are never rounded off."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    # The magnitude after rounding to `sig` figures, so 9.996 becomes "10.0", not "10.00".
    magnitude = math.floor(math.log10(abs(float(f"{value:.{sig - 1}e}"))))
    return f"{value:.{max(0, sig - 1 - magnitude)}f}"


def short_rate(value: float) -> str:
    """Three figures, with k/M/G from ten thousand up: 4126, 15.2k, 5.38M (a rate read at a glance)."""
    for scale, suffix, lower in ((1e9, "G", 1e9), (1e6, "M", 1e6), (1e3, "k", 1e4)):
        if value >= lower:
            return format_number(value / scale, 3) + suffix
    return format_number(value, 3)


def _scaled(value: float | None, scale: float, unit: str, sig: int = VALUE_SIG) -> str:
    if value is None:
        return MISSING
    return f"{format_number(value / scale, sig)} {unit}"


def format_flops(value: float | None, sig: int = VALUE_SIG) -> str:
    """FLOP/s, always in TFLOP/s so that GPUs and CPUs share one column unit."""
    return _scaled(value, 1e12, "TFLOP/s", sig)


def format_bandwidth(value: float | None, sig: int = VALUE_SIG) -> str:
    """Bytes per second, always in GB/s (decimal, as datasheets quote bandwidth)."""
    return _scaled(value, 1e9, "GB/s", sig)


def format_hertz(value: float | None, sig: int = VALUE_SIG) -> str:
    return _scaled(value, 1e6, "MHz", sig)


def format_watts(value: float | None, sig: int = VALUE_SIG) -> str:
    return _scaled(value, 1.0, "W", sig)


def format_intensity(value: float | None, sig: int = VALUE_SIG) -> str:
    return _scaled(value, 1.0, "FLOP/byte", sig)


def format_flop_count(value: float | None, sig: int = VALUE_SIG) -> str:
    """An amount of work (not a rate): '5.14 GFLOP', with the SI prefix that keeps the number at least 1."""
    if value is None:
        return MISSING
    scale, prefix = next(((s, p) for s, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
                          if abs(value) >= s), (1.0, ""))
    return f"{format_number(value / scale, sig)} {prefix}FLOP"


def format_bytes(value: float | None, sig: int = VALUE_SIG) -> str:
    """Memory sizes in binary units (GiB, MiB), as allocators and nvidia-smi count them."""
    if value is None:
        return MISSING
    index = 0 if value < 1024 else min(int(math.log(value, 1024)), len(BYTE_UNITS) - 1)
    return f"{format_number(value / 1024 ** index, sig)} {BYTE_UNITS[index]}"


def _time_unit(seconds: float) -> tuple[float, str]:
    """The largest of s, ms, µs, ns that keeps the number at least 1."""
    return next(((s, u) for s, u in TIME_UNITS if abs(seconds) >= s), TIME_UNITS[-1])


def format_duration(value: float | None, sig: int = VALUE_SIG) -> str:
    if value is None:
        return MISSING
    return _scaled(value, *_time_unit(value), sig)


def format_percent(fraction: float | None, sig: int = VALUE_SIG) -> str:
    """A fraction (0.763) as a percentage ('76.3%')."""
    if fraction is None:
        return MISSING
    return f"{format_number(fraction * 100, sig)}%"


THIN_SPACE = "\u2009"  # between digit groups of a count: one column in a terminal, never a line break in text


def format_count(value: int | float | None) -> str:
    """A count (a batch, samples, steps) whole, its digits grouped by thin spaces from 10 000 up: 4600,
    1 048 576 (SI: a four-digit number stays together). Never k/M: that is for rates (short_rate)."""
    if value is None:
        return MISSING
    text = f"{value:,.0f}" if isinstance(value, float) else f"{value:,}"
    return text.replace(",", "" if abs(value) < 10_000 else THIN_SPACE)


def format_text(value: object) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def format_shape(shape: list[int] | tuple[int, ...] | None) -> str:
    return MISSING if not shape else "×".join(str(s) for s in shape)


# Unit kinds the report's typed structures name; one formatter each.
UNIT_FORMATTERS: dict[str, Callable[[float | None], str]] = {
    "flops": format_flops,
    "bandwidth": format_bandwidth,
    "hertz": format_hertz,
    "watts": format_watts,
    "bytes": format_bytes,
    "duration": format_duration,
    "percent": format_percent,
    "intensity": format_intensity,
    "flop": format_flop_count,
}


def format_measure(value: object, unit: str) -> str:
    """Format `value` by its unit kind; kinds without a formatter ('text', 'count') print as text."""
    if value is None:
        return MISSING
    if unit == "count" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_count(value)
    formatter = UNIT_FORMATTERS.get(unit)
    if formatter is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        return format_text(value)
    return formatter(value)


def format_spread(stat: Stat | None, unit: str) -> str:
    """'± 0.79 TFLOP/s': the interquartile range, in the same unit as its median."""
    if stat is None:
        return MISSING
    if unit == "duration":  # the one auto-scaled unit here: follow the median's, not the spread's
        return f"± {_scaled(stat.iqr, *_time_unit(stat.median), SPREAD_SIG)}"
    return f"± {UNIT_FORMATTERS[unit](stat.iqr, SPREAD_SIG)}"


def format_stat(stat: Stat | None, unit: str) -> str:
    """The median in its unit: the figure a report quotes for a measurement."""
    return MISSING if stat is None else format_measure(stat.median, unit)


def format_date(created: str | None) -> str:
    """'2026-11-22T01:50:28Z' -> '2026-11-22'."""
    return MISSING if not created else created[:10]


SAFE_UNIT = re.compile(r"[A-Za-z][A-Za-z -]{0,23}")


def unit_label(unit: str) -> str:
    """What one sample is, as the charts may say it: a user workload's free text becomes 'samples'."""
    return unit if SAFE_UNIT.fullmatch(unit) else "samples"
