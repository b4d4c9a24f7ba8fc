"""wide-transformer: a stack of wide transformer encoder layers; the math-bound example.

Model: sequences of 512 vectors of width 2048 (already embedded: think of patches of a signal
or a frozen encoder's features), 6 pre-norm layers of 16-head `scaled_dot_product_attention`
(head width 128) and a GELU MLP ×4, a final LayerNorm and a linear regression head; the loss is
the mean squared error against target vectors. 307 M parameters (1.2 GB in fp32).

Regime: tensor-core arithmetic. Numbers from `benchmarks/example_regimes.py` (FlopCounterMode on
the `meta` device; the aten ops of one bf16-autocast training step, counted on a CPU):

- FLOPs: 0.98 TFLOP per sequence for a training step (6 × 307 M parameters × 512 tokens for the
  matrices, ~4 % attention), 31.3 TFLOP at gpuplan's main batch 32: 39 ms at the H100's ~800
  TFLOP/s bf16 peak, ~50 ms at the ~75 % that 2048 × 8192 matrices reach.
- Bytes: AdamW streams 8.6 GB a step (28 B per fp32 parameter); with the saved activations the
  byte model gives at most 50 GB at batch 32 (an fp32, math-attention upper bound; bf16 with
  flash attention saves about half): ≤ 17 ms at ~3 TB/s. Arithmetic intensity ≥ 630 FLOP/B,
  above the H100's ridge (~270 FLOP/B for bf16).
- Host: 730 aten ops a step (343 kernels), 3–15 ms of host time, hidden behind the GPU.

So an H100 step should take roughly 55–75 ms at batch 32, most of it in matmuls, and grow in
proportion to the batch above ~8; at batch 4 (the sweep's start) the fixed optimizer pass (~3 ms) is a visible share of
a ~10 ms step. An H200 has the same bf16 peak: the planner should predict nearly the same
time there (slightly less at small batch, where the H200's bandwidth shortens the optimizer).

`build()` is the measured size; `build_tiny()` keeps the 6 layers (the same ops per step) with
width 64, 4 heads and 32 positions, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SEQ, D_MODEL, LAYERS, HEADS, MLP_RATIO = 512, 2048, 6, 16, 4
BATCH_START = 4   # gpuplan's main batch on a GPU is 8 × this: 32


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
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class WideEncoder(nn.Module):
    def __init__(self, seq: int = SEQ, d_model: int = D_MODEL, layers: int = LAYERS, heads: int = HEADS,
                 mlp_ratio: int = MLP_RATIO):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, seq, d_model) * 0.02)
        self.blocks = nn.Sequential(*(Block(d_model, heads, mlp_ratio) for _ in range(layers)))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln(self.blocks(x + self.pos)))


def regression_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(outputs.float(), targets)


def wide(seq: int, d_model: int, heads: int, batch_start: int, name: str) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = torch.randn(batch_size, seq, d_model, device=device)
        return inputs, torch.randn(batch_size, seq, d_model, device=device)

    return {"name": name, "model": WideEncoder(seq, d_model, LAYERS, heads, MLP_RATIO), "make_batch": make_batch,
            "loss": regression_loss, "unit": "sequences", "tokens_per_sample": seq, "batch_start": batch_start}


def build() -> dict:
    """6 layers of width 2048 on 512 positions: the size measured on GPUs."""
    return wide(SEQ, D_MODEL, HEADS, BATCH_START, "wide-transformer")


def build_tiny() -> dict:
    """The same 6 layers with width 64, 4 heads and 32 positions: for CPU tests."""
    return wide(32, 64, 4, 2, "wide-transformer-cpu")
