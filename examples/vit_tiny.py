"""vit-tiny: a small Vision Transformer (ViT-Ti/16) trained at small batch; the host-bound example.

Model: 224×224×3 images cut into 16×16 patches (196 tokens + a class token), d_model 192, 12 pre-norm
layers of 3-head `scaled_dot_product_attention` and a GELU MLP ×4, a 1000-class linear head on the
class token, cross-entropy. 5.7 M parameters (22.8 MB in fp32).

Regime: the host, not the GPU. Numbers from `benchmarks/example_regimes.py` (FlopCounterMode on
the `meta` device; the aten ops of one bf16-autocast training step, counted on a CPU):

- FLOPs: 7.46 GFLOP per image for a training step, 0.48 TFLOP at gpuplan's main batch 64: 0.6 ms
  at the H100's ~800 TFLOP/s bf16 peak, 1.5–3 ms at the 20–40 % that matrices 192 wide reach.
  At batch 8 (the sweep's start), 0.06 TFLOP.
- Bytes: AdamW streams 0.16 GB (28 B per fp32 parameter); with the saved activations the byte
  model gives at most 5.4 GB at batch 64 (an fp32, math-attention upper bound): under 2 ms at
  ~3 TB/s. Arithmetic intensity ~90 FLOP/B: no roof is near.
- Host: 1,443 aten ops a step, 675 of them kernels (not views or allocations). At ~9 µs launch
  latency a kernel that is ≥ 6 ms; eager PyTorch spends some 10–20 µs of host time per aten op
  on a server CPU (Python modules, autograd, autocast casts, the dispatcher; 10–100 µs on the
  shared 2-core test machine, with its load), so 15–30 ms a step: 5–10× the GPU's work at batch 64.

So on an H100 the step takes about the same time at every batch from 8 to ~64–128, and images/s
grow in proportion to the batch until the GPU's work catches up with the host. The planner
should see a step set by launch latency and host speed (a faster CPU helps, a faster GPU does
not; CUDA graphs or torch.compile would), not by FLOPs or bandwidth.

`build()` is the measured size; `build_tiny()` keeps the 12 layers (the same ops per step) with
small images and widths, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, PATCH, CHANNELS = 224, 16, 3
D_MODEL, LAYERS, HEADS, MLP_RATIO = 192, 12, 3, 4
CLASSES = 1000
BATCH_START = 8   # gpuplan's main batch on a GPU is 8 × this: 64


class Block(nn.Module):
    """Pre-norm encoder layer: x + attention(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, d_model: int, heads: int, mlp_ratio: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(),
                                 nn.Linear(mlp_ratio * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)  # every patch sees every patch: no mask
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class VisionTransformer(nn.Module):
    def __init__(self, image: int = IMAGE, patch: int = PATCH, d_model: int = D_MODEL, layers: int = LAYERS,
                 heads: int = HEADS, mlp_ratio: int = MLP_RATIO, classes: int = CLASSES):
        super().__init__()
        tokens = (image // patch) ** 2 + 1
        self.patch_embed = nn.Conv2d(CHANNELS, d_model, kernel_size=patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos = nn.Parameter(torch.randn(1, tokens, d_model) * 0.02)
        self.blocks = nn.Sequential(*(Block(d_model, heads, mlp_ratio) for _ in range(layers)))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images).flatten(2).transpose(1, 2)          # (B, patches, d)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.ln(self.blocks(x))[:, 0])                  # classify the class token


def vit(image: int, patch: int, d_model: int, classes: int, batch_start: int, name: str, heads: int = HEADS) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, CHANNELS, image, image, device=device)
        return images, torch.randint(0, classes, (batch_size,), device=device)

    return {"name": name, "model": VisionTransformer(image, patch, d_model, LAYERS, heads, MLP_RATIO, classes),
            "make_batch": make_batch, "loss": F.cross_entropy, "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """ViT-Ti/16 at 224×224, the size measured on GPUs."""
    return vit(IMAGE, PATCH, D_MODEL, CLASSES, BATCH_START, "vit-tiny")


def build_tiny() -> dict:
    """The same 12 layers and 3 heads on 32×32 images, patch 8, d_model 48, 10 classes: for CPU tests."""
    return vit(32, 8, 48, 10, 4, "vit-tiny-cpu")


def build_b16() -> dict:
    """ViT-B/16 at 224×224 (d_model 768, 12 heads, the same 12 layers; 86 M parameters), started at batch 1
    so that its main batch is 8: the workload that shows a bound judged at the recommended batch (a few
    hundred images, GPU-bound) rather than at the main batch (host-bound)."""
    return vit(IMAGE, PATCH, 768, CLASSES, 1, "vit-b16", heads=12)
