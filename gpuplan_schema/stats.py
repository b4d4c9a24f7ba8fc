"""Summary statistics that every timed figure carries: median, quartiles, extremes, count."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Stat:
    """A measured quantity summarised from n samples. `iqr` is the spread the tidy export shows."""

    median: float
    q1: float
    q3: float
    min: float
    max: float
    n: int

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        return self.iqr / self.median if self.median else float("inf")

    def check(self) -> str | None:
        if self.n < 1:
            return f"n is {self.n}; a statistic needs at least one sample"
        if self.min < 0:
            return f"min is {self.min}; measured figures are never negative"
        if not (self.min <= self.q1 <= self.median <= self.q3 <= self.max):
            return "not ordered as min <= q1 <= median <= q3 <= max"
        return None

    @classmethod
    def single(cls, value: float) -> Stat:
        """One reading (or one predicted figure) as a statistic of one sample: no spread."""
        return cls(value, value, value, value, value, 1)

    def scaled(self, factor: float) -> Stat:
        """The same samples under a monotone increasing change of unit (e.g. time → rate needs `inverted`)."""
        return Stat(self.median * factor, self.q1 * factor, self.q3 * factor, self.min * factor,
                    self.max * factor, self.n)

    def inverted(self, numerator: float) -> Stat:
        """numerator / x for each sample: turns seconds per operation into operations per second."""
        return Stat(numerator / self.median, numerator / self.q3, numerator / self.q1,
                    numerator / self.max, numerator / self.min, self.n)


def summarize(samples: list[float]) -> Stat:
    if not samples:
        raise ValueError("no samples to summarise")
    ordered = sorted(samples)
    if len(ordered) == 1:
        q1 = q3 = ordered[0]
    else:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return Stat(statistics.median(ordered), q1, q3, ordered[0], ordered[-1], len(ordered))
