"""bert-base-squad: BERT-base fine-tuned for extractive question answering (SQuAD v1.1), sequence 384;
the second model family of the cross-architecture check.

Why: planner/specs/published_throughput.json holds Lambda's per-GPU tables of this job
(lambdal/deeplearning-benchmark: NVIDIA DeepLearningExamples' BERT-base `run_squad.py`, max_seq_length
384, training sequences/s, amp and fp32, and again on NGC 24.03). With this workload measured on one of
our GPUs, planner/check/crossarch.py predicts every published GPU of those tables from it, as it does
for ResNet-50: a transformer beside a convolutional network.

Model, in plain PyTorch (no `transformers`), as BERT-base uncased (bert_config.json) with the span head of
BertForQuestionAnswering: token, position (512) and token-type (2) embeddings of width 768 summed, then
LayerNorm and dropout; 12 post-norm encoder layers, each LN(x + dropout(attention(x))) then
LN(x + dropout(FFN(x))), 12 heads of width 64 through `F.scaled_dot_product_attention` (attention dropout
0.1, the padding mask applied as a boolean key mask), FFN 768 → 3072 → 768 with exact (erf) GELU,
LayerNorm eps 1e-12, hidden dropout 0.1; no pooler (the span head does not use it); a linear 768 → 2
head gives each position a start and an end logit. Loss: the mean of the start and end positions'
cross-entropies over the 384 positions. Inputs: random token ids (batch, 384) from the 30,522-word
vocabulary, token types 0 for a 64-token question and 1 for the context, an all-ones attention mask
(every position is a real token, as in a packed SQuAD window); targets: random start and end positions.
108.9 M parameters (108,893,186; 0.44 GB in fp32), 23.8 M of them embeddings (BERT-base's quoted 110 M
counts the 0.6 M pooler).

Regime: tensor-core arithmetic once the batch fills the GPU. Counted on a CPU (FlopCounterMode on the
`meta` device, a training step):

- FLOPs: 0.212 TFLOP per sequence for a training step (6 × 85.1 M encoder parameters × 384 tokens =
  0.196 for the matrices, 7.5 % attention), 33.9 TFLOP at gpuplan's main batch 160: 42 ms at the
  H100's ~800 TFLOP/s bf16 peak, 55–85 ms at the 50–75 % that 768-wide matrices reach.
- Bytes: AdamW streams 3.0 GB a step (28 B per fp32 parameter), ~1 ms at ~3 TB/s. Autograd saves
  at most 0.51 GB per sequence (fp32 with math attention, counted on `meta`; bf16 autocast and the
  fused attention kernels save much less), so the batch, not the optimizer, fills the memory: the OOM
  boundary should be a few hundred sequences on 80 GB (Lambda ran batch 320 at fp16 and 172 at fp32,
  with math attention).
- Host: 2,236 aten ops a step (1,248 kernels): 20–45 ms of host time, as long as the GPU's work at a
  batch of 40–80; from batch 160 up the host hides behind the GPU.

Batches: the sweep starts at 20 and doubles (20, 40, 80, 160, 320, 640…), so gpuplan's main batch (8 ×
the start), where every precision and torch.compile are tried, is 160: close to Lambda's fp32 batch of
172, which must fit at fp32 as well; the bf16 sweep passes through Lambda's amp batch of 320.

`build()` is the measured size; `build_tiny()` keeps the 12 layers and every module (the same ops per
step) with width 32, 2 heads, a 1,000-word vocabulary and 32 positions, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, POSITIONS, TOKEN_TYPES = 30522, 512, 2
HIDDEN, LAYERS, HEADS, FFN = 768, 12, 12, 3072
SEQ = 384                   # max_seq_length of run_squad.py
DROPOUT, LN_EPS = 0.1, 1e-12
BATCH_START = 20            # gpuplan's main batch on a GPU is 8 × this: 160
LARGE_HIDDEN, LARGE_LAYERS, LARGE_HEADS = 1024, 24, 16   # BERT-large (build_large), FFN 4 × hidden
LARGE_BATCH_START = 8       # main batch 64

Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # token ids, token types, attention mask


class Layer(nn.Module):
    """Post-norm BERT layer: LN(x + attention(x)), then LN(x + FFN(x))."""

    def __init__(self, hidden: int, heads: int, ffn: int, unfused: bool = False):
        super().__init__()
        self.heads, self.unfused = heads, unfused
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=LN_EPS)
        self.ffn = nn.Sequential(nn.Linear(hidden, ffn), nn.GELU(), nn.Linear(ffn, hidden))
        self.ln2 = nn.LayerNorm(hidden, eps=LN_EPS)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = self.written_out(q, k, v, keep) if self.unfused else \
            F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=DROPOUT if self.training else 0.0)
        x = self.ln1(x + self.dropout(self.proj(y.transpose(1, 2).reshape(b, t, c))))
        return self.ln2(x + self.dropout(self.ffn(x)))


    def written_out(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """Attention as NVIDIA DeepLearningExamples' BERT (modeling.py BertSelfAttention) computes it: q·kᵀ scaled,
        plus an additive mask of −10,000 at padded keys, softmax, dropout, ·v: two batched products and the
        (B, heads, T, T) scores in memory, where scaled_dot_product_attention runs a fused kernel."""
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + (~keep).to(q.dtype) * -10000.0
        return F.dropout(F.softmax(scores, dim=-1), DROPOUT, self.training) @ v


class BertForSquad(nn.Module):
    def __init__(self, vocab: int = VOCAB, positions: int = POSITIONS, hidden: int = HIDDEN, layers: int = LAYERS,
                 heads: int = HEADS, ffn: int = FFN, unfused: bool = False):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(positions, hidden)
        self.token_types = nn.Embedding(TOKEN_TYPES, hidden)
        self.ln = nn.LayerNorm(hidden, eps=LN_EPS)
        self.dropout = nn.Dropout(DROPOUT)
        self.layers = nn.ModuleList(Layer(hidden, heads, ffn, unfused) for _ in range(layers))
        self.span = nn.Linear(hidden, 2)  # a start and an end logit per position
        for module in self.modules():     # BERT's initialisation: N(0, 0.02) weights, zero biases
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(self, inputs: Inputs) -> torch.Tensor:
        ids, types, mask = inputs
        where = torch.arange(ids.shape[1], device=ids.device)
        x = self.dropout(self.ln(self.words(ids) + self.positions(where) + self.token_types(types)))
        keep = mask[:, None, None, :].bool()  # (B, 1, 1, T): every query sees the unpadded keys
        for layer in self.layers:
            x = layer(x, keep)
        return self.span(x)                   # (B, T, 2)


def span_loss(logits: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The mean of the start and end cross-entropies over the sequence's positions (run_squad.py's loss)."""
    start, end = logits.float().unbind(-1)
    return (F.cross_entropy(start, positions[:, 0]) + F.cross_entropy(end, positions[:, 1])) / 2


def bert(vocab: int, hidden: int, heads: int, seq: int, batch_start: int, name: str, layers: int = LAYERS,
         unfused: bool = False) -> dict:
    question = seq // 6  # the question's tokens (type 0): 64 of 384

    def make_batch(batch_size: int, device: torch.device) -> tuple[Inputs, torch.Tensor]:
        ids = torch.randint(1, vocab, (batch_size, seq), device=device)
        types = (torch.arange(seq, device=device) >= question).long().expand(batch_size, seq).contiguous()
        mask = torch.ones(batch_size, seq, dtype=torch.long, device=device)
        start = torch.randint(question, seq, (batch_size,), device=device)  # the answer lies in the context
        end = (start + torch.randint(0, 16, (batch_size,), device=device)).clamp(max=seq - 1)
        return (ids, types, mask), torch.stack([start, end], dim=1)

    return {"name": name, "model": BertForSquad(vocab, POSITIONS, hidden, layers, heads, 4 * hidden, unfused),
            "make_batch": make_batch, "loss": span_loss, "unit": "sequences", "tokens_per_sample": seq,
            "batch_start": batch_start}


def build() -> dict:
    """BERT-base with the span head at sequence 384: the size measured on GPUs."""
    return bert(VOCAB, HIDDEN, HEADS, SEQ, BATCH_START, "bert-base-squad")


def build_large() -> dict:
    """BERT-large (24 layers, width 1024, 16 heads, FFN 4096) with the span head at sequence 384: Lambda's second
    SQuAD table (bert_large_squad). 334.1 M parameters without the pooler; the sweep starts at 8, so the main
    batch is 64, Lambda's fp32 batch on 80 GB (its amp batch was 112)."""
    return bert(VOCAB, LARGE_HIDDEN, LARGE_HEADS, SEQ, LARGE_BATCH_START, "bert-large-squad", LARGE_LAYERS)


def build_large_dle() -> dict:
    """build_large with attention written out as NVIDIA DeepLearningExamples' BERT computes it (Layer.written_out):
    the configuration its SQuAD rows ran, timed by benchmarks/dle_points.py for those rows
    (planner/check/dle_points.py). The same parameters and name as build_large."""
    return bert(VOCAB, LARGE_HIDDEN, LARGE_HEADS, SEQ, LARGE_BATCH_START, "bert-large-squad", LARGE_LAYERS,
                unfused=True)


def build_tiny_dle() -> dict:
    """build_tiny with attention written out (build_large_dle's path): for CPU tests."""
    return bert(1000, 32, 2, 32, 4, "bert-base-squad-cpu", unfused=True)


def build_tiny() -> dict:
    """The same 12 layers and modules with width 32, 2 heads, 1,000 words and 32 positions: for CPU tests."""
    return bert(1000, 32, 2, 32, 4, "bert-base-squad-cpu")
