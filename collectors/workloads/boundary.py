"""The out-of-memory boundary: the largest batch that runs, found with untimed probes.

A probe builds the step at one batch and runs it (twice when training: the second step also holds
AdamW's state), recording only whether it fits and its peak memory. Two full steps, not a small one
then a full one: AdamW's state allocated between a full step's freed activations fragments the cache
as a real run's does, and the boundary is 77 (gpt-small bf16, H100), not the 84 a first step at
batch 1 makes it look. The search starts from a
guess: peak memory is close to linear in the batch (fixed: weights, gradients, optimizer state;
per sample: activations), so a line through the points already measured, set against the device's
memory, says where the boundary should be. Probes step out from the guess until they bracket the
boundary, then bisect to within BOUNDARY_TOLERANCE. A precision that stores tensors as another
already searched does (tf32 as fp32, bf16 as fp16) starts from that one's boundary instead. Without
a guess (a CPU, no memory figures) the search doubles from the largest batch that ran.

The search is bounded in time (SEARCH_LIMIT_S, whatever the device's memory: a 141 GB GPU probes larger batches,
each longer, not more of them): each probe's deadline is what is left of it (at least PROBE_MIN_S), and a search out
of time ends with the bracket it has, said in the boundary's reason (`max_batch` runs, `first_oom_batch` does not:
the boundary's precision). The H200's search of a 5 M-parameter CNN ran for 325 s before this.

The `capacity` and `full` profiles search each boundary twice: with PyTorch's default allocator (what a
job run as it is meets) and with expandable segments (collectors/core/allocator.py), where what is allocated
sets the boundary rather than how the cache happens to be cut up. An OOM probe keeps its peak allocated
and reserved bytes: the difference is the memory the allocator held but could not use.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import torch

from collectors.core.device import error_line, free_memory, is_oom
from collectors.core.time_limit import PointTimeout, hard_limit, soft_limit
from collectors.workloads import Workload
from collectors.workloads.sweep import Context, describe_point
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model
from gpuplan_schema.payloads import Allocator, MemoryUse, OomBoundary, WorkloadPoint

BOUNDARY_TOLERANCE = 0.02
# Peak allocated memory at the boundary as a fraction of the device's memory, H100 80GB, 2026-11-22:
# gpt-small 0.86 (fp32) to 0.89 (bf16), mlp-stgan 0.91 to 0.95, resnet50 0.96 to 0.98; allocator
# fragmentation, the CUDA context and cuBLAS/cuDNN workspaces take the rest. Only where the search
# starts: the probes find the boundary.
USABLE_FRACTION = 0.95
STEPS_OUT = (0.04, 0.08, 0.16, 0.32, 0.5, 1.0)  # relative steps when walking out from the guess
# Precisions whose tensors are stored alike, so that their boundaries nearly agree (cuDNN's
# workspace can differ: resnet50 fp32 938 and tf32 947 on an H100).
SAME_STORAGE = {"tf32": "fp32", "fp32": "tf32", "bf16": "fp16", "fp16": "bf16"}
HINT_AGREEMENT = 0.25
SEARCH_LIMIT_S = 30.0  # one boundary's search (the child process's start aside)
PROBE_MIN_S = 10.0     # the least a probe is given, even past the search's limit


@dataclass
class Bracket:
    """What the probes know: `lo` runs (0: nothing has), `hi` does not (None: nothing failed yet)."""

    lo: int
    hi: int | None = None
    tolerance: float = BOUNDARY_TOLERANCE

    def record(self, batch: int, fits: bool) -> None:
        if fits:
            self.lo = max(self.lo, batch)
        else:
            self.hi = batch if self.hi is None else min(self.hi, batch)

    @property
    def narrow(self) -> bool:
        return self.hi is not None and self.hi - self.lo <= max(1, int(self.lo * self.tolerance))


def device_capacity(device: torch.device) -> int | None:
    return torch.cuda.mem_get_info(device)[1] if device.type == "cuda" else None


def guess_max_batch(points: list[WorkloadPoint], capacity: int | None) -> int | None:
    """Where a line through the two largest measured batches' peak memory meets the usable memory."""
    peak: dict[int, int] = {}
    for p in points:
        if p.status == "ok" and p.memory is not None:
            peak[p.batch] = max(peak.get(p.batch, 0), p.memory.peak_allocated_bytes)
    if capacity is None or len(peak) < 2:
        return None
    (b1, m1), (b2, m2) = sorted(peak.items())[-2:]
    per_sample = (m2 - m1) / (b2 - b1)
    if per_sample <= 0:
        return None
    return max(1, int((capacity * USABLE_FRACTION - (m2 - per_sample * b2)) / per_sample))


def choose_guess(line: int | None, hint: int | None) -> int | None:
    """The precision stored alike where it agrees with this one's memory line within HINT_AGREEMENT (it
    carries the other's fragmentation and workspaces: gpt-small fp32 57 and tf32 58 where the line says
    62), else the line (conv-rollout's fp16 holds 1.8× bf16's batch on an H100)."""
    if hint and (line is None or abs(hint - line) <= HINT_AGREEMENT * line):
        return hint
    return line


def probe(workload: Workload, precision: str, batch: int, ctx: Context, variant: Variant,
          limit_s: float | None = None) -> WorkloadPoint:
    """Does `batch` run? Untimed; records the status and the peak memory. `limit_s`: its deadline (the point
    time limit where shorter)."""
    base = dict(sweep="probe", precision=precision, batch=batch, variant=variant.name)
    if (earlier := ctx.recall(base)) is not None:
        return earlier
    runner = replace(workload, run=workload.probe_run) if workload.probe_run else workload
    started = time.perf_counter()
    limit = min(x for x in (ctx.point_timeout_s, limit_s, math.inf) if x)
    limit = None if math.isinf(limit) else limit
    with hard_limit(limit, describe_point(workload.name, base)):
        free_memory(ctx.device)
        model = step = None
        try:
            with soft_limit(limit), precision_mode(precision, ctx.device, variant):
                model = prepare_model(runner, ctx.device, variant)
                step = build_step(runner, model, precision, batch, ctx.device, variant)
                for _ in range(2 if step.optimizer else 1):
                    step.run()
                point = WorkloadPoint(status="ok", memory=_peak_memory(ctx.device), **base)
        except (Exception, PointTimeout) as e:  # an OOM is the answer; anything else ends the search with its reason
            # an OOM keeps its peaks: reserved beyond allocated at the failure is the allocator's fragmentation
            memory = _peak_memory(ctx.device) if is_oom(e) else None
            point = WorkloadPoint(status="oom" if is_oom(e) else "error", reason=error_line(e), memory=memory, **base)
        finally:
            model = step = None  # noqa: F841 - drop references before freeing
            free_memory(ctx.device)
    return replace(point, wall_s=time.perf_counter() - started)


def _peak_memory(device: torch.device) -> MemoryUse | None:
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    return MemoryUse(peak_allocated_bytes=torch.cuda.max_memory_allocated(device),
                     peak_reserved_bytes=torch.cuda.max_memory_reserved(device))


def iter_boundary(workload: Workload, precision: str, measured: list[WorkloadPoint], ctx: Context, cap: int,
                  variant: Variant, hint: int | None = None, tolerance: float = BOUNDARY_TOLERANCE,
                  limit_s: float = SEARCH_LIMIT_S, rebuild: Callable[[], Workload] | None = None
                  ) -> Iterator[WorkloadPoint | OomBoundary]:
    """Probe points, then the boundary; `measured` are this precision's points so far (timed ones), `hint`
    the boundary of a precision that stores tensors alike, `tolerance` how narrow the last bracket is, `limit_s`
    how long the search may take (module docstring), `rebuild` a new workload for each probe after the first.

    A probe on the last probe's model is not a job started at that batch: the model's gradients and what it keeps
    on itself (Transformer-XL's recurrence memory `self.mems`) outlive the probe and empty_cache, and the next
    probe's blocks are carved from the segments they pin. On an H200 Transformer-XL fp32 ran at 174 after 168 and
    172 in one process and failed at 148 started alone (benchmarks/gpu_probe_chain.py,
    results/h200/diagnostics/probe-chain-2026-11-29): the boundary a plan reports must be the job's."""
    ends = time.perf_counter() + limit_s
    probes = 0

    def probe_at(batch: int, limit: float | None) -> WorkloadPoint:
        nonlocal workload, probes
        if rebuild is not None and probes:
            workload = None  # type: ignore[assignment]  # the last probe's model, its gradients and its own tensors
            free_memory(ctx.device)
            workload = rebuild()
        probes += 1
        return probe(workload, precision, batch, ctx, variant, limit)
    # an OOM with the default allocator says nothing of the search with expandable segments
    statuses = ("ok",) if variant.expandable_segments else ("ok", "oom")
    known = [p for p in measured if p.status in statuses and p.seq_len is None]
    bracket = Bracket(lo=max((p.batch for p in known if p.status == "ok"), default=0), tolerance=tolerance)
    for p in known:
        if p.status == "oom":
            bracket.record(p.batch, False)
    capacity = device_capacity(ctx.device)
    if capacity and bracket.lo and len({p.batch for p in known if p.status == "ok" and p.memory}) < 2:
        known.append(point := probe_at(max(1, bracket.lo // 4), limit_s))
        yield point  # a second, small batch: the line's intercept (weights, gradients, optimizer state)
    for batch in iter_probe_batches(bracket, choose_guess(guess_max_batch(known, capacity), hint), cap):
        left = ends - time.perf_counter()
        if left <= 0:
            yield replace(_out_of_time(precision, bracket, limit_s, None), allocator=allocator_of(variant))
            return
        probe_s = max(PROBE_MIN_S, left)
        point = probe_at(batch, probe_s)
        # out of the search's time (not the point's own --point-timeout, which says the step hangs: an error)
        searchs = ctx.point_timeout_s is None or probe_s < ctx.point_timeout_s
        if searchs and point.status == "error" and (point.reason or "").startswith("timed out") and bracket.lo:
            yield replace(point, reason=f"timed out after {probe_s:.3g} s (the boundary search's time)")
            yield replace(_out_of_time(precision, bracket, limit_s, batch), allocator=allocator_of(variant))
            return
        yield point
        if point.status == "error":
            yield OomBoundary(precision, "error", max_batch=bracket.lo or None, reason=point.reason,
                              allocator=allocator_of(variant))
            return
        bracket.record(batch, point.status == "ok")
    yield replace(_boundary(precision, bracket, cap), allocator=allocator_of(variant))


def allocator_of(variant: Variant) -> Allocator:
    return "expandable_segments" if variant.expandable_segments else "default"


def probe_allocator(point: WorkloadPoint) -> Allocator:
    """The allocator a point (a probe's included) ran with, read from its variant's name."""
    return point.allocator


def _out_of_time(precision: str, bracket: Bracket, limit_s: float, slow: int | None) -> OomBoundary:
    """The bracket a search out of time has: `max_batch` runs; `first_oom_batch`, where known, does not."""
    why = f"a probe at batch {slow} did not end in time" if slow else f"the search's {limit_s:g} s were spent"
    if not bracket.lo:
        return OomBoundary(precision, "error", first_oom_batch=bracket.hi, reason=f"not bracketed: {why}")
    where = f"between {bracket.lo} and {bracket.hi}" if bracket.hi else f"at least {bracket.lo}"
    return OomBoundary(precision, "ok", max_batch=bracket.lo, first_oom_batch=bracket.hi, capped=bracket.hi is None,
                       reason=f"bracketed {where}: {why}")


def _boundary(precision: str, bracket: Bracket, cap: int) -> OomBoundary:
    if bracket.hi is None:
        return OomBoundary(precision, "ok", max_batch=bracket.lo, capped=True,
                           reason=f"no OOM up to the search cap of {cap}")
    if not bracket.lo:
        return OomBoundary(precision, "oom", first_oom_batch=bracket.hi, reason="not even a batch of 1 fits")
    return OomBoundary(precision, "ok", max_batch=bracket.lo, first_oom_batch=bracket.hi)


def iter_probe_batches(bracket: Bracket, guess: int | None, cap: int) -> Iterator[int]:
    """The next batch to probe, reading `bracket` as the caller records each answer: the guess, then
    steps out from it (or doublings without one) until the boundary is bracketed, then halving."""
    top = cap if bracket.hi is None else bracket.hi - 1
    if guess is not None and bracket.lo < min(guess, top):
        yield (start := min(guess, top))
        yield from _walk_out(bracket, start, cap)
    while bracket.hi is None and bracket.lo < cap:
        yield min(max(1, bracket.lo * 2), cap)
    while bracket.hi is not None and not bracket.lo and bracket.hi > 1:
        yield bracket.hi // 2  # nothing ran yet: halve down to something that does
    while bracket.lo and not bracket.narrow and bracket.hi is not None:
        yield (bracket.lo + bracket.hi) // 2


def _walk_out(bracket: Bracket, start: int, cap: int) -> Iterator[int]:
    """From the guess, growing steps up while probes fit (or down while they do not), until one answers
    the other way: the boundary is then bracketed."""
    up, last = bracket.lo == start, start
    for step in STEPS_OUT + (1.0,) * 64:
        if up:
            batch = min(cap, math.ceil(last * (1 + step)))
        else:
            batch = math.floor(last * (1 - min(step, 0.5)))
        if batch <= bracket.lo or (bracket.hi is not None and batch >= bracket.hi) or bracket.narrow:
            return
        yield batch
        if (bracket.lo == batch) != up:
            return
        last = batch
