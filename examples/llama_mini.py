"""llama-mini: a LLaMA-style decoder-only language model (d_model 768, 12 layers, sequence 1024) trained on next-token
prediction; a new model as a user brings one today (plain torch), written as Meta's LLaMA reference code is.

Model: a token embedding (vocabulary 32,000, LLaMA's tokenizer), 12 pre-norm layers of RMSNorm (written out:
x · rsqrt(mean(x²) + eps) · weight, computed in fp32 and cast back, as the reference code does), 12-head causal
`scaled_dot_product_attention` with rotary position embeddings applied to q and k (cos/sin buffers, rotate-half),
and a SwiGLU MLP (w2(silu(w1 x) · w3 x), hidden 2048: 8/3 × 768 rounded up to a multiple of 256); a final RMSNorm
and an untied output layer; no biases anywhere; cross-entropy on fp32 logits over every position.
134,105,856 parameters (536 MB in fp32; AdamW's state doubles that): 85.0 M in the 12 layers, 24.6 M in the token
embedding and 24.6 M in the output layer.

What sets its step: matmuls (6 × 109.5 M weights outside the embedding × 1024 ≈ 0.67 TFLOP a sequence for a training
step, 0.79 with attention's counted whole), so the GPU's matmul rate at a batch of a few sequences; beside them the
memory-bound ops LLaMA's layout adds over GPT-2's: RMSNorm's fp32 round trip (pow, mean, rsqrt, two casts), the rotary
embedding's slices, negation and concatenation on q and k, SwiGLU's silu and product. Memory caps the batch: the fp32
logits (1024 × 32,000 a sequence, 131 MB, and their gradient) beside 12 layers of activations.

    gpuplan collect --workload examples/llama_mini.py:build --profile standard

`build_tiny()` keeps the 12 layers with d_model 64, 4 heads, sequence 32 and a vocabulary of 512, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, D_MODEL, LAYERS, HEADS = 32_000, 1024, 768, 12, 12
MULTIPLE_OF, NORM_EPS, ROPE_THETA = 256, 1e-5, 10_000.0
BATCH_START = 2  # gpuplan's main batch on a GPU is 8 × this: 16 sequences (16,384 tokens)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight, in fp32 and cast back to x's dtype (LLaMA's model.py)."""

    def __init__(self, dim: int, eps: float = NORM_EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_tables(head_dim: int, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position × frequency, (seq, head_dim): each frequency twice, for rotate-half."""
    freqs = 1.0 / ROPE_THETA ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(seq).float(), freqs)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotates each pair of q's (or k's) channels by its position's angle; x is (batch, heads, seq, head_dim)."""
    return x * cos + rotate_half(x) * sin


def swiglu_hidden(d_model: int) -> int:
    """LLaMA's FFN width: 2/3 of 4·d, rounded up to a multiple of 256 (768 → 2048)."""
    hidden = int(2 * 4 * d_model / 3)
    return MULTIPLE_OF * ((hidden + MULTIPLE_OF - 1) // MULTIPLE_OF)


class Attention(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (w(x).view(b, t, self.heads, c // self.heads).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, c))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) · w3 x)."""

    def __init__(self, d_model: int):
        super().__init__()
        hidden = swiglu_hidden(d_model)
        self.w1, self.w3 = nn.Linear(d_model, hidden, bias=False), nn.Linear(d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    """h = x + attention(RMSNorm(x)), then h + SwiGLU(RMSNorm(h))."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(d_model), RMSNorm(d_model)
        self.attention, self.feed_forward = Attention(d_model, heads), FeedForward(d_model)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab: int = VOCAB, seq: int = SEQ, d_model: int = D_MODEL, layers: int = LAYERS,
                 heads: int = HEADS):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(Block(d_model, heads) for _ in range(layers))
        self.norm = RMSNorm(d_model)
        self.output = nn.Linear(d_model, vocab, bias=False)  # untied, as LLaMA's
        cos, sin = rope_tables(d_model // heads, seq)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        cos, sin = self.cos[:t], self.sin[:t]
        x = self.tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.output(self.norm(x))


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over every position, on fp32 logits (autocast leaves them in bf16/fp16 otherwise)."""
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def workload(name: str, vocab: int, seq: int, d_model: int, heads: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, seq + 1), device=device)
        return ids[:, :-1], ids[:, 1:]  # targets: the inputs shifted by one token

    return {"name": name, "model": Llama(vocab, seq, d_model, LAYERS, heads), "make_batch": make_batch,
            "loss": next_token_loss, "unit": "sequences", "tokens_per_sample": seq, "batch_start": batch_start}


def build() -> dict:
    """12 layers, d_model 768, 12 heads, sequence 1024, vocabulary 32,000, untied head: 134.1 M parameters."""
    return workload("llama-mini", VOCAB, SEQ, D_MODEL, HEADS, BATCH_START)


def build_tiny() -> dict:
    """The same 12 layers with d_model 64, 4 heads, sequence 32 and a vocabulary of 512: for CPU tests."""
    return workload("llama-mini-cpu", 512, 32, 64, 4, 1)
