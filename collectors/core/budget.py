"""`--budget`: a collection's time, written as a person would ("3m", "90s", "1h30m", "180")."""

from __future__ import annotations

import argparse
import math
import os
import re

UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([hms])")


NO_LIMIT = math.inf  # `--budget none`: every stage, however long (the standard profile's default budget off)
STANDARD_BUDGET_S = 180.0  # the standard profile's default on a GPU: a new model's answer in three minutes


def parse_duration(text: str) -> float:
    """Seconds in `text`: a number of seconds, or parts with units h, m, s ("1h30m", "2m30s", "3m"), or "none"
    (NO_LIMIT). Raises argparse.ArgumentTypeError (one line, the value named) otherwise."""
    spoken = text.strip().lower()
    if spoken == "none":
        return NO_LIMIT
    try:
        seconds = float(spoken)
    except ValueError:
        parts = _PART.findall(spoken)
        if not parts or "".join(a + b for a, b in parts) != spoken.replace(" ", ""):
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected a time such as 3m, 90s, 1h30m or 180 (seconds), or none") from None
        seconds = sum(float(n) * UNITS[u] for n, u in parts)
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a time above zero")
    return seconds


# What saving the last document, the summary and the interpreter's exit (CUDA's teardown) take after a stop: on an
# H100 2-4 s (2026-11-27: with 2 s kept back, a 3-minute run ended at 182.4 s)
EXIT_MARGIN_S = 4.0
# Of that margin, what the process's end takes once it is ended at once (os._exit, CUDA's teardown by the driver):
# an H100, 2026-11-28: 0.3 s. A stop that has not ended the collection EXIT_MARGIN_S - HARD_EXIT_S after the
# budget's end (the main thread held in native code: torch.compile) ends the process there.
HARD_EXIT_S = 1.0


def process_age() -> float:
    """Seconds since this process started (Linux: /proc; elsewhere 0): a budget counts the interpreter's start and
    torch's import too, as the person who typed the command does."""
    try:
        with open("/proc/self/stat") as f:
            started_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))


def seconds_left(budget_s: float) -> float:
    """What is left of a budget that started with the process, kept back the exit's margin."""
    return budget_s - process_age() - EXIT_MARGIN_S


def effective_budget(budget_s: float | None, profile: str, on_gpu: bool) -> float | None:
    """The collection's budget in seconds (None: no limit): `--budget` where given (none: no limit), else the
    standard profile's three minutes on a GPU (a new model's answer first, the rest on the next run), else none."""
    if budget_s is not None:
        return None if budget_s == NO_LIMIT else budget_s
    return STANDARD_BUDGET_S if profile == "standard" and on_gpu else None
