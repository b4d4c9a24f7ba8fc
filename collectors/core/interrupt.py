"""Ctrl-C during a collection: stop at the next point, keeping everything measured.

The first SIGINT only asks to stop: the point being measured finishes, its document is saved (as
after every point), and the collection ends there with exit status 130 and the command that
resumes it. A second SIGINT stops at once (KeyboardInterrupt): the point in progress is abandoned
and measured again on resume; every point saved before it stays.
"""

from __future__ import annotations

import shlex
import signal
import sys
import threading
from types import FrameType
from typing import TextIO

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


class StopRequest:
    """`with StopRequest() as stop: ... if stop.requested: break` around the collection loop."""

    def __init__(self, stream: TextIO | None = None):
        self.requested = False
        self.stream = stream or sys.stderr
        self._previous: object = None

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.stream.write("\nCtrl-C: stopping after the current point (everything measured is kept); "
                          "press Ctrl-C again to stop now\n")
        self.stream.flush()


def resume_command(argv: list[str] | None, program: str = "python3 -m collectors") -> str:
    """The command line that resumes a collection: the same one (documents are reused, not measured again)."""
    args = sys.argv[1:] if argv is None else argv
    return f"{program} {shlex.join(args)}".strip()
