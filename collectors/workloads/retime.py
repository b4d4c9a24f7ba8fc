"""`collect --retime-host`: every host-set point of a machine folder timed again, side by side, in one window.

The steady window (steady.py) times the points whose step the host's speed moves in one window per collection, so
that they compare like with like. A folder collected over several runs (resumed on another day, a workload added
later) holds several windows, and a virtual machine's host is not the same speed from one lease to the next: the
H200's reference workloads, collected over six days, issued the same steps 1.35-1.8x apart between leases
(results/h200/diagnostics/host-ops-2026-11-29), more than any prediction of a host-set step can be checked against.
This times every such point of the documents named again in one window, on the host the command runs on, and
rewrites each document with them: its other points, its boundaries and its collector version stay as they were
(the points are the same measurements, timed again), its `steady` stage says when and with what.

A workload whose document is missing, unreadable or measured on another device type is one clear line and exit 2
before anything runs (nothing is written); a point that fails to build keeps its earlier timing (steady.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

import torch

from collectors.core.device import pick_device
from collectors.core.interrupt import EXIT_INTERRUPTED, StopNow, StopRequest
from collectors.core.run_lock import results_lock
from collectors.workloads import WorkloadError
from collectors.workloads.collect import workload_name
from collectors.workloads.steady import ROUNDS, SLICE_S, Job, iter_steady_documents, needs_steady
from collectors.workloads.sweep import Context
from collectors.workloads.sweep_plan import instantiate, load_ceilings
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import StageRecord, WorkloadPayload
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import Document, DocumentError, build_document, load_document, save_document, utc_now


@dataclass(frozen=True)
class Earlier:
    """A workload's document as the folder holds it, and the spec that builds its workload."""

    spec: str
    path: Path
    document: Document

    @property
    def payload(self) -> WorkloadPayload:
        return self.document.payload


def load_for_retime(folder: Path, specs: list[str], device: torch.device) -> list[Earlier]:
    """Each named workload's document in `folder` (raises WorkloadError naming the file where one cannot be used)."""
    out = []
    for spec in specs:
        path = folder / f"workload-{sanitize_machine_id(workload_name(spec))}.json"
        if not path.is_file():
            raise WorkloadError(f"{path}: no such document to time again (collect {spec} first)")
        try:
            doc = load_document(path)
        except DocumentError as e:
            raise WorkloadError(f"{e}; nothing timed again") from e
        if not isinstance(doc.payload, WorkloadPayload):
            raise WorkloadError(f"{path}: kind {doc.kind!r}, not a workload document")
        if doc.payload.device != device.type:
            raise WorkloadError(f"{path}: payload.device is {doc.payload.device!r}, this run's is {device.type!r}: "
                                "a point is timed again only on the kind of device that measured it")
        out.append(Earlier(spec, path, doc))
    return out


def host_set_points(earlier: list[Earlier]) -> int:
    return sum(needs_steady(p, again=True) for e in earlier for p in e.payload.points)


def iter_retimed(earlier: list[Earlier], ctx: Context, progress: Progress, rounds: int = ROUNDS,
                 slice_s: float = SLICE_S) -> Iterator[tuple[Path, Document]]:
    """(path, document) of each document whose points were timed again, in the order given."""
    jobs = [Job(e.path.stem, e.spec, e.payload) for e in earlier]
    timed = dict(iter_steady_documents(jobs, lambda spec: instantiate(spec, ctx.device), ctx, progress, rounds,
                                       slice_s, again=True))
    when = utc_now()[:10]
    for e in earlier:
        before, after = e.payload, timed[e.path.stem]
        moved = sum(a is not b for a, b in zip(before.points, after.points, strict=True))
        if not moved:
            continue
        record = StageRecord("steady", "done", _steady_seconds(before),
                             f"{moved} host-set points timed again on {when} in one window with "
                             f"{len(earlier)} workload(s) (collect --retime-host)")
        stages = [s for s in before.stages or [] if s.name != "steady"] + [record]
        payload = replace(before, points=after.points, stages=stages)
        doc = e.document
        yield e.path, build_document(doc.kind, doc.collector.name, doc.collector.version, doc.machine, payload)


def _steady_seconds(payload: WorkloadPayload) -> float:
    earlier = payload.stage("steady")
    return earlier.seconds if earlier else 0.0


def run_retime(folder: Path, specs: list[str], stream: TextIO, rounds: int = ROUNDS, slice_s: float = SLICE_S) -> int:
    """`collect --retime-host`: exit 0 (every document rewritten that had host-set points) or 130 (stopped: the
    documents are as they were; nothing is half-written). Bad input or the folder in use raises WorkloadError or
    LockHeld before anything is written (the collect command's exit 2)."""
    if not specs:
        raise WorkloadError("--retime-host: name the workloads whose documents to time again (--workload, as the "
                            "collection that measured them named them)")
    device = pick_device()
    with results_lock(folder), StopRequest(stream) as stop:
        earlier = load_for_retime(folder, specs, device)
        if not host_set_points(earlier):
            stream.write(f"{folder}: no host-set point in the {len(earlier)} documents named; nothing to time\n")
            return 0
        ctx = Context(device, load_ceilings(folder))
        try:
            with Progress("retime", total=1, stream=stream) as progress:
                for path, doc in iter_retimed(earlier, ctx, progress, rounds, slice_s):
                    with stop.protected():
                        save_document(doc, path)
                    stream.write(f"{path}: {doc.payload.stage('steady').reason}\n")
                progress.advance("done")
        except (StopNow, KeyboardInterrupt):
            stop.caught()
            stream.write("stopped: documents written so far are complete; the others are as they were\n")
            return EXIT_INTERRUPTED
    return 0
