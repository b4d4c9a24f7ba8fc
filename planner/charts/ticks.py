"""Round ticks for log axes, so that no two labels collide on a chart as wide as the PDF's text (560 px) or a
third of it: powers of two for batch and sequence axes, powers of ten for intensities, 1-2-5 steps for small
charts of hours and dollars."""

from __future__ import annotations

import math

import altair as alt

MAX_TICKS = 8  # on a 560 px PDF chart, labels of up to six digits stay apart


def pow2_ticks(low: float, high: float, measured: list[int]) -> list[int]:
    """Round ticks for a log-2 axis over [low, high]: powers of two, every one when they are few, else every
    second or third, so that labels never collide; the measured values when no power of two falls inside."""
    first, last = math.ceil(math.log2(low)), math.floor(math.log2(high))
    if last - first < 1:
        return sorted(set(measured))
    step = 1
    while (last - first) // step + 1 > MAX_TICKS:
        step += 1
    return [2 ** k for k in range(first, last + 1, step)]


def decade_ticks(low: float, high: float) -> list[float]:
    """Powers of ten over [low, high]: a log axis labelled 0.01, 0.1, 1, 10, … (Vega's own ticks add 2 and 5
    between them, whose labels collide on a PDF-wide chart)."""
    first, last = math.ceil(math.log10(low)), math.floor(math.log10(high))
    return [float(f"1e{k}") for k in range(first, last + 1)]


def log10_axis(low: float, high: float) -> alt.Axis:
    return alt.Axis(values=decade_ticks(low, high), format="~g", labelOverlap=True)


def log_ticks(low: float, high: float) -> list[float]:
    """Round ticks for a small log axis: 1, 2, 5 × 10^k inside [low, high], or only the powers of ten when
    those would crowd a chart a third of a page wide."""
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for steps in ((1, 2, 5), (1, 3), (1,)):
        ticks = [float(f"{m}e{k}") for k in decades for m in steps if low <= m * 10 ** k <= high]
        if len(ticks) <= 5:
            return ticks
    return ticks
