"""The collection loop: every chosen collector in turn, each document saved the moment it is yielded.

What a paid GPU run must survive is decided here:

- one collection per results folder at a time (collectors/core/run_lock.py);
- a rerun resumes: a document already complete for this run is skipped and said so, a partial one
  continued (collectors/core/resume.py); `--fresh` measures everything again;
- a collector that raises is recorded in one line and the next one runs; the outcome lists the
  failures (the caller exits 1);
- Ctrl-C stops within seconds, abandoning the point in progress and the processes it started; a second Ctrl-C
  at once (collectors/core/interrupt.py); the outcome says so (the caller exits 130 with the stages left and
  the command that resumes);
- `--budget`: the stages that would not fit are skipped (collectors/workloads/stages.py), and the collection
  stops at the budget's end as at a Ctrl-C;
- every save is atomic (gpuplan_schema/schema.py), so SIGKILL at any moment leaves the previous version
  of a document or the new one, never half of one; temp files a kill left are removed on the next run.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from collectors.core.budget import EXIT_MARGIN_S, HARD_EXIT_S, seconds_left
from collectors.core.device import error_line
from collectors.core.interrupt import StopNow, StopRequest
from collectors.core.machine import default_machine_id
from collectors.core.resume import why_complete
from collectors.core.run_lock import remove_stale_temp_files, results_lock
from collectors.core.time_limit import DEFAULT_POINT_TIMEOUT_S
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import PAYLOADS
from gpuplan_schema.progress import Progress
from gpuplan_schema.schema import Document, DocumentError, build_document, load_document, save_document

if TYPE_CHECKING:  # the distributed collectors' options, carried through; core imports no collector
    from collectors.distributed.nodes import NodeOptions

KIND_OF = {payload_type: kind for kind, payload_type in PAYLOADS.items()}
TRACEBACK_ENV = "GPUPLAN_TRACEBACK"  # set to 1 to see a failed collector's traceback


@dataclass(frozen=True)
class Options:
    out: Path = Path("results")
    machine: str | None = None
    only: list[str] | None = None
    profile: str = "quick"
    workloads: list[str] | None = None
    dataset_cache: Path | None = None  # the dataloader's synthetic JPEGs (default: ~/.cache/gpuplan)
    fresh: bool = False                # measure everything again instead of reusing the documents there
    gpus: int | None = None                 # multi-GPU collectors: ranks (default: every visible GPU)
    dist_backend: str | None = None         # nccl (default with GPUs) or gloo (CPU processes, for testing)
    batches: list[str] | None = None        # ddp's per-GPU batches, NAME=N
    dist_timeout: float | None = None       # seconds for a whole multi-GPU launch
    point_timeout: float | None = DEFAULT_POINT_TIMEOUT_S  # seconds per workload point; None or 0: no limit
    nodes: NodeOptions | None = None        # multi-GPU collectors across nodes (torchrun rendezvous)
    budget_s: float | None = None           # the whole collection's time (--budget); None: no limit
    deadline: float | None = None           # time.monotonic() at the budget's end, set by run_collection
    phase: str | None = None                # a collector run in two parts (workloads: "answer", "widen")


# A collector yields (file stem, payload) pairs; each is saved the moment it is yielded, so a
# long collection keeps what it finished.
Run = Callable[[Progress, Path, Options], Iterator[tuple[str, Any]]]


@dataclass(frozen=True)
class Collector:
    name: str
    version: str
    run: Run
    help: str
    # The documents a run writes, by file stem, each with the workload it measures (None: the collector's
    # one document). Default: one document named after the collector.
    stems: Callable[[Options], dict[str, str | None]] | None = None
    # Whether a complete document of this collector answers these options (beyond profile and device).
    matches: Callable[[Any, Options], bool] | None = None
    # Whether a document, complete or not, holds what `options.phase` measures (a phase already done is skipped).
    phase_done: Callable[[Any, Options], bool] | None = None
    phases: tuple[str, ...] = ()  # the phases its run is split into, in order (workloads: answer, widen)
    # What a rerun would still measure of its documents not done, one line each (default: their stems).
    left: Callable[[Path, dict[str, str | None], dict[str, str], Options], list[str]] | None = None

    def documents(self, options: Options) -> dict[str, str | None]:
        return self.stems(options) if self.stems else {self.name: None}


@dataclass
class Outcome:
    folder: Path
    lines: dict[str, str] = field(default_factory=dict)  # per document: its last summary line
    skipped: list[str] = field(default_factory=list)      # stems already complete
    failed: list[str] = field(default_factory=list)       # "ceilings: RuntimeError: ...", "workload-x: ..."
    stopped: str = ""                                     # "Ctrl-C" or "budget" where the collection was cut
    errors: dict[str, list[str]] = field(default_factory=dict)  # per document: its benchmarks that failed
    left: list[str] = field(default_factory=list)         # what a rerun would still measure, one line each

    @property
    def interrupted(self) -> bool:
        return self.stopped == "Ctrl-C"

    @property
    def all_failed(self) -> list[str]:
        """Collectors that raised, then each document's failed benchmarks (points with status error)."""
        return self.failed + [f"{stem}: {line}" for stem, lines in self.errors.items() for line in lines]


def machine_folder(options: Options) -> tuple[str, Path]:
    machine_id = sanitize_machine_id(options.machine) if options.machine else default_machine_id()
    return machine_id, options.out / machine_id


Step = tuple[str, str | None]  # a collector's name and the phase it runs (None: all of it)


def run_collection(options: Options, collectors: dict[str, Collector], device: str,
                   summary_of: Callable[[Any], str], stream: TextIO | None = None,
                   order: list[Step] | None = None) -> Outcome:
    """Run the chosen collectors into OUT/MACHINE under its lock (raises LockHeld when another run has it), in
    `order` (default: each collector once, in `collectors`' order; only those `options.only` names).
    `device` is the device type the workloads run on ("cuda", "cpu"), for what a rerun may keep."""
    stream = stream or sys.stderr
    machine_id, folder = machine_folder(options)
    outcome = Outcome(folder)
    steps = [(n, phase) for n, phase in order or [(n, None) for n in collectors] if n in (options.only or collectors)]
    with results_lock(folder), StopRequest(stream) as stop:
        if options.budget_s is not None:
            left = seconds_left(options.budget_s)
            options = replace(options, deadline=time.monotonic() + left)
            stop.stop_at(left, grace=EXIT_MARGIN_S - HARD_EXIT_S)
        for stale in remove_stale_temp_files(folder):
            stream.write(f"removed {stale}, left by a run that was killed while saving\n")
        try:
            for name, phase in steps:
                _run_guarded(collectors[name], machine_id, replace(options, phase=phase), device, summary_of,
                             outcome, stop, stream)
        except (StopNow, KeyboardInterrupt):  # the point in progress is abandoned; everything saved is kept
            stop.caught()
        outcome.stopped = stop.requested
    return outcome


def _run_guarded(c: Collector, machine_id: str, options: Options, device: str, summary_of: Callable[[Any], str],
                 outcome: Outcome, stop: StopRequest, stream: TextIO) -> None:
    """One collector; an exception it raises is recorded as its failure and the collection goes on."""
    try:
        _run_one(c, machine_id, options, device, summary_of, outcome, stop, stream)
    except Exception as e:
        outcome.failed.append(f"{c.name}: {error_line(e)}")
        stream.write(f"{c.name}: failed: {error_line(e)} (the other collectors still run; "
                     f"{TRACEBACK_ENV}=1 shows the traceback)\n")
        if os.environ.get(TRACEBACK_ENV):
            traceback.print_exc(file=stream)


def split_done(c: Collector, folder: Path, options: Options,
               device: str) -> tuple[Options | None, dict[str, str]]:
    """(the options to run the collector with, None if nothing is left; why each complete document is kept)."""
    documents = c.documents(options)
    if options.fresh:
        return options, {}
    done = {}
    for stem in documents:
        matches = (lambda payload: c.matches(payload, options)) if c.matches else None
        why = why_complete(folder / f"{stem}.json", c.name, c.version, options.profile, device, matches)
        if not why and options.phase and c.phase_done and phase_done(folder / f"{stem}.json", c, options):
            why = f"its {options.phase} stages done"
        if why:
            done[stem] = why
    if len(done) == len(documents):
        return None, done
    left = [spec for stem, spec in documents.items() if stem not in done]
    if done and all(left):  # one document per workload: run only the workloads left
        return replace(options, workloads=left), done
    return options, done


def phase_done(path: Path, c: Collector, options: Options) -> bool:
    """Whether the document at `path` (of this collector and version) holds what `options.phase` measures."""
    try:
        doc = load_document(path)
    except DocumentError:
        return False
    return (doc.collector.name, doc.collector.version) == (c.name, c.version) and bool(
        c.phase_done and c.phase_done(doc.payload, options))


def _run_one(c: Collector, machine_id: str, options: Options, device: str, summary_of: Callable[[Any], str],
             outcome: Outcome, stop: StopRequest, stream: TextIO) -> None:
    folder = outcome.folder
    todo, done = split_done(c, folder, options, device)
    if options.phase and options.phase != c.phases[-1]:
        done = {}  # said once, by the collector's last phase
    for stem, why in done.items():
        outcome.skipped.append(stem)
        outcome.errors[stem] = describe_errors(load_document(folder / f"{stem}.json").payload)
        outcome.lines[stem] = f"{stem:<24} skipped: {why} in {folder / f'{stem}.json'}; --fresh measures it again"
        stream.write(f"{c.name}: {outcome.lines[stem]}\n")
    if todo is None:
        return
    started = time.perf_counter()
    with Progress(c.name, total=1, stream=stream) as progress:
        for stem, payload in c.run(progress, folder, todo):
            if isinstance(payload, Document):  # already saved, by rank 0 of a multi-GPU launch
                path, payload = folder / f"{stem}.json", payload.payload
            else:
                doc = build_document(KIND_OF[type(payload)], c.name, c.version, machine_id, payload)
                with stop.protected():  # a stop waits for the save: a finished point is never lost
                    path = save_document(doc, folder / f"{stem}.json")
            # a document's own time where it keeps one (a workload's, over its stages and runs), else this run's
            seconds = getattr(payload, "elapsed_s", None) or time.perf_counter() - started
            outcome.lines[stem] = f"{stem:<24} {seconds:6.1f}s  {path}  {summary_of(payload)}"
            outcome.errors[stem] = describe_errors(payload)
        progress.advance("done")


# The fields that tell one benchmark of a document from another, in the order they are shown.
IDENTIFYING = ("workload", "op", "name", "dtype", "sweep", "precision", "gpus", "batch", "per_gpu_batch", "seq_len",
               "variant", "size_bytes", "workers", "prefetch", "pin_memory")
MAX_ERRORS_SHOWN = 3


def describe_errors(payload: Any) -> list[str]:
    """One line per benchmark of a payload whose status is `error` (the first few, then a count)."""
    found = [obj for obj in _iter_dataclasses(payload) if getattr(obj, "status", None) == "error"]
    lines = []
    for obj in found[:MAX_ERRORS_SHOWN]:
        what = " ".join(f"{name}={getattr(obj, name)}" for name in IDENTIFYING
                        if getattr(obj, name, None) not in (None, ""))
        lines.append(f"{type(obj).__name__} {what}: {getattr(obj, 'reason', None) or 'error'}".replace("  ", " "))
    if len(found) > MAX_ERRORS_SHOWN:
        lines.append(f"and {len(found) - MAX_ERRORS_SHOWN} more with status error")
    return lines


def _iter_dataclasses(value: Any) -> Iterator[Any]:
    if is_dataclass(value):
        yield value
        for f in fields(value):
            yield from _iter_dataclasses(getattr(value, f.name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _iter_dataclasses(item)
