"""The ImageNet training transform without torchvision: Pillow decode, random-resized crop to 224,
horizontal flip, float CHW tensor normalised with ImageNet's mean and standard deviation.

Each step does what torchvision's `RandomResizedCrop(224)`, `RandomHorizontalFlip()`, `ToTensor()`
and `Normalize(mean, std)` do, so the measured cost per image is the cost of the usual pipeline.
Randomness comes from Python's `random` module, which the DataLoader seeds differently in each worker.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import torch
from torch.utils.data import Dataset

CROP = 224
SCALE = (0.08, 1.0)            # share of the image's area the crop covers
RATIO = (3 / 4, 4 / 3)         # the crop's aspect ratio (width / height), sampled log-uniformly
ATTEMPTS = 10                  # tries before falling back to the centre crop, as torchvision does
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CLASSES = 1000


def random_resized_crop_box(width: int, height: int, rng: random.Random) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of a crop covering SCALE of the area at an aspect ratio in RATIO;
    after ATTEMPTS misses, the largest centred crop whose ratio is clamped into RATIO."""
    area = width * height
    log_low, log_high = math.log(RATIO[0]), math.log(RATIO[1])
    for _ in range(ATTEMPTS):
        target = area * rng.uniform(*SCALE)
        ratio = math.exp(rng.uniform(log_low, log_high))
        w = round(math.sqrt(target * ratio))
        h = round(math.sqrt(target / ratio))
        if 0 < w <= width and 0 < h <= height:
            left, top = rng.randint(0, width - w), rng.randint(0, height - h)
            return left, top, left + w, top + h
    in_ratio = width / height
    if in_ratio < RATIO[0]:
        w, h = width, round(width / RATIO[0])
    elif in_ratio > RATIO[1]:
        w, h = round(height * RATIO[1]), height
    else:
        w, h = width, height
    left, top = (width - w) // 2, (height - h) // 2
    return left, top, left + w, top + h


# (x / 255 - mean) / std folded into one multiply and one subtract.
_SCALE = torch.tensor([1 / (255 * s) for s in STD]).view(3, 1, 1)
_SHIFT = torch.tensor([m / s for m, s in zip(MEAN, STD, strict=True)]).view(3, 1, 1)


def to_normalised_tensor(image) -> torch.Tensor:  # noqa: ANN001 - a PIL RGB image
    """HWC uint8 bytes → CHW float32 (x / 255 - mean) / std, as ToTensor then Normalize. The transpose
    is done on the bytes, before widening to float, where it moves a quarter of the memory."""
    width, height = image.size
    pixels = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).view(height, width, 3)
    return pixels.permute(2, 0, 1).contiguous().to(torch.float32).mul_(_SCALE).sub_(_SHIFT)


def load_training_sample(path: Path, rng: random.Random, size: int = CROP) -> torch.Tensor:
    from PIL import Image

    with Image.open(path) as opened:
        image = opened.convert("RGB")
    box = random_resized_crop_box(image.width, image.height, rng)
    # Crop and resize in one resampling pass (Pillow's `box`), as torchvision's PIL path does.
    image = image.resize((size, size), Image.BILINEAR, box=box)
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    return to_normalised_tensor(image)


class JpegDataset(Dataset):
    """(image tensor 3×224×224 float32, class index) for each file; the class is a fixed function of
    the index (the label only has to exist and be batched, as in training)."""

    def __init__(self, files: list[Path], size: int = CROP):
        self.files, self.size = list(files), size

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return load_training_sample(self.files[index], random, self.size), index % CLASSES


def sample_bytes(size: int = CROP) -> int:
    """Bytes of one collated sample: the float32 image and its int64 label."""
    return 3 * size * size * 4 + 8
