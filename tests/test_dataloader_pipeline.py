"""The input pipeline on the CPU with a small real dataset: synthetic JPEGs and their cache, the training
transform, and real DataLoader points with worker processes (memory, CPU, the full prefetch buffer)."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from collectors.dataloader import jpeg_dataset
from collectors.dataloader.collect import LOADER_PROFILES, build_configs, run_points, worker_counts
from collectors.dataloader.image_pipeline import (
    CROP,
    MEAN,
    RATIO,
    SCALE,
    STD,
    JpegDataset,
    load_training_sample,
    random_resized_crop_box,
    sample_bytes,
)
from collectors.dataloader.loader_sweep import Bench, LoaderConfig, measure_epoch_boundary, measure_point
from collectors.dataloader.process_group import open_group
from gpuplan_schema.progress import Progress

BATCH = 4


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> jpeg_dataset.ImageFolder:
    return jpeg_dataset.ensure_images(tmp_path_factory.mktemp("cache"), 12, processes=2)


@pytest.fixture(scope="module")
def bench(images: jpeg_dataset.ImageFolder) -> Bench:
    group, reason = open_group()
    assert group is not None, reason
    return Bench(JpegDataset(images.files), torch.device("cpu"), BATCH, BATCH * sample_bytes(), blocks=2, cores=2,
                 group=group, memory_period_s=0.1)


def test_images_are_reproducible_sized_like_imagenet_and_not_trivial_to_decode():
    first = jpeg_dataset.make_jpeg(3)
    assert first == jpeg_dataset.make_jpeg(3) and first != jpeg_dataset.make_jpeg(4)
    sizes = Counter(jpeg_dataset.image_size(i) for i in range(200))
    assert len(sizes) >= 5 and sizes.most_common(1)[0][0] == (500, 375)
    assert all(400 <= max(w, h) <= 640 and 0.6 <= w / h <= 1.6 for w, h in sizes)
    with Image.open(io.BytesIO(first)) as image:
        assert image.format == "JPEG" and image.size == jpeg_dataset.image_size(3)
        width, height = image.size
        flat = io.BytesIO()
        Image.new("RGB", image.size, (120, 90, 60)).save(flat, "JPEG", quality=jpeg_dataset.QUALITY)
    bits_per_pixel = 8 * len(first) / (width * height)
    assert 2 < bits_per_pixel < 8          # photograph-like entropy at quality 90, not flat, not noise
    assert len(first) > 5 * len(flat.getvalue())


def test_the_cache_is_made_once_reused_and_rebuilt_when_incomplete(tmp_path):
    made = jpeg_dataset.ensure_images(tmp_path, 6, processes=2)
    folder = jpeg_dataset.cache_folder(tmp_path, 6)
    assert made.generated_s is not None and made.folder == folder and len(made.files) == 6
    assert (folder / jpeg_dataset.MARKER).is_file() and made.mean_bytes > 20_000
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]      # the temporary folder was renamed
    stamps = {p: p.stat().st_mtime_ns for p in made.files}
    again = jpeg_dataset.ensure_images(tmp_path, 6)
    assert again.generated_s is None and {p: p.stat().st_mtime_ns for p in again.files} == stamps
    assert again.mean_bytes == made.mean_bytes
    made.files[2].unlink()                                               # marker present, a file missing
    assert jpeg_dataset.ensure_images(tmp_path, 6, processes=1).generated_s is not None
    (folder / jpeg_dataset.MARKER).unlink()                               # files present, no marker: half-written
    rebuilt = jpeg_dataset.ensure_images(tmp_path, 6, processes=1)
    assert rebuilt.generated_s is not None and all(p.is_file() for p in rebuilt.files)
    assert [p.read_bytes() for p in rebuilt.files] == [jpeg_dataset.make_jpeg(i) for i in range(6)]


def test_the_default_cache_follows_xdg_and_otherwise_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert jpeg_dataset.default_cache_root() == tmp_path / "gpuplan"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert jpeg_dataset.default_cache_root() == Path.home() / ".cache" / "gpuplan"
    assert jpeg_dataset.cache_folder(tmp_path, 1024).name == f"jpeg-1024-v{jpeg_dataset.GENERATOR_VERSION}"


@given(st.integers(1, 2000), st.integers(1, 2000), st.integers(0, 2**32))
def test_random_resized_crop_boxes_lie_inside_the_image_at_torchvision_scales(width, height, seed):
    left, top, right, bottom = random_resized_crop_box(width, height, random.Random(seed))
    assert 0 <= left < right <= width and 0 <= top < bottom <= height
    w, h = right - left, bottom - top
    centred = left == (width - w) // 2 and top == (height - h) // 2
    if centred and (w == width or h == height):
        return  # the fallback after ten misses: a centred crop as large as RATIO allows
    # Rounding to whole pixels moves area and ratio by at most a pixel's worth.
    slack = 1 / min(w, h) + 1 / max(w, h)
    assert SCALE[0] * (1 - 2 * slack) <= w * h / (width * height) <= SCALE[1]
    assert RATIO[0] * (1 - 2 * slack) <= w / h <= RATIO[1] * (1 + 2 * slack)


def test_a_sample_is_a_normalised_float_chw_tensor_with_channels_in_rgb_order(tmp_path):
    path = tmp_path / "solid.png"   # lossless, so the expected values are exact
    colour = (200, 100, 30)
    Image.new("RGB", (500, 375), colour).save(path)
    sample = load_training_sample(path, random.Random(0))
    assert sample.shape == (3, CROP, CROP) and sample.dtype == torch.float32 and sample.is_contiguous()
    for channel in range(3):
        expected = (colour[channel] / 255 - MEAN[channel]) / STD[channel]
        assert torch.allclose(sample[channel], torch.full((CROP, CROP), expected), atol=1e-5)


def test_half_the_samples_are_flipped(tmp_path):
    path = tmp_path / "ramp.png"    # red grows from left to right: a flip reverses it
    red = Image.linear_gradient("L").rotate(90).resize((500, 375))
    Image.merge("RGB", [red, Image.new("L", red.size), Image.new("L", red.size)]).save(path)
    rng = random.Random(1)
    samples = [load_training_sample(path, rng) for _ in range(40)]
    slopes = [float(s[0, :, -1].mean() - s[0, :, 0].mean()) for s in samples]
    left_to_right = sum(slope > 0 for slope in slopes)
    assert all(abs(slope) > 0.01 for slope in slopes)
    assert 10 <= left_to_right <= 30


def test_worker_counts_follow_powers_of_two_up_to_the_cores_with_three_quarters_of_them():
    assert worker_counts(16) == [0, 1, 2, 4, 8, 12, 16]
    assert worker_counts(6) == [0, 1, 2, 4, 6]
    assert worker_counts(2) == [0, 1, 2]
    assert worker_counts(1) == [0, 1]


def test_the_standard_plan_on_16_cores_runs_the_worker_sweep_first_then_the_other_prefetch_factors():
    main, extra = build_configs(LOADER_PROFILES["standard"], 16, can_pin=True)
    counts = (1, 2, 4, 8, 12, 16)
    assert [(c.pin_memory, c.workers, c.prefetch) for c in main] == (
        [(True, 0, None)] + [(True, w, 2) for w in counts] + [(False, 0, None)] + [(False, w, 2) for w in counts])
    assert sorted((c.workers, c.prefetch) for c in extra) == sorted((w, p) for w in counts for p in (1, 4, 8))
    assert all(c.pin_memory for c in extra)
    assert {(c.workers, c.prefetch) for c in main + extra if c.fill} == {(12, 2), (12, 4), (16, 2), (16, 4)}
    cpu_main, cpu_extra = build_configs(LOADER_PROFILES["standard"], 16, can_pin=False)
    assert not any(c.pin_memory for c in cpu_main + cpu_extra) and len(cpu_main) == 7 and len(cpu_extra) == 18
    quick_main, quick_extra = build_configs(LOADER_PROFILES["quick"], 16, can_pin=True)
    assert quick_extra == [] and [(c.pin_memory, c.workers) for c in quick_main if not c.pin_memory] == [
        (False, 0), (False, 12)]


def test_two_workers_fill_their_prefetch_slots_and_the_queued_batches_are_counted(bench):
    point = measure_point(bench, LoaderConfig(2, 3, False, fill=True))
    assert point.status == "ok", point.reason
    batch_bytes = BATCH * sample_bytes()
    assert point.formula_bytes == 2 * 3 * batch_bytes
    assert point.samples_per_s.n == bench.blocks and point.timed_batches % 2 == 0
    assert point.samples_per_s.median == pytest.approx(point.batches_per_s * BATCH)
    assert point.time_to_first_batch_s > 0 and point.cpu_cores_busy > 0.1
    assert point.buffer_full is True
    # The six buffered batches: those still queued sit in shared-memory files no process maps (each rounded up
    # to whole pages); any the main process received ahead of their turn are mapped by it, so in its PSS.
    pages = math.ceil(batch_bytes / os.sysconf("SC_PAGE_SIZE")) * os.sysconf("SC_PAGE_SIZE")
    queued = point.memory_full_queued_bytes
    assert queued % pages == 0 and pages <= queued <= 2 * 3 * pages
    assert point.memory_full_bytes - point.memory_baseline_bytes > point.formula_bytes
    assert point.memory_peak_bytes > point.memory_baseline_bytes and point.memory_samples >= 2


def test_the_main_process_alone_loads_without_prefetch(bench):
    point = measure_point(bench, LoaderConfig(0, None, False))
    assert point.status == "ok", point.reason
    assert point.prefetch is None and point.formula_bytes == 0 and point.timed_batches >= bench.blocks
    assert point.cpu_cores_busy > 0.1 and point.memory_full_bytes is None


def test_the_epoch_boundary_is_measured_with_and_without_persistent_workers(bench):
    config = LoaderConfig(2, 2, False)
    for persistent in (False, True):
        e = measure_epoch_boundary(bench, config, persistent)
        assert e.status == "ok", e.reason
        assert e.persistent is persistent and e.epoch_batches == 4
        assert 0 < e.second_epoch_first_batch_s <= e.epoch_gap_s


def test_points_that_would_end_past_the_profile_budget_are_skipped_with_the_reason(bench):
    profile = dataclasses.replace(LOADER_PROFILES["quick"], budget_s=0.01)
    configs = [LoaderConfig(1, 2, False), LoaderConfig(2, 2, False)]
    with Progress("dataloader", 2, stream=io.StringIO()) as progress:
        first, second = run_points(bench, configs, profile, time.perf_counter(), progress)
    assert first.status == "ok" and first.samples_per_s is not None   # nothing measured yet: it starts
    assert second.status == "skipped" and "quick profile's 0 s budget ran out" in second.reason
    assert second.samples_per_s is None and second.formula_bytes == 2 * 2 * BATCH * sample_bytes()
