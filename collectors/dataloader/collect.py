"""`dataloader` collector: how fast this machine's CPUs turn JPEG files into training batches on the device.

A synthetic ImageNet-like JPEG set (collectors/dataloader/jpeg_dataset.py) goes through the usual training transform
(collectors/dataloader/image_pipeline.py) in a torch DataLoader, swept over `num_workers` (0, 1, 2, 4, … up to the
usable cores, plus 75% of them: seed 004's rule of thumb), `prefetch_factor` (1, 2, 4, 8) and `pin_memory`;
then one configuration runs two epochs with and without `persistent_workers`. Each point records samples/s
delivered to the device (host→device copy included, non_blocking when pinned), time to the first batch,
CPU use and host memory of the main process and its workers, beside seed 004's buffer formula
workers × prefetch × batch bytes (collectors/dataloader/loader_sweep.py).

Whether that feeds a GPU is the planner's question (planner/model/dataloader_verdict.py), answered against the
workloads' measured GPU throughput in the same machine folder.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from collectors.core.profiles import MAIN_BATCH
from collectors.dataloader import jpeg_dataset
from collectors.dataloader.image_pipeline import CROP, JpegDataset, sample_bytes
from collectors.dataloader.loader_sweep import (
    Bench,
    LoaderConfig,
    deliver,
    formula_bytes,
    measure_epoch_boundary,
    measure_point,
    synchronize,
)
from collectors.dataloader.process_group import open_group
from gpuplan_schema.payloads import DataloaderPayload, EpochBoundary, LoaderPoint, SyntheticImages
from gpuplan_schema.progress import Progress
from gpuplan_schema.stats import Stat, summarize

NAME, VERSION = "dataloader", "1"
GPU_BATCH = MAIN_BATCH["resnet50"]   # the batch the image workload is judged at
CPU_BATCH = 16                       # a CPU run tests the path; its figures plan nothing
GPU_IMAGES, CPU_IMAGES = 1024, 64    # files decoded round-robin (the page cache holds them: this measures
                                     # decoding and transforming, not storage)
DECODE_SAMPLE = 32


@dataclass(frozen=True)
class LoaderProfile:
    """Which points a profile measures. `prefetch` is swept at the main pin setting (pinned on a GPU),
    `other_pin_prefetch` at the other; `fill` picks the points whose full prefetch buffer is measured.
    Points that would start after `budget_s` are skipped, with the reason, so a profile keeps its time."""

    name: str
    prefetch: tuple[int, ...]
    other_pin_prefetch: tuple[int, ...]
    other_pin_all_workers: bool      # else only at 0 workers and 75% of the cores
    blocks: int                      # timed blocks per point
    fill: str                        # "rule" (75% of cores, prefetch 2), "table" (75% and all cores ×
                                     # prefetch 2 and 4) or "all"
    budget_s: float


# On a 16-core host at batch 256 a wave takes a second or so and a point three waves: standard is 32 points,
# four buffer fills and two short epoch pairs, about 2.5 minutes.
LOADER_PROFILES = {
    "quick": LoaderProfile("quick", (2,), (2,), False, blocks=2, fill="rule", budget_s=90),
    "standard": LoaderProfile("standard", (1, 2, 4, 8), (2,), True, blocks=2, fill="table", budget_s=200),
    "full": LoaderProfile("full", (1, 2, 4, 8), (1, 2, 4, 8), True, blocks=4, fill="all", budget_s=900),
}
LOADER_PROFILES["capacity"] = LOADER_PROFILES["standard"]  # capacity only adds workload boundaries
MAIN_PREFETCH = 2                    # torch's default: the worker sweep that the verdict reads runs at it first


def usable_cores() -> int:
    """The cores this process may run on (its affinity: a container or taskset may allow fewer)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def three_quarters(cores: int) -> int:
    return max(1, int(0.75 * cores))


def worker_counts(cores: int) -> list[int]:
    """0, 1, 2, 4, … up to `cores`, plus `cores` itself and 75% of it (seed 004's rule of thumb)."""
    counts = {0, cores, three_quarters(cores)}
    n = 1
    while n <= cores:
        counts.add(n)
        n *= 2
    return sorted(counts)


def _fills(profile: LoaderProfile, workers: int, prefetch: int, cores: int) -> bool:
    rule = three_quarters(cores)
    if profile.fill == "all":
        return True
    if profile.fill == "table":
        return workers in (rule, cores) and prefetch in (2, 4)
    return workers == rule and prefetch == 2


def build_configs(profile: LoaderProfile, cores: int, can_pin: bool) -> tuple[list[LoaderConfig], list[LoaderConfig]]:
    """(the worker sweep at the default prefetch, pinned then not; the other prefetch factors), in the order
    they run: the first part is what the verdict needs, so a time budget that runs out cuts the second."""
    counts = worker_counts(cores)
    other = counts[1:] if profile.other_pin_all_workers else [three_quarters(cores)]
    grid = [(can_pin, w, p) for w in counts[1:] for p in profile.prefetch]
    if can_pin:  # without a GPU there is nothing to pin for: only unpinned points
        grid += [(False, w, p) for w in other for p in profile.other_pin_prefetch]
    main = [LoaderConfig(0, None, can_pin)] + ([LoaderConfig(0, None, False)] if can_pin else [])
    main += [LoaderConfig(w, p, pin, _fills(profile, w, p, cores)) for pin, w, p in grid if p == MAIN_PREFETCH]
    extra = [LoaderConfig(w, p, pin, _fills(profile, w, p, cores)) for pin, w, p in grid if p != MAIN_PREFETCH]
    return sorted(main, key=lambda c: not c.pin_memory), extra


def decode_time(files: list[Path]) -> Stat:
    """Seconds to decode one file with Pillow in this process (no crop, no tensor)."""
    from PIL import Image

    times = []
    for path in files[:DECODE_SAMPLE]:
        started = time.perf_counter()
        with Image.open(path) as image:
            image.convert("RGB")
        times.append(time.perf_counter() - started)
    return summarize(times)


def ram_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def shm_bytes() -> int | None:
    """Size of /dev/shm: workers pass every batch through it, and containers often make it small."""
    try:
        stat = os.statvfs("/dev/shm")
    except (OSError, AttributeError):
        return None
    return stat.f_frsize * stat.f_blocks


def warm_device(device: torch.device, batch: int) -> None:
    """CUDA context and a first copy before any point, so the first point is not charged for them."""
    if device.type == "cuda":
        deliver([torch.zeros(batch, 3, CROP, CROP).pin_memory()], device, True)
        synchronize(device)


def describe_copy(device: torch.device) -> str:
    if device.type == "cuda":
        return ("host→device copy of every batch, non_blocking from pinned memory, synchronised at each "
                "timed block's end")
    return "none: the CPU is the device, batches are used where they are made (pin_memory needs a GPU)"


def skipped_payload(device: torch.device, profile: str, reason: str, started: float,
                    batch: int) -> DataloaderPayload:
    return DataloaderPayload(
        device=device.type, device_name=_device_name(device), profile=profile, status="skipped",
        logical_cores=usable_cores(), batch=batch, image_size=CROP, batch_bytes=0, copy=describe_copy(device),
        memory_measure="none", start_method=multiprocessing.get_start_method(), ram_bytes=ram_bytes(), points=[],
        epochs=[], elapsed_s=time.perf_counter() - started, reason=reason)


def _device_name(device: torch.device) -> str:
    from collectors.core.device import device_name

    return device_name(device)


def collect_dataloader(progress: Progress, profile_name: str, cache_root: Path, device: torch.device,
                       batch: int | None = None, images: int | None = None) -> DataloaderPayload:
    started = time.perf_counter()
    profile = LOADER_PROFILES[profile_name]
    gpu = device.type == "cuda"
    batch = batch or (GPU_BATCH if gpu else CPU_BATCH)
    try:
        folder = jpeg_dataset.ensure_images(cache_root, images or (GPU_IMAGES if gpu else CPU_IMAGES),
                                            on_progress=progress.note)
    except jpeg_dataset.DatasetUnavailable as e:
        progress.warn(f"{NAME}: skipped: {e}")   # the one line; the rest of the collection goes on
        return skipped_payload(device, profile_name, str(e), started, batch)
    group, no_group = open_group()
    if no_group:
        progress.warn(f"{NAME}: {no_group}")      # throughput is still measured
    cores = usable_cores()
    bench = Bench(JpegDataset(folder.files), device, batch, batch * sample_bytes(), profile.blocks, cores, group)
    main, extra = build_configs(profile, cores, gpu)
    progress.total = len(main) + len(extra) + 3
    progress.advance(f"{len(folder.files)} JPEGs ready")
    dataset = SyntheticImages(len(folder.files), jpeg_dataset.GENERATOR_VERSION, jpeg_dataset.QUALITY,
                              folder.mean_bytes, folder.mean_pixels, folder.generated_s, decode_time(folder.files))
    warm_device(device, batch)
    points = run_points(bench, main, profile, started, progress)
    epochs = measure_epochs(bench, LoaderConfig(three_quarters(cores), MAIN_PREFETCH, gpu), progress)
    points += run_points(bench, extra, profile, started, progress)
    return DataloaderPayload(
        device=device.type, device_name=_device_name(device), profile=profile_name, status="ok",
        logical_cores=cores, batch=batch, image_size=CROP, batch_bytes=bench.batch_bytes,
        copy=describe_copy(device), memory_measure=group.measure if group else (no_group or "none"),
        start_method=multiprocessing.get_start_method(), ram_bytes=ram_bytes(), points=points, epochs=epochs,
        elapsed_s=time.perf_counter() - started, dataset=dataset, scale="reference" if gpu else "tiny",
        main_threads=torch.get_num_threads(), shm_bytes=shm_bytes())


def measure_epochs(bench: Bench, config: LoaderConfig, progress: Progress) -> list[EpochBoundary]:
    epochs = []
    for persistent in (False, True):
        epochs.append(measure_epoch_boundary(bench, config, persistent))
        progress.advance(f"two epochs, persistent_workers={persistent}")
    return epochs


def run_points(bench: Bench, configs: list[LoaderConfig], profile: LoaderProfile, started: float,
               progress: Progress) -> list[LoaderPoint]:
    """Measure each configuration; once the next would likely end past the profile's budget, skip the rest."""
    points, costs = [], []
    for config in configs:
        expected = sorted(costs)[len(costs) // 2] if costs else 0.0
        if time.perf_counter() - started + expected > profile.budget_s:
            points.append(LoaderPoint(config.workers, config.prefetch, config.pin_memory, "skipped",
                                      reason=f"the {profile.name} profile's {profile.budget_s:.0f} s budget ran out",
                                      formula_bytes=formula_bytes(config, bench.batch_bytes)))
            progress.advance("skipped: time budget")
            continue
        begun = time.perf_counter()
        points.append(measure_point(bench, config))
        costs.append(time.perf_counter() - begun)
        rate = points[-1].samples_per_s
        progress.advance(f"workers {config.workers} prefetch {config.prefetch} pin {int(config.pin_memory)}: "
                         + (f"{rate.median:.0f} samples/s" if rate else points[-1].status))
    return points


def summary_of(payload: DataloaderPayload) -> str:
    """One line for the collection log: the fastest point and the rule-of-thumb one."""
    if payload.status != "ok":
        return f"{payload.status}: {payload.reason}"
    ok = [p for p in payload.points if p.samples_per_s]
    best = max(ok, key=lambda p: p.samples_per_s.median, default=None)
    if best is None:
        return "no point ran"
    return (f"best {best.samples_per_s.median:.4g} samples/s at batch {payload.batch} (workers {best.workers}, "
            f"prefetch {best.prefetch}, pin_memory {best.pin_memory}) on {payload.logical_cores} cores")
