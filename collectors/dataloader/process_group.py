"""Memory and CPU time of this process and its children (the DataLoader's workers), through psutil.

Memory is the sum of PSS (proportional set size) over the group. Workers are forked from the main
process and share its pages (the Python interpreter, torch's libraries, the dataset object) until they
write to them, and batches travel between processes in shared memory mapped by both sides: summed RSS
counts every shared page once per process (16 workers would count torch's libraries 17 times), summed
USS counts no page that two processes share (neither the libraries nor a batch both sides map). PSS
charges each page 1/n to each of the n processes mapping it, so the sum is the memory the group holds
(pages it shares with processes outside the group, such as libraries, counted for the group's share).
Where the system gives no PSS (not Linux), RSS is summed instead and the payload says so.

PSS sees mapped pages only. A batch a worker has queued but the main process has not yet received lives in
a shared-memory file that no process maps any more: the worker unmapped it after queueing and only holds a
file descriptor to it until the main process collects it (torch's file_descriptor sharing strategy). Those
are exactly the batches of a full prefetch buffer, so the group's memory adds the shared-memory files its
processes hold open without mapping them (read from /proc/<pid>/fd and /proc/<pid>/maps).

psutil is imported when a group is made; `open_group` returns None, with the reason, when it is absent.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass

NO_PSUTIL = "no memory or CPU figures: needs psutil (pip install psutil)"
SHARED_PREFIXES = ("/dev/shm/", "/memfd:")   # where torch puts tensors shared between processes
# A /proc/<pid>/maps line: address perms offset dev inode path; the inode of each shared-memory mapping.
SHARED_MAPPING = re.compile(rb"^\S+ \S+ \S+ \S+ (\d+) +(?:/dev/shm/|/memfd:)", re.MULTILINE)


@dataclass(frozen=True)
class GroupMemory:
    bytes: int                 # PSS (or RSS) summed, plus `unmapped_shared_bytes`
    unmapped_shared_bytes: int
    processes: int


def shared_files(pid: int) -> tuple[dict[int, int], set[int]]:
    """({inode: allocated bytes} of shared-memory files `pid` holds open, {inodes} it maps); empty where
    /proc cannot be read (not Linux, or the process is gone)."""
    held: dict[int, int] = {}
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            path = f"/proc/{pid}/fd/{fd}"
            try:
                if os.readlink(path).startswith(SHARED_PREFIXES):
                    stat = os.stat(path)
                    held[stat.st_ino] = stat.st_blocks * 512
            except OSError:
                continue  # closed while we looked
        # A CUDA process maps thousands of regions: scan the text in C (a regex), not line by line in Python,
        # since this runs on a thread of the process being measured.
        with open(f"/proc/{pid}/maps", "rb") as maps:
            mapped = {int(inode) for inode in SHARED_MAPPING.findall(maps.read())}
    except (OSError, ValueError):
        return held, set()
    return held, mapped


class ProcessGroup:
    """The calling process and all its descendants, as they are at each call."""

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self.main = psutil.Process()
        self.measure = "pss" if hasattr(self.main.memory_full_info(), "pss") else "rss"

    def processes(self) -> list:
        return [self.main, *self.main.children(recursive=True)]

    def _memory_of(self, process) -> int:  # noqa: ANN001 - a psutil.Process
        if self.measure == "pss":
            return process.memory_full_info().pss
        return process.memory_info().rss

    def memory(self) -> GroupMemory:
        total, count = 0, 0
        held: dict[int, int] = {}
        mapped: set[int] = set()
        for process in self.processes():
            try:
                total += self._memory_of(process)
                count += 1
            except (self._psutil.NoSuchProcess, self._psutil.AccessDenied, self._psutil.ZombieProcess):
                continue  # a worker that exited between the listing and the reading
            files, maps = shared_files(process.pid)
            held.update(files)
            mapped |= maps
        unmapped = sum(size for inode, size in held.items() if inode not in mapped)
        return GroupMemory(total + unmapped, unmapped, count)

    def cpu_seconds(self) -> dict[int, float]:
        """User + system CPU seconds of each live process, by pid (a window's use is the difference)."""
        seconds = {}
        for process in self.processes():
            try:
                times = process.cpu_times()
                seconds[process.pid] = times.user + times.system
            except (self._psutil.NoSuchProcess, self._psutil.AccessDenied, self._psutil.ZombieProcess):
                continue
        return seconds


def open_group() -> tuple[ProcessGroup | None, str | None]:
    """The group, or None and why: memory and CPU figures are then left out, throughput is still measured."""
    try:
        return ProcessGroup(), None
    except ImportError:
        return None, NO_PSUTIL


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two readings by the processes alive at both."""
    return sum(after[pid] - before[pid] for pid in before.keys() & after.keys())


class MemorySampler:
    """Reads the group's memory every `period_s` on a thread of its own and keeps the largest reading.

    Each reading costs a few milliseconds of kernel time per process (the kernel walks the page
    tables for PSS), so the period is kept long; the thread's time is part of the main process's CPU.
    """

    def __init__(self, group: ProcessGroup, period_s: float):
        self.group, self.period_s = group, period_s
        self.peak_bytes, self.samples = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpuplan-memory", daemon=True)

    def _run(self) -> None:
        while True:
            self.take()
            if self._stop.wait(self.period_s):
                return

    def take(self) -> None:
        reading = self.group.memory()
        self.peak_bytes = max(self.peak_bytes, reading.bytes)
        self.samples += 1

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.take()  # one last reading at the end of the window


def wait_until_idle(group: ProcessGroup, timeout_s: float, interval_s: float = 0.2,
                    idle_cores: float = 0.1) -> tuple[bool, float]:
    """Wait until the group uses less than `idle_cores` of CPU over an interval (the workers have filled
    every prefetch slot and wait); returns (went idle, seconds waited)."""
    started = time.perf_counter()
    before = group.cpu_seconds()
    while time.perf_counter() - started < timeout_s:
        time.sleep(interval_s)
        after = group.cpu_seconds()
        if cpu_used(before, after) < idle_cores * interval_s:
            return True, time.perf_counter() - started
        before = after
    return False, time.perf_counter() - started
