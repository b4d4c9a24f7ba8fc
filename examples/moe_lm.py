"""moe-lm: a mixture-of-experts decoder-only language model (8 layers, d_model 768, 8 SwiGLU experts a layer, top-2
token routing) trained on next-token prediction at sequence 1024; a model of a family gpuplan had not seen (sparse
expert layers and the routing's gather, scatter and index ops), written as a user brings one (plain torch).

Model: a token embedding (vocabulary 32,000) tied to the output layer and learned positions; 8 pre-norm layers of
LayerNorm, 12-head causal `scaled_dot_product_attention` and, where a dense model has its MLP, a mixture of 8
experts (Mixtral's layout at a small size: each expert a bias-free SwiGLU w2(silu(w1 x) · w3 x) of hidden 1024, a
linear router over the experts). Each token goes to its router's two most probable experts, weighted by their
renormalised probabilities. The routing keeps every shape static, as GShard and Switch Transformer do (and as
torch.compile wants): each expert takes at most `capacity` = 1.25 × 2 × tokens / 8 tokens a step, its slots filled
in token order, all first choices ahead of second ones, and a token past an expert's capacity is dropped from it
(its other expert and the residual still carry it). Dispatch: a cumulative sum of the one-hot choices gives each
choice its slot, a scatter builds every slot's token index, a gather fills the (8, capacity, 768) buffer;
combine: a gather of the experts' outputs by slot, weighted and summed. The loss: cross-entropy on fp32 logits over
every position plus 0.01 × Switch Transformer's load-balancing loss (8 · Σ fraction routed × mean probability,
summed over the layers). 195,331,584 parameters (781 MB in fp32): 151.0 M in the 64 experts (2.36 M each), 18.9 M in
attention, 24.6 M in the tied embedding, 0.8 M in positions; about 81 M act on each token.

What sets its step: matmuls, so the GPU's matmul rate: a token's forward is 11.8 MFLOP in each layer's experts (its
two experts, × 1.25 for the capacity's empty slots, which are computed too), 4.7 in its attention's projections, 3.1
in attention's products and 49 in the output layer, about 0.62 GFLOP a token for a training step (10 TFLOP at the
main batch), in smaller GEMMs than a dense model's (each expert's 5,120 slots at the main batch, eight in a row).
Beside them the routing's memory-bound ops (the router's fp32 softmax and top-2, a one-hot and cumsum over 32,768
choices, a scatter and two gathers of 768-wide rows and their scatter-add gradients), eight experts' launches a
layer, and the fp32 logits (1024 × 32,000 a sequence, 131 MB, and their gradient) that cap the batch by memory.

    gpuplan collect --workload examples/moe_lm.py:build --profile standard

`build_tiny()` keeps the 8 layers and 8 experts at width 64, hidden 128, sequence 32 and 512 tokens, for CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, D_MODEL, LAYERS, HEADS = 32_000, 1024, 768, 8, 12
EXPERTS, TOP_K, EXPERT_HIDDEN, CAPACITY_FACTOR, BALANCE_WEIGHT = 8, 2, 1024, 1.25, 0.01
BATCH_START = 2  # gpuplan's main batch on a GPU is 8 × this: 16 sequences (16,384 tokens, 32,768 expert choices)


class Expert(nn.Module):
    """A bias-free SwiGLU feed-forward network: w2(silu(w1 x) · w3 x)."""

    def __init__(self, d_model: int, hidden: int):
        super().__init__()
        self.w1, self.w3 = nn.Linear(d_model, hidden, bias=False), nn.Linear(d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def capacity(tokens: int, experts: int) -> int:
    """Slots per expert: the capacity factor over an even share of the tokens' top-k choices."""
    return math.ceil(CAPACITY_FACTOR * TOP_K * tokens / experts)


class MoE(nn.Module):
    """Top-2 routing over `experts` SwiGLU experts with a fixed capacity; forward(x) -> (y, load-balancing loss)."""

    def __init__(self, d_model: int, hidden: int, experts: int = EXPERTS):
        super().__init__()
        self.router = nn.Linear(d_model, experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, hidden) for _ in range(experts))

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each of the (top_k · tokens) choices' expert, slot in it (-1: dropped), weight; and the balance loss."""
        probs = self.router(x).float().softmax(dim=-1)              # the router in fp32, as Switch's
        weight, expert = probs.topk(TOP_K, dim=-1)                  # (tokens, k)
        weight = weight / weight.sum(dim=-1, keepdim=True)
        experts = len(self.experts)
        choices = F.one_hot(expert.t().reshape(-1), experts)        # (k · tokens, experts): first choices first
        slot = (choices.cumsum(dim=0) * choices).sum(dim=-1) - 1    # its place in its expert's queue
        slot = slot.masked_fill(slot >= capacity(x.shape[0], experts), -1)
        balance = experts * (choices.float().mean(dim=0) * probs.mean(dim=0)).sum()  # 1 when balanced
        return expert.t().reshape(-1), slot, weight.t().reshape(-1), balance

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        shape, x = x.shape, x.reshape(-1, x.shape[-1])
        tokens, experts = x.shape[0], len(self.experts)
        cap = capacity(tokens, experts)
        expert, slot, weight, balance = self.route(x)
        kept = slot >= 0
        flat = torch.where(kept, expert * cap + slot, experts * cap)   # the dropped go to one spare slot
        token = torch.arange(tokens, device=x.device).repeat(TOP_K)
        # which token fills each slot (`tokens`: none, a zero row)
        filler = torch.full((experts * cap + 1,), tokens, device=x.device).scatter(0, flat, token)[:-1]
        padded = torch.cat([x, x.new_zeros(1, x.shape[1])])
        buffer = padded[filler].view(experts, cap, -1)
        out = torch.stack([e(buffer[i]) for i, e in enumerate(self.experts)]).view(experts * cap, -1)
        out = torch.cat([out, out.new_zeros(1, out.shape[1])])[flat]          # each choice's output, 0 if dropped
        y = (out * (weight * kept).unsqueeze(-1).to(out.dtype)).view(TOP_K, tokens, -1).sum(dim=0)
        return y.view(shape), balance


class Attention(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, d_model: int, heads: int, hidden: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention, self.moe = Attention(d_model, heads), MoE(d_model, hidden)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x + self.attention(self.norm1(x))
        y, balance = self.moe(self.norm2(x))
        return x + y, balance


class MoELM(nn.Module):
    """forward(ids) -> (logits, the layers' summed load-balancing loss)."""

    def __init__(self, vocab: int = VOCAB, seq: int = SEQ, d_model: int = D_MODEL, layers: int = LAYERS,
                 heads: int = HEADS, hidden: int = EXPERT_HIDDEN):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, d_model), nn.Embedding(seq, d_model)
        self.layers = nn.ModuleList(Block(d_model, heads, hidden) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        balance = x.new_zeros((), dtype=torch.float32)
        for layer in self.layers:
            x, layer_balance = layer(x)
            balance = balance + layer_balance
        return self.head(self.norm(x)), balance


def moe_loss(output: tuple[torch.Tensor, torch.Tensor], targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over every position on fp32 logits, plus the weighted load-balancing loss."""
    logits, balance = output
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten()) + BALANCE_WEIGHT * balance


def workload(name: str, model: MoELM, vocab: int, seq: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, seq + 1), device=device)
        return ids[:, :-1], ids[:, 1:]  # targets: the inputs shifted by one token

    return {"name": name, "model": model, "make_batch": make_batch, "loss": moe_loss, "unit": "sequences",
            "tokens_per_sample": seq, "batch_start": batch_start}


def build() -> dict:
    """8 layers, d_model 768, 8 SwiGLU experts of hidden 1024 a layer, top-2, sequence 1024: 195.3 M parameters."""
    return workload("moe-lm", MoELM(), VOCAB, SEQ, BATCH_START)


def build_tiny() -> dict:
    """The same 8 layers and 8 experts at width 64, 4 heads, hidden 128, sequence 32, 512 tokens: CPU tests."""
    return workload("moe-lm-cpu", MoELM(512, 32, 64, LAYERS, 4, 128), 512, 32, 1)
