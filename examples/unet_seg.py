"""unet-seg: a 2D U-Net for semantic segmentation (Ronneberger et al. 2015's layout, padded convolutions and
BatchNorm), trained on 256×256 images with a cross-entropy per pixel; a new model as a user brings one (plain torch).

Model: an encoder of five levels at 64, 128, 256, 512 and 1024 channels (two 3×3 convolutions, BatchNorm and ReLU
each; 2×2 max-pooling between levels), a decoder of four levels that doubles the resolution with a 2×2 stride-2
transposed convolution, concatenates the encoder's feature map of that level (the skip connection) and applies two
3×3 convolutions again, and a 1×1 convolution to 21 class scores per pixel (Pascal VOC's 20 classes and
background); cross-entropy over every pixel. 31,038,933 parameters (124 MB in fp32).

What sets its step: 3×3 convolutions, about 290 GFLOP an image for a training step (48 G multiply-adds forward),
spread evenly over the levels (the channels double as the pixels quarter), a fifth of them at full resolution with
only 64 channels; so the convolutions' rate, and the memory of the activations: every level's output is kept for
its skip connection, the full-resolution ones largest, with the per-pixel logits besides, so the batch that fits
is small (a few hundred images on an 80 GB GPU).

    gpuplan collect --workload examples/unet_seg.py:build --profile standard

`build_tiny()` keeps the five levels on 32×32 images with 8 channels at the first level, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, CLASSES, BASE, LEVELS = 256, 21, 64, 5
BATCH_START = 4  # gpuplan's main batch on a GPU is 8 × this: 32 images


def double_conv(cin: int, cout: int) -> nn.Sequential:
    """Two 3×3 convolutions (padded: the size is kept), each with BatchNorm and ReLU."""
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Up(nn.Module):
    """Transposed 2×2 convolution to twice the size and half the channels, concatenated with the skip, double conv."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 2, stride=2)
        self.conv = double_conv(2 * cout, cout)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.cat([skip, self.up(x)], dim=1))


class UNet(nn.Module):
    def __init__(self, base: int = BASE, classes: int = CLASSES):
        super().__init__()
        widths = [base * 2 ** level for level in range(LEVELS)]  # 64, 128, 256, 512, 1024
        self.down = nn.ModuleList(double_conv(cin, cout) for cin, cout in zip([3, *widths[:-1]], widths, strict=True))
        self.up = nn.ModuleList(Up(cin, cout) for cin, cout in zip(widths[:0:-1], widths[-2::-1], strict=True))
        self.classify = nn.Conv2d(base, classes, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        skips = []
        x = images
        for level, conv in enumerate(self.down):
            x = conv(x if level == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, skip in zip(self.up, reversed(skips[:-1]), strict=True):
            x = up(x, skip)
        return self.classify(x)


def workload(name: str, image: int, base: int, classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size, image, image), device=device)  # a class per pixel

    return {"name": name, "model": UNet(base, classes), "make_batch": make_batch, "loss": F.cross_entropy,
            "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """U-Net at 256×256 with 64 channels at the first level, 21 classes: 31.0 M parameters."""
    return workload("unet-seg", IMAGE, BASE, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same five levels with 8 channels at the first level on 32×32 images, 4 classes: for CPU tests."""
    return workload("unet-seg-cpu", 32, 8, 4, 2)
