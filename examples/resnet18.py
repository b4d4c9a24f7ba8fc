"""resnet18: ResNet-18, trained on 224×224 images in the default NCHW layout; a held-out model for the CPU trace
(issue 41), written as a user brings one (plain torch, no torchvision, no channels-last conversion).

Model (He et al. 2016, torchvision's resnet18 layout): a 7×7 stride-2 stem of 64 channels, batch norm, ReLU and a
3×3 max pool; four stages of two basic blocks (two 3×3 convolutions with batch norms, a residual; the first block of
stages 2-4 halves the map and doubles the width to 128, 256 and 512 channels through a strided 1×1 projection);
average pooling and a 1000-class linear layer; cross-entropy. 11,689,512 parameters, as torchvision's resnet18 has.

What it tests in a trace-only plan: the reference ResNet-50 runs channels-last; this one is NCHW as most users
leave it, so its convolutions run through cuDNN's NCHW transposes and, in bf16 autocast, its batch norms on ATen's
one-block-per-channel kernels (64 to 512 channels).

    gpuplan collect --workload examples/resnet18.py:build --profile standard

`build_tiny()` keeps the four stages on 32×32 images at an eighth of the width, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, CLASSES = 224, 1000
WIDTHS = (64, 128, 256, 512)
BATCH_START = 32


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.project = None
        if stride != 1 or cin != cout:
            self.project = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.project(x) if self.project is not None else x))


class ResNet18(nn.Module):
    def __init__(self, widths: tuple[int, ...] = WIDTHS, classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], widths[0]
        for stage, width in enumerate(widths):
            blocks += [BasicBlock(cin, width, 1 if stage == 0 else 2), BasicBlock(width, width, 1)]
            cin = width
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(widths[-1], classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(images)).mean(dim=(2, 3)))


def workload(name: str, image: int, widths: tuple[int, ...], classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": ResNet18(widths, classes), "make_batch": make_batch, "loss": F.cross_entropy,
            "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """ResNet-18 at 224×224, 1000 classes, NCHW: 11.7 M parameters."""
    return workload("resnet18", IMAGE, WIDTHS, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same four stages at an eighth of the width on 32×32 images, 10 classes: for CPU tests."""
    return workload("resnet18-cpu", 32, tuple(w // 8 for w in WIDTHS), 10, 2)
