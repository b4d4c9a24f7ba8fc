"""A boundary search's probes traced one after another on one model, and replayed at a capacity as the GPU runs them.

The collector searches a largest batch in one process, probe after probe on one built workload
(collectors/workloads/boundary.py `probe`: two training steps, then gc and empty_cache). What a probe leaves live
is not freed by empty_cache, nor are the segments it sits in: the model's gradients (zero_grad at the next probe's
first step frees them) and any tensor a model keeps on itself between steps (Transformer-XL's recurrence memory,
`self.mems`). A probe that runs out of memory leaves what its steps had made live by then. The next probe's blocks
are carved out of those segments, so a probe's answer depends on the probes before it; a job started on its own at
that batch is the first probe of a chain (capacity.py's least capacity).

`probe_chain` traces the probes in order on one model (the events of each, and where each probe's two steps end);
`replay_chain` replays them at a capacity, the allocator returning its cached segments and retrying at its limit
(capacity.py), a failed probe's unfinished step dropped as its exception unwinds, and says which probes ran.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, replace

from collectors.trace.allocator import Allocator, OutOfMemory
from collectors.trace.capacity import Plans, _workspace
from collectors.trace.memory import LiveMemory
from collectors.trace.recorder import TraceRecorder
from collectors.trace.step import META, AdamWState, train_step
from collectors.workloads import Workload


@dataclass(frozen=True)
class Probe:
    batch: int
    start: int   # its first event (memory.events)
    steps: int   # one past its two steps' last event
    end: int     # one past its last event (the optimizer and the batch dropped as the probe returns)


def probe_chain(workload: Workload, precision: str, batches: list[int]) -> tuple[LiveMemory, list[Probe]]:
    """Training probes at `batches`, in order, on one model: the events of all (the weights first) and each probe's
    span. The workload's `probe_run` where it has one, as the collector's probe."""
    workload = replace(workload, run=workload.probe_run) if workload.probe_run else workload
    model = workload.model
    model.train(True)
    memory = LiveMemory()
    params = [p for p in model.parameters() if p.requires_grad]
    memory.adopt(list(model.parameters()), "parameters")
    memory.adopt(list(model.buffers()), "parameters")
    recorder = TraceRecorder(memory)
    probes = []
    for batch in batches:
        recorder.precision = precision
        start, threads = len(memory.events), len(recorder.blas_threads)
        inputs, targets = workload.make_batch(batch, META)
        memory.adopt((inputs, targets), "inputs")
        optimizer = AdamWState(params)
        with recorder:
            recorder.recording = False
            train_step(workload, inputs, targets, precision, optimizer, recorder)
            memory.adopt(optimizer.exp_avgs + optimizer.exp_avg_sqs + optimizer.steps, "optimizer")
            train_step(workload, inputs, targets, precision, optimizer, recorder)
        steps = len(memory.events)
        start += len(recorder.blas_threads) - threads   # a cuBLAS workspace's event goes first (memory.hold)
        del optimizer, inputs, targets
        gc.collect()
        probes.append(Probe(batch, start, steps, len(memory.events)))
    return memory, probes


def replay_chain(memory: LiveMemory, probes: list[Probe], capacity: int) -> list[bool]:
    """Whether each probe ran, the chain replayed in `capacity` bytes of segments (module docstring)."""
    allocator = Allocator(capacity=capacity)
    ran: dict[Plans, int] = {}
    events = memory.events
    done = 0
    fits = []
    for probe in probes:
        # the weights (and cuBLAS's workspaces) come before the first probe's steps
        made = _steps(allocator, events[done:probe.steps], memory.workspaces, ran)
        fits.append(made is None)
        if made is not None:   # what the two steps had left live at their end stays; the rest unwinds
            kept = _live_after(events[done:probe.steps])
            for key in made:
                if key not in kept:
                    allocator.release(key)
        for key, nbytes in events[probe.steps:probe.end]:
            if nbytes < 0:
                allocator.release(key)
        allocator.release_cached()   # the probe's free_memory: gc, then empty_cache
        done = probe.end
    return fits


def _steps(allocator: Allocator, events: list[tuple[int, int]], workspaces: dict[int, tuple[int, ...]],
           ran: dict[Plans, int]) -> list[int] | None:
    """Replay a probe's two steps; None where they ran, else the allocations they had made when one failed."""
    made = []
    try:
        for key, nbytes in events:
            if nbytes < 0:
                allocator.release(key)
                continue
            made.append(key)
            if key in workspaces:
                _workspace(allocator, key, workspaces[key], ran)
            else:
                allocator.malloc(key, nbytes)
    except OutOfMemory:
        return made
    return None


def _live_after(events: list[tuple[int, int]]) -> set[int]:
    last: dict[int, bool] = {}
    for key, nbytes in events:
        last[key] = nbytes >= 0
    return {key for key, live in last.items() if live}
