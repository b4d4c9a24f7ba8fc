"""swin-tiny: a Swin-T image classifier (shifted-window attention with relative position bias) trained on 224×224
images; a model of a family gpuplan had not seen (attention inside 7×7 windows, cyclic shifts, a learned bias
gathered by a relative-position index), written as a user brings one (plain torch, timm's layout).

Model (Liu et al. 2021, Swin-T): a 4×4 stride-4 patch embedding to 96 channels and a LayerNorm, then 2, 2, 6 and 2
Swin blocks at 96, 192, 384 and 768 channels (3, 6, 12, 24 heads of 32) over 56×56, 28×28, 14×14 and 7×7 tokens,
kept channels-last (batch, height, width, channels), with a patch merging between stages (each 2×2 neighbourhood
concatenated, a LayerNorm over the 4C channels, a bias-free Linear to 2C). Each block: LayerNorm; every other block
rolls the map by 3 tokens (`torch.roll`); partition into 7×7 windows (view, permute, copy); multi-head attention
inside each window, a 169-row table of learned biases per head gathered into a (heads, 49, 49) bias by a
relative-position index and added to the scores, and for the shifted blocks a -100 mask on pairs of tokens the roll
brought together from opposite edges; attention written out as the official code writes it (q·kᵀ, bias and mask
added, softmax, ·v; timm passes the bias to `scaled_dot_product_attention` instead); windows put back, the roll
undone, the residual; LayerNorm, an MLP ×4 with GELU, the residual. Stochastic depth on both residual branches,
rising linearly to 0.2 at the last block (Swin-T's recipe: a Bernoulli draw per image). The last stage's map is a
single window, so it is not shifted. A LayerNorm, global average pooling, a 1000-class linear layer, cross-entropy
with label smoothing 0.1. 28,288,354 parameters (113 MB in fp32), as timm's swin_tiny_patch4_window7_224 has.

What sets its step: little arithmetic for its bytes. Its matmuls are 26.9 GFLOP an image for a training step (4.49
G multiply-adds forward, the paper's 4.5 G; 96 % in the Linear layers over 3,136 … 49 tokens, 3 % in attention's
batched 49 × 49 × 32 products), 3.4 TFLOP at the main batch, a few milliseconds of an H100's tensor cores; the rest
is memory-bound work on every activation: the rolls and window partitions (copies), attention's scores written out
(49 a token and head, 2.2 M an image over the 12 blocks, fp32 once the fp32 bias is added, as the softmax), the
bias gathers and their scatter-add gradients (index_put), LayerNorm, GELU and the stochastic depth's products.

    gpuplan collect --workload examples/swin_tiny.py:build --profile standard

`build_tiny()` keeps the 12 blocks (2, 2, 6, 2) on 32×32 images with 2×2 patches, windows of 2×2 (the first three
stages shifted, the last not, as the real size's) and width 16, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, PATCH, CLASSES, WINDOW = 224, 4, 1000, 7
DEPTHS, HEADS, EMBED, MLP_RATIO = (2, 2, 6, 2), (3, 6, 12, 24), 96, 4
DROP_PATH, SMOOTHING, MASKED = 0.2, 0.1, -100.0
BATCH_START = 16  # gpuplan's main batch on a GPU is 8 × this: 128 images, Swin's batch per GPU (1024 on 8 GPUs)


def window_partition(x: torch.Tensor, window: int) -> torch.Tensor:
    """(B, H, W, C) -> (B · windows, window², C), windows in row-major order."""
    b, h, w, c = x.shape
    x = x.view(b, h // window, window, w // window, window, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, window * window, c)


def window_reverse(windows: torch.Tensor, window: int, h: int, w: int) -> torch.Tensor:
    """(B · windows, window², C) -> (B, H, W, C): window_partition undone."""
    c = windows.shape[-1]
    x = windows.view(-1, h // window, w // window, window, window, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, h, w, c)


def relative_position_index(window: int) -> torch.Tensor:
    """(window², window²): for each pair of tokens in a window, the row of their offset in the (2w-1)² table."""
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
    offset = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
    return offset[..., 0] * (2 * window - 1) + offset[..., 1]


def shift_mask(size: int, window: int, shift: int) -> torch.Tensor:
    """(windows, window², window²): MASKED where two tokens of a shifted window came from different regions."""
    region = torch.zeros(1, size, size, 1)
    bands = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
    for i, (rows, cols) in enumerate((r, c) for r in bands for c in bands):
        region[:, rows, cols, :] = i
    labels = window_partition(region, window).squeeze(-1)
    return (labels[:, None, :] != labels[:, :, None]).float() * MASKED


def drop_path(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Stochastic depth: zero the branch for a fraction p of the images, scale the rest by 1/(1-p) (timm's)."""
    if p == 0.0 or not training:
        return x
    keep = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(1 - p)
    return x * keep.div_(1 - p)


class WindowAttention(nn.Module):
    def __init__(self, dim: int, heads: int, window: int):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.bias_table = nn.Parameter(torch.empty((2 * window - 1) ** 2, heads))
        nn.init.trunc_normal_(self.bias_table, std=0.02)
        self.register_buffer("bias_index", relative_position_index(window).flatten(), persistent=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """x: (B · windows, N, C); mask: (windows, N, N) or None. The official code's attention, written out."""
        bw, n, c = x.shape
        q, k, v = self.qkv(x).view(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q * self.scale) @ k.transpose(-2, -1)                           # (B · windows, heads, N, N)
        scores = scores + self.bias_table[self.bias_index].view(n, n, -1).permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            windows = mask.shape[0]
            scores = scores.view(bw // windows, windows, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            scores = scores.view(bw, self.heads, n, n)
        y = scores.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(bw, n, c))


class SwinBlock(nn.Module):
    def __init__(self, dim: int, heads: int, size: int, window: int, shift: int, drop: float):
        super().__init__()
        self.window, self.shift, self.drop = window, shift, drop
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attention = WindowAttention(dim, heads, window)
        self.mlp = nn.Sequential(nn.Linear(dim, MLP_RATIO * dim), nn.GELU(), nn.Linear(MLP_RATIO * dim, dim))
        self.register_buffer("mask", shift_mask(size, window, shift) if shift else None, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        y = self.norm1(x)
        if self.shift:
            y = torch.roll(y, shifts=(-self.shift, -self.shift), dims=(1, 2))
        y = window_reverse(self.attention(window_partition(y, self.window), self.mask), self.window, h, w)
        if self.shift:
            y = torch.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
        x = x + drop_path(y, self.drop, self.training)
        return x + drop_path(self.mlp(self.norm2(x)), self.drop, self.training)


class PatchMerging(nn.Module):
    """Each 2×2 neighbourhood's four C-vectors concatenated, LayerNorm, a bias-free Linear 4C -> 2C."""

    def __init__(self, dim: int):
        super().__init__()
        self.norm, self.reduction = nn.LayerNorm(4 * dim), nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        x = x.reshape(b, h // 2, 2, w // 2, 2, c).permute(0, 1, 3, 4, 2, 5).flatten(3)
        return self.reduction(self.norm(x))


class Swin(nn.Module):
    def __init__(self, image: int = IMAGE, patch: int = PATCH, embed: int = EMBED, window: int = WINDOW,
                 heads: tuple[int, ...] = HEADS, classes: int = CLASSES):
        super().__init__()
        self.patch = nn.Conv2d(3, embed, patch, stride=patch)
        self.patch_norm = nn.LayerNorm(embed)
        drops = [DROP_PATH * i / (sum(DEPTHS) - 1) for i in range(sum(DEPTHS))]   # 0 … 0.2, block by block
        stages: list[nn.Module] = []
        size, dim = image // patch, embed
        for i, (depth, head) in enumerate(zip(DEPTHS, heads, strict=True)):
            if i:
                stages.append(PatchMerging(dim))
                size, dim = size // 2, dim * 2
            win = min(window, size)                  # a map no larger than a window is one window, never shifted
            shift = win // 2 if size > win else 0
            first = sum(DEPTHS[:i])
            stages += [SwinBlock(dim, head, size, win, shift if j % 2 else 0, drops[first + j])
                       for j in range(depth)]
        self.stages = nn.Sequential(*stages)
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_norm(self.patch(images).permute(0, 2, 3, 1))   # channels-last from here on
        return self.head(self.norm(self.stages(x)).mean(dim=(1, 2)))


def smoothed_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels, label_smoothing=SMOOTHING)


def workload(name: str, model: Swin, image: int, classes: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": model, "make_batch": make_batch, "loss": smoothed_loss, "unit": "images",
            "batch_start": batch_start}


def build() -> dict:
    """Swin-T at 224×224, windows of 7, 1000 classes: 28.3 M parameters."""
    return workload("swin-tiny", Swin(), IMAGE, CLASSES, BATCH_START)


def build_tiny() -> dict:
    """The same 12 blocks on 32×32 images, 2×2 patches, windows of 2, width 16, heads (1, 2, 4, 8), 10 classes."""
    return workload("swin-tiny-cpu", Swin(32, 2, 16, 2, (1, 2, 4, 8), 10), 32, 10, 2)
