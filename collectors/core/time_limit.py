"""A time limit per measured point (`--point-timeout`), so one hung step cannot hold a rented GPU.

Two layers, because Python can only interrupt Python:

- `soft_limit`: SIGALRM (setitimer) raises PointTimeout in the main thread at the limit. Python
  runs a signal handler between bytecodes, so this stops a step that loops or waits in Python
  (`time.sleep`, a data-loading loop, a Python-level retry) and any native call that returns to
  the interpreter now and then (every torch op does, between ops). The point is recorded as
  status `error`, "timed out after N s", and the collection goes on with the next point. Queued
  CUDA work is finished, not cut, before the next point starts (the collector synchronises).
- `hard_limit`: a step stuck inside one native call (a CUDA kernel that never ends, a deadlocked
  collective) never returns to the interpreter, so no exception can reach it. A watchdog thread
  then ends the whole process, `GRACE_S` after the soft limit, with exit status 124 and one line
  naming the point. That thread needs Python's GIL, which a waiting CUDA or NCCL call releases;
  a native loop that holds the GIL starves it, so faulthandler's watchdog (a C thread that needs
  no GIL) ends the process another `GRACE_S` later, with the stack of every thread and exit
  status 1. Either way every point finished before is already saved: the same command resumes,
  and measures that point again (drop the workload, or fix it, if it hangs every time).

PointTimeout derives from BaseException, as asyncio's CancelledError does, so that a user step
catching `Exception` cannot swallow it and keep running past its limit.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

DEFAULT_POINT_TIMEOUT_S = 900.0  # 15 min: the slowest real point (compiling, cuDNN autotuning) takes ~70 s
GRACE_S = 60.0                   # after the soft limit, before the watchdog ends the process
EXIT_HUNG = 124                  # as timeout(1) reports a command it had to stop


class PointTimeout(BaseException):  # noqa: N818 - it reads as what happened: the point timed out
    def __init__(self, seconds: float):
        super().__init__(f"timed out after {seconds:g} s (--point-timeout)")


def _usable(seconds: float | None) -> bool:
    return bool(seconds) and threading.current_thread() is threading.main_thread()


@contextmanager
def soft_limit(seconds: float | None) -> Iterator[None]:
    """Raise PointTimeout in this (main) thread after `seconds`; no limit for None or 0, or off the
    main thread (where Python delivers no signals)."""
    if not _usable(seconds):
        yield
        return
    armed = True

    def expire(signum: int, frame: FrameType | None) -> None:
        if armed:  # a signal that arrives as the block ends is ignored, not raised into the cleanup
            raise PointTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def hard_limit(seconds: float | None, what: str, grace_s: float = GRACE_S) -> Iterator[None]:
    """End the process (exit 124) if the block is still running `grace_s` after `seconds`: it is stuck
    where `soft_limit` cannot reach it; or, if it holds the GIL, `grace_s` later (exit 1, stacks dumped)."""
    if not seconds:
        yield
        return
    watchdog = threading.Timer(seconds + grace_s, _end_stuck_process, (what, seconds, seconds + grace_s))
    watchdog.daemon = True
    watchdog.start()
    backstop = sys.__stderr__ is not None  # faulthandler writes to a real file descriptor
    if backstop:
        faulthandler.dump_traceback_later(seconds + 2 * grace_s, exit=True, file=sys.__stderr__)
    try:
        yield
    finally:
        if backstop:
            faulthandler.cancel_dump_traceback_later()
        watchdog.cancel()


def _end_stuck_process(what: str, limit: float, waited: float) -> None:
    sys.stderr.write(
        f"\nerror: {what} is still running {waited:g} s after it started, past its limit of {limit:g} s "
        "(--point-timeout), stuck outside Python (a hung CUDA kernel or a blocking native call) where it "
        "cannot be interrupted. Ending the collection: every finished point is saved; run the same command "
        "to resume (this point is measured again).\n")
    sys.stderr.flush()
    os._exit(EXIT_HUNG)  # no cleanup can run: the main thread is stuck, and it may hold any lock
