"""resnext101-32x4d: a deep grouped-convolution CNN, ResNeXt-101 32×4d, trained on 224×224 images; a new model as a
user brings one (plain torch, no torchvision).

Model: ResNet-101's layout (a 7×7 stem and max-pool, then 3, 4, 23 and 3 bottleneck blocks at 256, 512, 1024 and 2048
output channels) with ResNeXt's bottleneck: the 3×3 convolution split into 32 groups of 4 × (stage width / 64)
channels (cardinality 32, width 4: 128 channels in the first stage's bottleneck), BatchNorm and ReLU, average
pooling and a 1000-class linear layer, cross-entropy. 44,177,704 parameters (177 MB in fp32), as in the ResNeXt
paper (Xie et al. 2017, table: ResNeXt-101 32×4d, 44.2 M).

What sets its step: convolutions, mostly the 1×1 ones (dense matmuls) and the grouped 3×3 (32 small matmuls
each, a lower rate than a dense one); 101 layers at 224×224 make a longer step than ResNet-50's at the same batch.

    gpuplan collect --workload examples/resnext101.py:build --profile standard

`build_tiny()` keeps the depth (3, 4, 23, 3 blocks, 32 groups) on 32×32 images with narrow channels, for the CPU
tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, CLASSES = 224, 1000
LAYERS = (3, 4, 23, 3)
GROUPS, WIDTH_PER_GROUP = 32, 4
EXPANSION = 4
BATCH_START = 16  # gpuplan's main batch on a GPU is 8 × this: 128


class Bottleneck(nn.Module):
    """1×1 reduce, grouped 3×3 (stride here), 1×1 expand; a projected shortcut where the shape changes."""

    def __init__(self, cin: int, planes: int, stride: int, groups: int, width_per_group: int):
        super().__init__()
        width = planes * width_per_group // 64 * groups
        cout = planes * EXPANSION
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + self.shortcut(x))


class ResNeXt(nn.Module):
    def __init__(self, base: int = 64, groups: int = GROUPS, width_per_group: int = WIDTH_PER_GROUP,
                 classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks: list[nn.Module] = []
        cin = base
        for stage, repeats in enumerate(LAYERS):
            planes = base * 2 ** stage
            for i in range(repeats):
                blocks.append(Bottleneck(cin, planes, 2 if i == 0 and stage > 0 else 1, groups, width_per_group))
                cin = planes * EXPANSION
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(images))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def workload(name: str, image: int, base: int, width_per_group: int, classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": ResNeXt(base, GROUPS, width_per_group, classes), "make_batch": make_batch,
            "loss": F.cross_entropy, "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """ResNeXt-101 32×4d at 224×224, 1000 classes: 44.2 M parameters."""
    return workload("resnext101-32x4d", IMAGE, 64, WIDTH_PER_GROUP, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same 33 blocks and 32 groups with a base of 8 channels (1 per group in the first stage's 3×3) on 32×32
    images, 10 classes: for CPU tests."""
    return workload("resnext101-32x4d-cpu", 32, 8, 8, 10, 2)
