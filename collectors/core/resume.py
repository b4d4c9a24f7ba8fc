"""Which documents a rerun of `collect` can keep: those a finished run of the same collector left.

A collection that was stopped (Ctrl-C, SIGKILL, a lost host) is resumed by running the same command
again. A document that is already complete for what this run asks is skipped, and said so; a partial
workload document is continued point by point (collectors/workloads/collect.py); anything else is
measured (again) and replaced. `--fresh` measures everything again.

Complete means: it reads back; same collector and version; not marked `complete: false`; its `status`,
where it has one, is `ok` (a skipped or failed document is tried again); measured on this kind of
device; its profile covers this run's (quick < standard < capacity < full: a larger profile's document
holds every point of a smaller one); for the workloads, the boundaries the profile searches with expandable
segments (collectors/workloads/collect.py: holds_allocator_boundaries); and, for the multi-GPU
collectors, the same world and batches.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuplan_schema.schema import DocumentError, load_document

PROFILE_ORDER = ("quick", "standard", "capacity", "full")


def profile_covers(done: str, wanted: str) -> bool:
    if done == wanted:
        return True
    if done not in PROFILE_ORDER or wanted not in PROFILE_ORDER:
        return False
    return PROFILE_ORDER.index(done) >= PROFILE_ORDER.index(wanted)


def why_complete(path: Path, collector: str, version: str, profile: str, device: str,
                 matches: Callable[[Any], bool] | None = None) -> str | None:
    """Why the document at `path` already answers this run ("complete (standard profile)"), or None
    when it must be measured."""
    if not path.is_file() or path.is_symlink():
        return None
    try:
        doc = load_document(path)
    except DocumentError:
        return None  # unreadable: measured again, and the file replaced
    payload = doc.payload
    if (doc.collector.name, doc.collector.version) != (collector, version):
        return None
    if getattr(payload, "complete", True) is not True or getattr(payload, "status", "ok") != "ok":
        return None
    if getattr(payload, "device", device) != device:
        return None
    done = getattr(payload, "profile", None)
    if done is not None and not profile_covers(done, profile):
        return None
    if matches is not None and not matches(payload):
        return None
    return f"complete ({done} profile)" if done else "complete"


def same_world(payload: Any, gpus: int | None, backend: str | None) -> bool:
    """A multi-GPU document answers a run that asks for its number of ranks and backend (or either by default)."""
    return (gpus is None or payload.world_size == gpus) and (backend is None or payload.backend == backend)


def same_ddp_batches(payload: Any, batches: list[str] | None) -> bool:
    """ddp's document answers a run whose --batch NAME=N pairs it measured."""
    measured = {w.workload: w.per_gpu_batch for w in payload.workloads}
    for pair in batches or []:
        name, _, value = pair.partition("=")
        if not value.isdigit() or measured.get(name) != int(value):
            return False
    return True
