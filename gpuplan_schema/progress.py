"""A progress bar on stderr with the standard library only (GPU hosts may lack tqdm)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """`with Progress("ceilings", total=12) as p: p.advance("bf16 8192³")`.

    Redraws one line in place on a terminal; elsewhere (CI logs, pipes) prints a line per step.
    """

    def __init__(self, name: str, total: int, stream: TextIO | None = None):
        self.name, self.total, self.done = name, max(total, 1), 0
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.tty = getattr(self.stream, "isatty", lambda: False)()

    def __enter__(self) -> Progress:
        self._draw("starting")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def advance(self, label: str, steps: int = 1) -> None:
        self.done = min(self.total, self.done + steps)
        self._draw(label)

    def note(self, label: str) -> None:
        """Say what is running now without counting a step."""
        self._draw(label)

    def warn(self, text: str) -> None:
        """One line of its own (a collector that degrades says why), the bar redrawn below it on a terminal."""
        if self.tty:
            self.stream.write("\r" + " " * 120 + "\r" + text + "\n")
            self.stream.flush()
            self._draw("")
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _draw(self, label: str) -> None:
        width = 24
        filled = round(width * self.done / self.total)
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.perf_counter() - self.started
        line = f"{self.name:<12} [{bar}] {self.done}/{self.total} {elapsed:5.1f}s {label}"
        if self.tty:
            self.stream.write("\r" + line[:120].ljust(120))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
