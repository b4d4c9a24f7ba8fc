"""Stopping a collection within seconds, whatever it is doing: Ctrl-C, or the end of its time budget.

A point can take a minute (torch.compile, a boundary probe of a large batch, cuDNN autotuning), so a stop does
not wait for it. The first SIGINT (or the budget's end, `stop_at`):

- ends every process the collection started (collectors/core/children.py: the boundary search's child,
  torch.compile's compile workers, torchrun and its ranks, data-loader workers);
- raises StopNow in the main thread at its next Python instruction: the point in progress is abandoned (it is
  measured again on resume) and the collection loop prints what it kept, the stages left and the command that
  resumes, exit status 130 (0 at the budget's end);
- except while a document is being saved (`protected`): the save completes first, so a finished point is
  never lost to a stop.

A second SIGINT ends the process at once (os._exit(130)), and so does a watchdog thread DEADLINE_S after the
first: it hears the signal through a wakeup file descriptor, written by the C-level handler, so a main thread
stuck in native code (where no Python handler can run) is ended too; the budget's timer thread does the same
`grace` seconds after the budget's end, with exit status 0: a collection ended by its budget ended as planned,
whichever way it had to be stopped. Every document saved before is kept (saves are atomic: gpuplan_schema/schema.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import TextIO

from collectors.core.children import kill_descendants

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
DEADLINE_S = 4.0        # after the first Ctrl-C, the process is gone by then whatever it was doing
# StopNow raised again every INSIST_S until the collection loop has it: an exception raised in the main thread
# wherever it is, a weakref callback or a __del__ included, is printed and dropped there (torch.compile's tracing
# runs such callbacks all the time). The budget's end and the insisting raise it from a thread of their own
# (PyThreadState_SetAsyncExc), not through a signal: on a GPU host a handler for SIGUSR1 did not run once CUDA and
# the profiler had started (H200, 2026-11-27: the 3-minute budget passed unheard and the run went on to 200 s).
INSIST_S = 0.5
# A second SIGINT counts as a second Ctrl-C only this long after the first: `timeout -s INT` (and some process
# managers) signal the process and then its group, one press delivered twice within microseconds.
SECOND_PRESS_S = 0.5


class StopNow(BaseException):  # noqa: N818 - it reads as what it does; BaseException: a user step catching
    """Raised in the main thread to abandon the point in progress (Exception cannot swallow it)."""


class StopRequest:
    """`with StopRequest(stream) as stop:` around the collection loop; `stop.requested` after it says why it ended
    early ("Ctrl-C", "budget"; "" when it ran through)."""

    def __init__(self, stream: TextIO | None = None, deadline_s: float = DEADLINE_S):
        self.requested = ""
        self.stream = stream or sys.stderr
        self.deadline_s = deadline_s
        self._previous_sigint: object = None
        self._protected = 0
        self._pending = False
        self._active = False
        self._wakeup: tuple[int, int] | None = None
        self._old_wakeup = -1
        self._budget_timer: threading.Timer | None = None
        self._budget_grace = deadline_s
        self._caught = False
        self._first_sigint: float | None = None

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is not threading.main_thread():  # signal handlers live in the main thread
            return self
        self._active = True
        self._previous_sigint = signal.signal(signal.SIGINT, self._on_sigint)
        read, write = os.pipe()
        os.set_blocking(write, False)
        self._wakeup = (read, write)
        self._old_wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, args=(read,), name="gpuplan-stop-watchdog", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._active = False
        if self._budget_timer:
            self._budget_timer.cancel()
        if self._wakeup is None:
            return
        signal.set_wakeup_fd(self._old_wakeup)
        signal.signal(signal.SIGINT, self._previous_sigint)  # type: ignore[arg-type]
        os.close(self._wakeup[1])  # the watchdog's read ends: it returns

    def caught(self) -> None:
        """The collection loop has the StopNow: raising it again stops."""
        self._caught = True

    def stop_at(self, seconds: float, grace: float | None = None) -> None:
        """The budget: stop `seconds` from now as a Ctrl-C would (without the second-press exit), and end the
        process `grace` seconds later (default the deadline) if the main thread is held in native code."""
        if not self._active:
            return
        self._budget_grace = self.deadline_s if grace is None else grace
        self._budget_timer = threading.Timer(max(0.0, seconds), self._on_budget)
        self._budget_timer.daemon = True
        self._budget_timer.start()

    @contextlib.contextmanager
    def protected(self) -> Iterator[None]:
        """A block a stop waits for (saving a document); the stop is raised as it ends."""
        self._protected += 1
        try:
            yield
        finally:
            self._protected -= 1
        if self._pending and not self._protected:
            self._pending = False
            raise StopNow

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self.requested == "Ctrl-C" and self._first_sigint is not None:
            if now - self._first_sigint >= SECOND_PRESS_S:
                self._exit_now("a second Ctrl-C")
            return  # the same press, delivered twice
        self._first_sigint = now
        self._stop("Ctrl-C", "\nCtrl-C: stopping now (everything finished is kept; the point in progress is "
                             "measured again on resume); press Ctrl-C again to end at once\n")

    def _on_budget(self) -> None:
        """The budget's timer thread: the stop a Ctrl-C makes, raised in the main thread from here; and, as the
        watchdog does after a Ctrl-C, the process ended `grace` seconds later (exit 0) if the collection is still in
        its loop (an H100, 2026-11-28: torch.compile held the main thread past the budget's end; ended at 4 s, the
        process was gone 0.3 s later, over the 3 minutes)."""
        if self.requested or not self._active:
            return
        self._announce("budget", "\n--budget: the time is up; stopping (everything finished is kept)\n")
        self._raise_in_main()
        time.sleep(self._budget_grace)
        if self._active and not self._caught:
            self._exit_now(f"the collection did not end within {self._budget_grace:g} s of the budget's end",
                           status=0)

    def _stop(self, why: str, line: str) -> None:
        self._announce(why, line)
        self._raise()

    def _announce(self, why: str, line: str) -> None:
        self.requested = why
        self.stream.write(line)
        self.stream.flush()
        kill_descendants()
        threading.Thread(target=self._insist, name="gpuplan-stop-again", daemon=True).start()

    def _raise(self) -> None:
        if self._protected:
            self._pending = True
            return
        raise StopNow

    def _insist(self) -> None:
        while self._active and not self._caught:
            time.sleep(INSIST_S)
            if self._active and not self._caught:
                self._raise_in_main()

    def _raise_in_main(self) -> None:
        """StopNow in the main thread at its next Python instruction, from another thread (after a save in
        progress: `protected`)."""
        if self._protected:
            self._pending = True
            return
        main = threading.main_thread().ident
        if main is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(main), ctypes.py_object(StopNow))

    def _exit_now(self, why: str, status: int = EXIT_INTERRUPTED) -> None:
        kill_descendants()
        self.stream.write(f"\nStopped at once ({why}); every document saved before is kept: the same command "
                          "resumes\n")
        self.stream.flush()
        os._exit(status)

    def _watch(self, read: int) -> None:
        """The watchdog: DEADLINE_S after the first stop, or at a second SIGINT, if the collection is still in its
        loop, end it. It hears the signals through the wakeup descriptor, so it acts even while the main thread is
        held in native code (a long kernel, a blocking call) where no Python handler runs."""
        first, sigint_at = None, None
        while True:
            timeout = None if first is None else max(0.0, first + self.deadline_s - time.monotonic())
            ready = _wait_readable(read, timeout)
            if ready is None:
                return
            if ready:
                data = os.read(read, 512)
                if not data:  # the pipe closed: the collection is over
                    break
                now = time.monotonic()
                if signal.SIGINT in data:
                    if sigint_at is not None and now - sigint_at >= SECOND_PRESS_S and self._active:
                        self._exit_now("a second Ctrl-C")
                    sigint_at = sigint_at or now
                if first is None and signal.SIGINT in data:
                    first = now
            elif first is not None and self._active:
                self._exit_now(f"the collection did not end within {self.deadline_s:g} s of the stop")
            else:
                break
        os.close(read)


def _wait_readable(fd: int, timeout: float | None) -> bool | None:
    """True when `fd` has data, False on timeout, None when it is closed."""
    import select
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    except (OSError, ValueError):
        return None
    return bool(ready)


def resume_command(argv: list[str] | None, program: str = "python3 -m collectors") -> str:
    """The command line that resumes a collection: the same one (documents are reused, not measured again)."""
    args = sys.argv[1:] if argv is None else argv
    return f"{program} {shlex.join(args)}".strip()
