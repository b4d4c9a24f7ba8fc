"""Measuring one DataLoader configuration: batches delivered to the device per second, time to the first
batch, CPU and host memory of the main process and its workers, and the epoch boundary with and without
persistent workers.

Why waves: each worker builds a whole batch, so at the start all workers finish their first batch at about
the same time and a burst of `workers` batches arrives at once. Timing from the first batch would count
that burst as throughput. The first wave (one batch per worker) is therefore left out, and the timed part
is whole waves (blocks of `workers` batches), each a sample of the steady rate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import pairwise

import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler

from collectors.dataloader.process_group import MemorySampler, ProcessGroup, cpu_used, wait_until_idle
from gpuplan_schema.payloads import EpochBoundary, LoaderPoint
from gpuplan_schema.stats import summarize

MIN_BLOCK_S = 0.5        # a block of waves lasts at least this long (small CPU batches take ~0.1 s a wave)
MAX_WAVES_PER_BLOCK = 16
UNBOUNDED = 1 << 20      # batches in a sweep point's sampler: indices are drawn lazily, the point stops early


@dataclass(frozen=True)
class LoaderConfig:
    workers: int
    prefetch: int | None        # None with 0 workers
    pin_memory: bool
    fill: bool = False          # after the timed blocks, pause until the prefetch buffer is full


@dataclass(frozen=True)
class Bench:
    """What every point shares."""

    dataset: Dataset
    device: torch.device
    batch: int
    batch_bytes: int
    blocks: int                  # timed blocks per point, each of whole waves lasting MIN_BLOCK_S or more
    cores: int
    group: ProcessGroup | None
    memory_period_s: float = 0.5


def make_loader(bench: Bench, config: LoaderConfig, batches: int, persistent: bool = False,
                seed: int = 0) -> DataLoader:
    """A loader over `batches` batches drawn with replacement (the synthetic set may be smaller)."""
    sampler = RandomSampler(bench.dataset, replacement=True, num_samples=batches * bench.batch,
                            generator=torch.Generator().manual_seed(seed))
    return DataLoader(bench.dataset, batch_size=bench.batch, sampler=sampler, num_workers=config.workers,
                      prefetch_factor=config.prefetch if config.workers else None, pin_memory=config.pin_memory,
                      persistent_workers=persistent, drop_last=True)


def deliver(batch: list[torch.Tensor], device: torch.device, pinned: bool) -> None:
    """Copy a batch to the GPU as a training loop does (non_blocking from pinned memory); on a CPU the batch
    is already where the model runs and nothing is copied."""
    if device.type == "cuda":
        for tensor in batch:
            tensor.to(device, non_blocking=pinned)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def release_pinned_cache(device: torch.device) -> None:
    """Return cached pinned blocks to CUDA between points, so that one point's memory is not another's."""
    empty = getattr(torch._C, "_host_emptyCache", None)
    if device.type == "cuda" and empty is not None:
        empty()
        try:
            torch.cuda.reset_peak_host_memory_stats()
        except (AttributeError, RuntimeError):
            pass


def pinned_peak_bytes(device: torch.device) -> int | None:
    """Peak bytes of torch's pinned host allocator since the last reset (`torch.cuda.host_memory_stats`, in
    recent torch only; its key is `allocated_bytes.peak` or, nested by pool, `allocated_bytes.all.peak`)."""
    if device.type != "cuda":
        return None
    try:
        stats = torch.cuda.host_memory_stats()
    except (AttributeError, RuntimeError):
        return None
    keys = sorted((k for k in stats if k.startswith("allocated_bytes.") and k.endswith(".peak")), key=len)
    return int(stats[keys[0]]) if keys and stats[keys[0]] else None


def formula_bytes(config: LoaderConfig, batch_bytes: int) -> int:
    return config.workers * (config.prefetch or 0) * batch_bytes


@dataclass(frozen=True)
class Window:
    """The timed blocks of one point."""

    times: list[float]              # block boundaries
    block_batches: int
    cpu_seconds: float | None       # used by the main process and the workers over the window
    memory_peak_bytes: int | None
    memory_samples: int | None

    @property
    def durations(self) -> list[float]:
        return [b - a for a, b in pairwise(self.times)]


@dataclass(frozen=True)
class Fill:
    """Memory once consumption paused until every prefetch slot held a batch."""

    memory_bytes: int | None = None
    queued_bytes: int | None = None
    went_idle: bool | None = None
    seconds: float | None = None


def measure_point(bench: Bench, config: LoaderConfig) -> LoaderPoint:
    """One configuration; a failure (a worker killed, out of memory) becomes the point's status and reason."""
    release_pinned_cache(bench.device)
    keys = (config.workers, config.prefetch, config.pin_memory)
    formula = formula_bytes(config, bench.batch_bytes)
    try:
        return _measure(bench, config)
    except MemoryError as e:
        return LoaderPoint(*keys, "oom", reason=str(e) or "MemoryError", formula_bytes=formula)
    except RuntimeError as e:
        return LoaderPoint(*keys, "error", reason=str(e), formula_bytes=formula)


def _measure(bench: Bench, config: LoaderConfig) -> LoaderPoint:
    wave = max(config.workers, 1)
    baseline = bench.group.memory().bytes if bench.group else None
    started = time.perf_counter()
    batches = iter(make_loader(bench, config, UNBOUNDED))
    for n in range(wave):
        deliver(next(batches), bench.device, config.pin_memory)
        if n == 0:
            synchronize(bench.device)
            first = time.perf_counter() - started
    synchronize(bench.device)
    waves = min(MAX_WAVES_PER_BLOCK, max(1, math.ceil(MIN_BLOCK_S / (time.perf_counter() - started))))
    window = _timed_blocks(bench, config, batches, wave * waves)
    fill = _fill(bench, config, max(window.durations) / waves) if config.fill else Fill()
    pinned = pinned_peak_bytes(bench.device) if config.pin_memory else None
    del batches  # shuts the workers down
    samples = summarize([window.block_batches * bench.batch / d for d in window.durations])
    busy = window.cpu_seconds / sum(window.durations) if window.cpu_seconds is not None else None
    return LoaderPoint(
        config.workers, config.prefetch, config.pin_memory, "ok", samples_per_s=samples,
        batches_per_s=samples.median / bench.batch, time_to_first_batch_s=first,
        timed_batches=window.block_batches * bench.blocks, cpu_cores_busy=busy,
        cpu_utilization=busy / bench.cores if busy is not None else None, memory_baseline_bytes=baseline,
        memory_peak_bytes=window.memory_peak_bytes, memory_samples=window.memory_samples,
        memory_full_bytes=fill.memory_bytes, memory_full_queued_bytes=fill.queued_bytes, buffer_full=fill.went_idle,
        buffer_fill_s=fill.seconds, pinned_bytes=pinned, formula_bytes=formula_bytes(config, bench.batch_bytes))


def _timed_blocks(bench: Bench, config: LoaderConfig, batches: Iterator, block: int) -> Window:
    """`bench.blocks` blocks of `block` batches, with CPU read at both ends and memory sampled throughout."""
    group = bench.group
    cpu_before = group.cpu_seconds() if group else None
    with MemorySampler(group, bench.memory_period_s) if group else nullcontext() as sampler:
        times = [time.perf_counter()]
        for _ in range(bench.blocks):
            for _ in range(block):
                deliver(next(batches), bench.device, config.pin_memory)
            synchronize(bench.device)
            times.append(time.perf_counter())
        cpu = cpu_used(cpu_before, group.cpu_seconds()) if group and cpu_before is not None else None
    return Window(times, block, cpu, sampler.peak_bytes if sampler else None, sampler.samples if sampler else None)


def _fill(bench: Bench, config: LoaderConfig, wave_s: float) -> Fill:
    """Stop consuming until the workers go idle (every prefetch slot full), then read the memory. Each worker
    has up to `prefetch` batches to finish, a wave's time apiece: allow twice that, then give up."""
    if bench.group is None or not config.workers:
        return Fill()
    went_idle, seconds = wait_until_idle(bench.group, 2 * ((config.prefetch or 0) + 1) * wave_s + 2)
    reading = bench.group.memory()
    return Fill(reading.bytes, reading.unmapped_shared_bytes, went_idle, seconds)


def measure_epoch_boundary(bench: Bench, config: LoaderConfig, persistent: bool) -> EpochBoundary:
    """Two short epochs (two waves each): the gap between them and the second epoch's time to first batch."""
    epoch = max(config.workers, 1) * 2
    keys = (config.workers, config.prefetch or 0, config.pin_memory, persistent)
    release_pinned_cache(bench.device)
    try:
        loader = make_loader(bench, config, epoch, persistent=persistent)
        started = time.perf_counter()
        first = last = None
        for batch in loader:   # the loop's end shuts non-persistent workers down: part of the gap
            deliver(batch, bench.device, config.pin_memory)
            synchronize(bench.device)
            last = time.perf_counter()
            first = first or last - started
        again = time.perf_counter()
        batches = iter(loader)
        deliver(next(batches), bench.device, config.pin_memory)
        synchronize(bench.device)
        arrived = time.perf_counter()
        del batches, loader
    except RuntimeError as e:
        return EpochBoundary(*keys, "error", str(e))
    return EpochBoundary(*keys, "ok", epoch_batches=epoch, first_epoch_first_batch_s=first,
                         second_epoch_first_batch_s=arrived - again, epoch_gap_s=arrived - last)
