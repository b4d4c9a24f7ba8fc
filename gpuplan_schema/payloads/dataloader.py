"""Payload of the `dataloader` document: DataLoader throughput and memory per configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuplan_schema.payloads.common import Status
from gpuplan_schema.stats import Stat


@dataclass(frozen=True)
class SyntheticImages:
    """The JPEG files the loader read (collectors/dataloader/jpeg_dataset.py): cached, ImageNet-like sizes."""

    count: int
    generator_version: str
    quality: int
    mean_file_bytes: float
    mean_pixels: float
    generated_s: float | None          # None: taken from the cache
    decode_s: Stat | None = None       # one Pillow decode in the main process, over a sample of the files


@dataclass(frozen=True)
class LoaderPoint:
    """One DataLoader configuration. Throughput is timed over `timed_batches` after the first wave of
    batches (each worker's first batch, built in parallel from the start), in blocks of one wave each;
    `samples_per_s` summarises the blocks. Memory is PSS (or RSS, see the payload) summed over the main
    process and its workers: `memory_peak_bytes` while batches stream, `memory_full_bytes` once consumption
    has paused until every prefetch slot holds a batch (`buffer_full` says whether the workers went idle).
    Both include batches queued in shared memory that no process maps (collectors/dataloader/process_group.py)."""

    workers: int
    prefetch: int | None               # None with 0 workers: the main process loads, nothing is prefetched
    pin_memory: bool
    status: Status
    reason: str | None = None
    samples_per_s: Stat | None = None
    batches_per_s: float | None = None
    time_to_first_batch_s: float | None = None
    timed_batches: int | None = None
    cpu_cores_busy: float | None = None        # CPU seconds per second, main process + workers
    cpu_utilization: float | None = None       # cpu_cores_busy over the usable logical cores
    memory_baseline_bytes: int | None = None   # the main process alone, before the loader starts
    memory_peak_bytes: int | None = None
    memory_samples: int | None = None
    memory_full_bytes: int | None = None
    memory_full_queued_bytes: int | None = None  # of which batches queued in shared memory, mapped by no process
    buffer_full: bool | None = None
    buffer_fill_s: float | None = None
    pinned_bytes: int | None = None            # torch's pinned host allocator, peak during the point
    formula_bytes: int = 0                     # workers × prefetch × batch bytes (seed 004's buffer)

    def check(self) -> str | None:
        return "status is ok but samples_per_s is missing" if self.status == "ok" and not self.samples_per_s else None


@dataclass(frozen=True)
class EpochBoundary:
    """What `persistent_workers` changes: the gap between the last batch of a first epoch and the first
    batch of the second (non-persistent workers are shut down and started again in it)."""

    workers: int
    prefetch: int
    pin_memory: bool
    persistent: bool
    status: Status
    reason: str | None = None
    epoch_batches: int | None = None
    first_epoch_first_batch_s: float | None = None
    second_epoch_first_batch_s: float | None = None   # from iter() of epoch 2 to its first batch
    epoch_gap_s: float | None = None                  # from the last batch of epoch 1 to that batch


@dataclass(frozen=True)
class DataloaderPayload:
    device: Literal["cuda", "cpu"]
    device_name: str
    profile: str
    status: Status
    logical_cores: int                 # usable by this process (its CPU affinity)
    batch: int
    image_size: int
    batch_bytes: int                   # one collated batch: float32 images and int64 labels
    copy: str                          # how batches reach the device, in words
    memory_measure: str                # "pss", "rss", or why there are no memory figures
    start_method: str
    ram_bytes: int | None
    points: list[LoaderPoint]
    epochs: list[EpochBoundary]
    elapsed_s: float
    reason: str | None = None
    dataset: SyntheticImages | None = None
    scale: str = "reference"           # "tiny" on a CPU: small batches, for testing the path
    main_threads: int | None = None    # torch's intra-op threads in the main process (workers use one each)
    shm_bytes: int | None = None       # size of /dev/shm, where workers hand batches to the main process
