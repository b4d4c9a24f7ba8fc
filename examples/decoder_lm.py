"""decoder-lm: a 16-layer decoder-only language model (d_model 1024, sequence 1024), trained on next-token prediction;
a new model as a user brings one (plain torch).

Model: token and learned position embeddings (vocabulary 32,000, the size of LLaMA's tokenizer), 16 pre-norm layers of
16-head causal `scaled_dot_product_attention` and a GELU MLP ×4, a final LayerNorm and the output layer tied to the
token embedding; cross-entropy on fp32 logits over every position. 235,358,208 parameters (0.94 GB in fp32; AdamW's
state doubles that): 201.5 M in the 16 layers, 32.8 M in the tied embedding, 1.0 M in the positions.

What sets its step: matmuls (about 6 × 235 M × 1024 ≈ 1.4 TFLOP a sequence for a training step, attention besides),
so at a batch of a few sequences the GPU's matmul rate; memory caps the batch (activations of 16 layers × 1024
tokens × 1024 wide per sequence).

    gpuplan collect --workload examples/decoder_lm.py:build --profile standard

`build_tiny()` keeps the 16 layers with d_model 64 and sequence 32, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, D_MODEL, LAYERS, HEADS = 32_000, 1024, 1024, 16, 16
BATCH_START = 1  # gpuplan's main batch on a GPU is 8 × this: 8 sequences


class Block(nn.Module):
    """x + attention(LN(x)), then x + MLP(LN(x)); causal self-attention."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class DecoderLM(nn.Module):
    def __init__(self, vocab: int = VOCAB, seq: int = SEQ, d_model: int = D_MODEL, layers: int = LAYERS,
                 heads: int = HEADS):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(seq, d_model)
        self.blocks = nn.Sequential(*(Block(d_model, heads) for _ in range(layers)))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied: the output layer is the token embedding

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.blocks(self.tokens(ids) + self.positions(positions))
        return self.head(self.ln(x))


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over every position, on fp32 logits (autocast leaves them in bf16/fp16 otherwise)."""
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def workload(name: str, vocab: int, seq: int, d_model: int, heads: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, seq + 1), device=device)
        return ids[:, :-1], ids[:, 1:]  # targets: the inputs shifted by one token

    return {"name": name, "model": DecoderLM(vocab, seq, d_model, LAYERS, heads), "make_batch": make_batch,
            "loss": next_token_loss, "unit": "sequences", "tokens_per_sample": seq, "batch_start": batch_start}


def build() -> dict:
    """16 layers, d_model 1024, 16 heads, sequence 1024, vocabulary 32,000: 235 M parameters."""
    return workload("decoder-lm", VOCAB, SEQ, D_MODEL, HEADS, BATCH_START)


def build_tiny() -> dict:
    """The same 16 layers with d_model 64, 4 heads, sequence 32 and a vocabulary of 512: for CPU tests."""
    return workload("decoder-lm-cpu", 512, 32, 64, 4, 1)
