"""efficientnet-b0: a small depthwise-separable CNN with squeeze-and-excitation, EfficientNet-B0's layout, trained on
224×224 images; a new model as a user brings one (plain torch, no torchvision).

Model: a 3×3 stem (32 channels, stride 2), then 16 MBConv blocks in 7 stages (expand 1×1, depthwise k×k,
squeeze-and-excitation at a quarter of the block's input channels, project 1×1, a residual where the shape
allows), a 1×1 head to 1280 channels, average pooling and a 1000-class linear layer; BatchNorm and SiLU
throughout, cross-entropy. 5,288,548 parameters (21.2 MB in fp32), as torchvision's efficientnet_b0 has.

What sets its step: many small kernels (depthwise convolutions, the SE's pooling and two tiny linear layers per
block, BatchNorm), so at small batches the launch rate and the host, at large ones the memory traffic of the
activations, not the matmul rate: the kind of step torch.compile moves most (fusing the elementwise tail of each
convolution).

    gpuplan collect --workload examples/efficientnet_b0.py:build --profile standard

`build_tiny()` keeps the 16 blocks on 32×32 images with narrow channels, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, CLASSES = 224, 1000
# (expand ratio, output channels, blocks, first stride, kernel) per stage: EfficientNet-B0
STAGES = ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3), (6, 112, 3, 1, 5),
          (6, 192, 4, 2, 5), (6, 320, 1, 1, 3))
STEM, HEAD = 32, 1280
BATCH_START = 32  # gpuplan's main batch on a GPU is 8 × this: 256


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, nn.SiLU()) if act else nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """Channel attention: average pool, reduce, SiLU, expand, sigmoid, scale."""

    def __init__(self, channels: int, reduced: int):
        super().__init__()
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.expand = nn.Conv2d(reduced, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class MBConv(nn.Module):
    """Inverted residual: expand 1×1 (if ratio > 1), depthwise k×k, squeeze-excite, project 1×1 (no activation)."""

    def __init__(self, cin: int, cout: int, expand: int, stride: int, kernel: int):
        super().__init__()
        mid = cin * expand
        self.residual = stride == 1 and cin == cout
        self.expand = conv_bn(cin, mid, 1) if expand != 1 else nn.Identity()
        self.depthwise = conv_bn(mid, mid, kernel, stride, groups=mid)
        self.se = SqueezeExcite(mid, max(1, cin // 4))
        self.project = conv_bn(mid, cout, 1, act=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class EfficientNet(nn.Module):
    def __init__(self, width: float = 1.0, classes: int = CLASSES):
        super().__init__()

        def w(channels: int) -> int:  # channels scaled by `width`, rounded to a multiple of 8 (at least 8)
            return max(8, int(math.ceil(channels * width / 8)) * 8)

        blocks: list[nn.Module] = []
        cin = w(STEM)
        for expand, cout, repeats, stride, kernel in STAGES:
            for i in range(repeats):
                blocks.append(MBConv(cin, w(cout), expand, stride if i == 0 else 1, kernel))
                cin = w(cout)
        self.stem = conv_bn(3, w(STEM), 3, 2)
        self.blocks = nn.Sequential(*blocks)
        self.head = conv_bn(cin, w(HEAD), 1)
        self.classifier = nn.Linear(w(HEAD), classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.head(self.blocks(self.stem(images)))
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def workload(name: str, image: int, width: float, classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": EfficientNet(width, classes), "make_batch": make_batch, "loss": F.cross_entropy,
            "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """EfficientNet-B0 at 224×224, 1000 classes: 5.3 M parameters."""
    return workload("efficientnet-b0", IMAGE, 1.0, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same 16 blocks at a quarter of the width on 32×32 images, 10 classes: for CPU tests."""
    return workload("efficientnet-b0-cpu", 32, 0.25, 10, 2)
