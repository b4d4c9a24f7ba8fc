"""One collection at a time per results folder: an exclusive lock on OUT/MACHINE/.lock.

Two collections writing one folder would interleave their documents (and each would reuse points
the other is still measuring), so the second one stops at once with the holder's process id. The
lock is `flock(2)`: the kernel releases it when the holder exits, however it exits (SIGKILL
included), so a stale `.lock` file never blocks the next run; the file holds only the holder's pid,
for the message. Standard library only: this runs on bare GPU hosts.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = ".lock"


class LockHeld(Exception):
    """Another process holds the folder's lock; the message names it and what to do."""


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "a process that has not written its pid yet"


def _acquire(path: Path) -> int:
    """An open descriptor holding the lock on the file now at `path`."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockHeld(f"{path.parent}: another collection ({_holder(path)}) is writing this folder "
                           f"(lock {path}); wait for it to finish, or collect into another folder "
                           "(--out or --machine)") from None
        # The holder removes the file as it finishes: a lock taken on the removed file would not
        # exclude a third process that creates a new one, so take it again on the file now there.
        if _inode(path) == os.fstat(fd).st_ino:
            return fd
        os.close(fd)


@contextmanager
def results_lock(folder: Path) -> Iterator[Path]:
    """Hold `folder`'s lock for the block (creating the folder); raise LockHeld if another process has it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = _acquire(path)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        path.unlink(missing_ok=True)  # while still holding it, so no one else's file is removed
        os.close(fd)


def remove_stale_temp_files(folder: Path) -> list[Path]:
    """Temp files of atomic writes that a killed run left behind (`.NAME.json.XXXX.tmp`). Only safe
    under the folder's lock: otherwise one could be another collection's write in progress."""
    stale = sorted(p for p in folder.glob(".*.json.*.tmp") if p.is_file() and not p.is_symlink())
    for path in stale:
        path.unlink(missing_ok=True)
    return stale
