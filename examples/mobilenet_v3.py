"""mobilenet-v3: MobileNetV3-Large, trained on 224×224 images; a held-out model for the CPU trace (issue 41), written as
a user brings one (plain torch, no torchvision).

Model (Howard et al. 2019, "Searching for MobileNetV3", torchvision's mobilenet_v3_large layout): a 3×3 stem (16
channels, stride 2, hard-swish), 15 inverted-residual blocks (expand 1×1 where the width grows, depthwise 3×3 or 5×5,
squeeze-and-excitation with a hard sigmoid in eight of them, project 1×1, a residual where the shape allows; ReLU in
the first six, hard-swish after), a 1×1 conv to 960 channels, average pooling, a 1280-wide hidden layer with
hard-swish and dropout, and a 1000-class linear layer; BatchNorm throughout, cross-entropy. 5,483,032 parameters,
as torchvision's mobilenet_v3_large has.

What it tests in a trace-only plan: op kinds no reference workload runs (hard-swish and the hard sigmoid, timed with
the activations' figures; depthwise convolutions, timed as convolutions), and many bf16 batch norms of 16 to 960
channels, which a GPU runs with ATen's one-block-per-channel kernels.

    gpuplan collect --workload examples/mobilenet_v3.py:build --profile standard

`build_tiny()` keeps the 15 blocks on 32×32 images at a quarter of the width, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, CLASSES = 224, 1000
# (kernel, expanded, out, squeeze-excite, hard-swish, stride) per block: MobileNetV3-Large, after a 16-channel stem
BLOCKS = ((3, 16, 16, False, False, 1), (3, 64, 24, False, False, 2), (3, 72, 24, False, False, 1),
          (5, 72, 40, True, False, 2), (5, 120, 40, True, False, 1), (5, 120, 40, True, False, 1),
          (3, 240, 80, False, True, 2), (3, 200, 80, False, True, 1), (3, 184, 80, False, True, 1),
          (3, 184, 80, False, True, 1), (3, 480, 112, True, True, 1), (3, 672, 112, True, True, 1),
          (5, 672, 160, True, True, 2), (5, 960, 160, True, True, 1), (5, 960, 160, True, True, 1))
STEM, LAST, HIDDEN = 16, 960, 1280
BATCH_START = 32  # gpuplan's main batch on a GPU is 8 × this: 256


def divisible(channels: float, by: int = 8) -> int:
    """Channels rounded to a multiple of `by`, never below 90 % of the request (MobileNet's _make_divisible)."""
    rounded = max(by, int(channels + by / 2) // by * by)
    return rounded + by if rounded < 0.9 * channels else rounded


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
            act: type[nn.Module] | None = nn.Hardswish) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout, eps=0.001, momentum=0.01)]
    return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """Channel attention: average pool, reduce to a quarter (rounded to 8), ReLU, expand, hard sigmoid, scale."""

    def __init__(self, channels: int):
        super().__init__()
        squeezed = divisible(channels // 4)
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.expand(F.relu(self.reduce(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, kernel: int, expanded: int, cout: int, se: bool, hard_swish: bool, stride: int):
        super().__init__()
        act = nn.Hardswish if hard_swish else nn.ReLU
        self.residual = stride == 1 and cin == cout
        layers: list[nn.Module] = [conv_bn(cin, expanded, 1, act=act)] if expanded != cin else []
        layers.append(conv_bn(expanded, expanded, kernel, stride, groups=expanded, act=act))
        if se:
            layers.append(SqueezeExcite(expanded))
        layers.append(conv_bn(expanded, cout, 1, act=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV3(nn.Module):
    def __init__(self, width: float = 1.0, classes: int = CLASSES):
        super().__init__()
        cin = divisible(STEM * width)
        layers: list[nn.Module] = [conv_bn(3, cin, 3, 2)]
        for kernel, expanded, cout, se, hard_swish, stride in BLOCKS:
            expanded, cout = divisible(expanded * width), divisible(cout * width)
            layers.append(InvertedResidual(cin, kernel, expanded, cout, se, hard_swish, stride))
            cin = cout
        last = divisible(LAST * width)
        layers.append(conv_bn(cin, last, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(last, HIDDEN), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(HIDDEN, classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(images), 1), 1))


def workload(name: str, image: int, width: float, classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": MobileNetV3(width, classes), "make_batch": make_batch, "loss": F.cross_entropy,
            "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """MobileNetV3-Large at 224×224, 1000 classes: 5.5 M parameters."""
    return workload("mobilenet-v3", IMAGE, 1.0, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same 15 blocks at a quarter of the width on 32×32 images, 10 classes: for CPU tests."""
    return workload("mobilenet-v3-cpu", 32, 0.25, 10, 2)
