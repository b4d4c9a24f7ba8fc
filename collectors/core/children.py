"""The processes this collection started, however deep: the boundary search's child, torch.compile's compile
workers (inductor's subprocess pool and its workers), the data loader's workers, torchrun and its ranks.

A stop (Ctrl-C, the time budget) ends them all at once: what they were measuring is abandoned anyway, and a
child left running would hold the GPU, or hold up this process's exit (inductor's pool waits up to 300 s for
its sidecar; a DataLoader joins each worker for 5 s; torchrun runs in a session of its own, so a terminal's
Ctrl-C does not reach it). Found through /proc (Linux, where the collectors run); elsewhere there is nothing to
find and nothing is done. Standard library only.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

PROC = Path("/proc")


def parent_of(stat_line: str) -> int | None:
    """The parent pid from a /proc/PID/stat line (the command, in parentheses, may hold spaces and ')')."""
    try:
        return int(stat_line.rsplit(")", 1)[1].split()[1])
    except (IndexError, ValueError):
        return None


def descendants(root: int | None = None) -> list[int]:
    """Every process below `root` (default: this one), parents before their children."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in PROC.glob("[0-9]*/stat") if PROC.is_dir() else []:
        try:
            ppid = parent_of(entry.read_text())
        except OSError:  # it ended while we looked
            continue
        if ppid is not None:
            children.setdefault(ppid, []).append(int(entry.parent.name))
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


def kill_descendants(root: int | None = None) -> list[int]:
    """SIGKILL every descendant of `root` (found first, then killed: a rank whose launcher dies first is still
    reached); returns the pids signalled."""
    found = descendants(root)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return found
