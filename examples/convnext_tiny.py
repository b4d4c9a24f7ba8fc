"""convnext-tiny: a ConvNeXt-T image classifier (depthwise 7×7 convolutions, LayerNorm, GELU MLPs) trained on
224×224 images; a new model as a user brings one (plain torch, no torchvision).

Model: a 4×4 stride-4 "patchify" stem and a LayerNorm, then 3, 3, 9 and 3 ConvNeXt blocks at 96, 192, 384 and 768
channels, a LayerNorm and a 2×2 stride-2 convolution between stages; each block a depthwise 7×7 convolution, then
channels-last: LayerNorm, Linear ×4, GELU, Linear back, a learned per-channel layer scale (1e-6 at the start) and the
residual. Global average pooling, a LayerNorm and a 1000-class linear layer; cross-entropy. The LayerNorms over
channels permute to channels-last and back, as torchvision's LayerNorm2d does. 28,589,128 parameters (114 MB in
fp32), as torchvision's convnext_tiny has (Liu et al. 2022, ConvNeXt-T: 28 M). No stochastic depth: it drops whole
residual branches at random, which changes no shape and little of the step's time.

What sets its step: the MLPs' Linear layers (dense matmuls over 56×56 … 7×7 positions, 94 % of the 26.7 GFLOP an
image of a training step; 4.5 G multiply-adds forward, as the paper gives) beside many memory-bound ops (the 18
depthwise 7×7 convolutions, LayerNorm, GELU, the permutes' copies and the layer scale): the matmul rate at large
batches and the memory traffic of the activations beside it, a transformer's ops in a CNN's layout, which neither
EfficientNet-B0 nor ResNeXt-101 has.

    gpuplan collect --workload examples/convnext_tiny.py:build --profile standard

`build_tiny()` keeps the 18 blocks on 32×32 images with narrow channels, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, CLASSES = 224, 1000
DEPTHS, DIMS = (3, 3, 9, 3), (96, 192, 384, 768)
LAYER_SCALE = 1e-6
BATCH_START = 16  # gpuplan's main batch on a GPU is 8 × this: 128, ConvNeXt's batch per GPU in its paper


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor: permute to NHWC, normalise, permute back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps).permute(0, 3, 1, 2)


class Block(nn.Module):
    """x + scale · MLP(LN(depthwise 7×7(x))), the MLP and its LayerNorm channels-last."""

    def __init__(self, dim: int):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.scale = nn.Parameter(torch.full((dim,), LAYER_SCALE))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y))))
        return x + (self.scale * y).permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self, dims: tuple[int, ...] = DIMS, classes: int = CLASSES):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0], eps=1e-6)]
        for stage, (depth, dim) in enumerate(zip(DEPTHS, dims, strict=True)):
            if stage > 0:  # downsample: LayerNorm, then a 2×2 stride-2 convolution to the stage's width
                layers += [LayerNorm2d(dims[stage - 1], eps=1e-6), nn.Conv2d(dims[stage - 1], dim, 2, stride=2)]
            layers += [Block(dim) for _ in range(depth)]
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.features(images).mean(dim=(2, 3))  # global average pooling
        return self.head(self.norm(x))


def workload(name: str, image: int, dims: tuple[int, ...], classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": ConvNeXt(dims, classes), "make_batch": make_batch, "loss": F.cross_entropy,
            "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """ConvNeXt-T at 224×224, 1000 classes: 28.6 M parameters."""
    return workload("convnext-tiny", IMAGE, DIMS, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same 18 blocks at widths 16, 32, 64 and 128 on 32×32 images, 10 classes: for CPU tests."""
    return workload("convnext-tiny-cpu", 32, (16, 32, 64, 128), 10, 2)
