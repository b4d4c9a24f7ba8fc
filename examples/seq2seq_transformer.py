"""seq2seq-transformer: an encoder-decoder translation Transformer (the "base" model of Vaswani et al. 2017) trained
with label-smoothed cross-entropy on sentence pairs padded to 128 tokens; a model of a family gpuplan had not seen
(an encoder-decoder, cross-attention, padding masks), written as a user brings one with `nn.Transformer` (plain torch).

Model: one token embedding over a joint 32,000-token BPE vocabulary shared by source, target and the output layer
(tied, as the paper's), scaled by √512, plus sinusoidal position encodings (a buffer), dropout 0.1;
`nn.Transformer(d_model=512, nhead=8, 6 encoder and 6 decoder layers, dim_feedforward=2048, batch_first=True)` in the
paper's post-norm layout with ReLU; the decoder's self-attention under a causal mask, and every attention told which
keys are padding (the source's for the encoder and the cross-attention, the target's for the decoder). The loss:
cross-entropy with label smoothing 0.1 on fp32 logits over every target position, the padding ignored.
60,524,544 parameters (242 MB in fp32): 44.1 M in nn.Transformer (6 × 3.2 M in the encoder, 6 × 4.2 M in the decoder,
whose layers add the cross-attention), 16.4 M in the tied embedding.

The batch: each pair's source and target of 97-128 tokens (<s>, words, </s>), padded to 128 (a bucket of long
sentences, 88 % of the positions real); the decoder reads the target but its last position and predicts it but its
first. `tokens_per_sample` is the 128 target positions a pair (padding included).

What sets its step: matmuls (16.1 GFLOP a pair forward, about 48 for a training step: 11.3 G in nn.Transformer's
projections and feed-forwards, 4.2 G in the 32,000-way output layer over 128 positions, 0.6 G in attention's
products), so the GPU's matmul rate; beside them the attention under a
mask (every attention carries one, so none runs on the flash kernel), the post-norm LayerNorms, and the fp32 logits
(128 × 32,000 a pair, 16 MB, and their gradient) that cap the batch by memory.

    gpuplan collect --workload examples/seq2seq_transformer.py:build --profile standard

`build_tiny()` keeps 2 + 2 layers at width 32, a vocabulary of 512 and sentences of 16 tokens, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, PADDED, SHORTEST = 32_000, 128, 97
D_MODEL, HEADS, LAYERS, FFN, DROPOUT, SMOOTHING = 512, 8, 6, 2048, 0.1, 0.1
PAD, BOS, EOS = 0, 1, 2
BATCH_START = 16  # gpuplan's main batch on a GPU is 8 × this: 128 pairs (16,384 target positions)

Batch = tuple[torch.Tensor, torch.Tensor]


def sinusoids(positions: int, width: int) -> torch.Tensor:
    """The paper's position encodings: sin on even features, cos on odd, wavelengths 2π … 10,000 · 2π."""
    position = torch.arange(positions, dtype=torch.float32).unsqueeze(1)
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10_000.0) / width))
    table = torch.zeros(positions, width)
    table[:, 0::2], table[:, 1::2] = torch.sin(position * rate), torch.cos(position * rate)
    return table


class Translator(nn.Module):
    """Shared embedding, nn.Transformer, output layer tied to the embedding; forward(src, tgt) -> logits."""

    def __init__(self, vocab: int = VOCAB, d_model: int = D_MODEL, heads: int = HEADS, layers: int = LAYERS,
                 ffn: int = FFN, positions: int = PADDED):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0.0, d_model ** -0.5)  # fairseq's: the tied logits start near zero
        nn.init.zeros_(self.embed.weight[PAD])
        self.register_buffer("positions", sinusoids(positions, d_model), persistent=False)
        self.drop = nn.Dropout(DROPOUT)
        self.transformer = nn.Transformer(d_model, heads, layers, layers, ffn, DROPOUT, batch_first=True)
        self.out = nn.Linear(d_model, vocab, bias=False)
        self.out.weight = self.embed.weight  # tied: source, target and output share one matrix
        self.scale = math.sqrt(d_model)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        return self.drop(self.embed(ids) * self.scale + self.positions[: ids.shape[1]])

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = torch.triu(torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool, device=tgt.device), 1)
        src_pad, tgt_pad = src == PAD, tgt == PAD
        hidden = self.transformer(self.embed_tokens(src), self.embed_tokens(tgt), tgt_mask=causal,
                                  src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                                  memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.out(hidden)


def smoothed_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with label smoothing 0.1 over the target positions, on fp32 logits, the padding ignored."""
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=PAD,
                           label_smoothing=SMOOTHING)


def sentences(batch: int, padded: int, shortest: int, vocab: int, device: torch.device, offset: int) -> torch.Tensor:
    """Token ids (batch, padded): <s>, words past the special ids, </s>, then padding; the lengths spread over
    shortest … padded in a fixed pattern (`offset` gives the targets another order than the sources)."""
    span = padded - shortest + 1
    lengths = torch.tensor([shortest + (5 * i + offset) % span for i in range(batch)], device=device)
    position = torch.arange(padded, device=device)
    words = torch.randint(3, vocab, (batch, padded), device=device)
    tokens = torch.where(position == 0, BOS, torch.where(position == lengths[:, None] - 1, EOS, words))
    return tokens.masked_fill(position >= lengths[:, None], PAD)


def workload(name: str, model: Translator, padded: int, shortest: int, vocab: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[Batch, torch.Tensor]:
        src = sentences(batch_size, padded, shortest, vocab, device, 0)
        tgt = sentences(batch_size, padded + 1, shortest + 1, vocab, device, 11)  # one more: shifted below
        return (src, tgt[:, :-1]), tgt[:, 1:]

    return {"name": name, "model": model, "make_batch": make_batch, "loss": smoothed_loss,
            "run": lambda m, inputs: m(*inputs), "unit": "pairs", "tokens_per_sample": padded,
            "batch_start": batch_start}


def build() -> dict:
    """Transformer base: 6 + 6 layers, d_model 512, 8 heads, a shared 32,000-token vocabulary: 60.5 M parameters."""
    return workload("seq2seq-transformer", Translator(), PADDED, SHORTEST, VOCAB, BATCH_START)


def build_tiny() -> dict:
    """The same modules and masks, 2 + 2 layers at width 32, 512 tokens, sentences of 13-16 tokens: CPU tests."""
    return workload("seq2seq-transformer-cpu", Translator(512, 32, 4, 2, 64, 16), 16, 13, 512, 2)
