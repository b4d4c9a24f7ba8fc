"""video-r2plus1d: an R(2+1)D-18 video action classifier trained on clips of 16 frames at 112×112 over 400 classes
(Kinetics-400's); a model of a family gpuplan had not seen (3-D convolutions and 3-D batch norms over time and
space), written as a user brings one (plain torch, torchvision's r2plus1d_18 layout, no torchvision).

Model (Tran et al. 2018, "A Closer Look at Spatiotemporal Convolutions"; torchvision's `r2plus1d_18`): every 3×3×3
convolution factored into a spatial 1×3×3 `nn.Conv3d` to M channels, a BatchNorm3d and ReLU, then a temporal 3×1×1
`nn.Conv3d`, M = ⌊27 · cin · cout / (9 · cin + 3 · cout)⌋ so that the pair has the full 3-D kernel's parameters.
A stem of a 1×7×7 stride-(1, 2, 2) convolution to 45 channels and a 3×1×1 one to 64 (each with BatchNorm3d and
ReLU); four stages of two basic blocks (two factored convolutions, batch norms, the residual; the first block of
stages 2-4 halves time, height and width and doubles the width to 128, 256, 512 through a strided 1×1×1 projection
with its batch norm); global average pooling over (time, height, width), a 400-class linear layer, cross-entropy.
31,505,325 parameters (126 MB in fp32), as torchvision's r2plus1d_18 has; torchvision's initialisation (Kaiming
normal, fan-out, for the convolutions).

Layout: NCDHW (clips of (batch, 3, frames, height, width)), as torchvision's video reference script and most users
leave it: no `channels_last_3d` conversion. In bf16 autocast, cuDNN runs the convolutions (transposing NCDHW
where its kernels want channels-last), and the BatchNorm3d layers run ATen's one-block-per-channel kernels (bf16
input, fp32 weights), as resnet18's do.

What sets its step: the convolutions, 40.5 G multiply-adds a clip forward (torchvision's "40.52 GFLOPS" for
r2plus1d_18 at these 16 × 112 × 112 clips count multiply-adds), about 243 GFLOP a clip for a training step and 15.6
TFLOP at the main batch, as 3-D convolutions whose spatial 1×3×3 and temporal 3×1×1 kernels are implicit GEMMs of
shallow reductions (9 or 3 × their input channels: 135 for the stem's temporal one) over many positions (50,176 a
clip in the first stage's 16 × 56 × 56 maps, 98 in the last's 2 × 7 × 7); and the memory-bound work on the large
early maps: 37 BatchNorm3d layers forward and backward (of 45 to 1,152 channels, ATen's one-block-per-channel kernels
in bf16, each block looping over a channel's 64 × 50,176 values at the main batch in the first stage), ReLUs and
residual adds (the first stage's maps are 6.4 MB a clip for each in bf16).

    gpuplan collect --workload examples/video_r2plus1d.py:build --profile standard

`build_tiny()` keeps the stem and four stages of two blocks at an eighth of the width on 4 frames of 16×16, 10
classes, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

FRAMES, SIZE, CLASSES = 16, 112, 400
WIDTHS, STEM_MID = (64, 128, 256, 512), 45   # torchvision's stem goes 3 -> 45 (1×7×7) -> 64 (3×1×1)
BATCH_START = 8  # gpuplan's main batch on a GPU is 8 × this: 64 clips (1,024 frames)


def midplanes(cin: int, cout: int) -> int:
    """The factored pair's inner width: the 3×3×3 kernel's parameters, 27 · cin · cout, shared by a 1×3×3 and a
    3×1×1 kernel (torchvision's BasicBlock)."""
    return (cin * cout * 27) // (cin * 9 + 3 * cout)


class Conv2Plus1D(nn.Sequential):
    """A 1×3×3 spatial convolution to `mid` channels, BatchNorm3d, ReLU, a 3×1×1 temporal convolution; a stride
    halves time, height and width (torchvision's Conv2Plus1D)."""

    def __init__(self, cin: int, cout: int, mid: int, stride: int = 1):
        super().__init__(
            nn.Conv3d(cin, mid, (1, 3, 3), (1, stride, stride), (0, 1, 1), bias=False),
            nn.BatchNorm3d(mid),
            nn.ReLU(inplace=True),
            nn.Conv3d(mid, cout, (3, 1, 1), (stride, 1, 1), (1, 0, 0), bias=False))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        mid = midplanes(cin, cout)   # both factored convolutions of a block use the first's (torchvision's)
        self.conv1 = nn.Sequential(Conv2Plus1D(cin, cout, mid, stride), nn.BatchNorm3d(cout), nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(Conv2Plus1D(cout, cout, mid), nn.BatchNorm3d(cout))
        self.project = None
        if stride != 1 or cin != cout:
            self.project = nn.Sequential(nn.Conv3d(cin, cout, 1, stride, bias=False), nn.BatchNorm3d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = self.project(x) if self.project is not None else x
        return F.relu(self.conv2(self.conv1(x)) + residual, inplace=True)


class R2Plus1D(nn.Module):
    """(batch, 3, frames, height, width) -> (batch, classes)."""

    def __init__(self, widths: tuple[int, ...] = WIDTHS, stem_mid: int = STEM_MID, classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv3d(3, stem_mid, (1, 7, 7), (1, 2, 2), (0, 3, 3), bias=False), nn.BatchNorm3d(stem_mid),
            nn.ReLU(inplace=True),
            nn.Conv3d(stem_mid, widths[0], (3, 1, 1), 1, (1, 0, 0), bias=False), nn.BatchNorm3d(widths[0]),
            nn.ReLU(inplace=True))
        blocks, cin = [], widths[0]
        for stage, width in enumerate(widths):
            blocks += [BasicBlock(cin, width, 1 if stage == 0 else 2), BasicBlock(width, width, 1)]
            cin = width
        self.blocks = nn.Sequential(*blocks)
        self.pool, self.head = nn.AdaptiveAvgPool3d(1), nn.Linear(widths[-1], classes)
        for m in self.modules():   # torchvision's VideoResNet initialisation
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.blocks(self.stem(clips))).flatten(1))


def workload(name: str, model: R2Plus1D, frames: int, size: int, classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        clips = torch.randn(batch_size, 3, frames, size, size, device=device)
        return clips, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": model, "make_batch": make_batch, "loss": F.cross_entropy, "unit": "clips",
            "batch_start": batch_start}


def build() -> dict:
    """R(2+1)D-18, 16 frames at 112×112, 400 classes: 31.5 M parameters."""
    return workload("video-r2plus1d", R2Plus1D(), FRAMES, SIZE, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same stem and 8 blocks at an eighth of the width (stem 6 -> 8), 4 frames of 16×16, 10 classes."""
    return workload("video-r2plus1d-cpu", R2Plus1D(tuple(w // 8 for w in WIDTHS), 6, 10), 4, 16, 10, 2)
