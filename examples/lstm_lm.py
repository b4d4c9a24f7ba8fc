"""lstm-lm: a 2-layer LSTM language model (hidden 1024, vocabulary 32,000, sequence 128) trained on next-token
prediction; a new model as a user brings one (plain torch), laid out as PyTorch's word_language_model example is.

Model: a token embedding (vocabulary 32,000, the size of LLaMA's tokenizer, 1024 wide), dropout 0.2, `nn.LSTM` of two
layers of 1024 (dropout 0.2 between them; cuDNN's fused kernels on a GPU), dropout 0.2 and an output layer tied to the
embedding (Press & Wolf 2017, the example's --tied) with its own bias; cross-entropy on fp32 logits over every
position. 49,593,600 parameters (198 MB in fp32): 32.8 M in the tied embedding, 16.8 M in the LSTMs, 32,000 in the
output bias.

What sets its step: the LSTMs' 128 time steps run one after another (each a small matmul of the batch by the
1024 × 4096 recurrent weights, and its gates), so at small batches the recurrence's latency, not a roof; the output
layer (1024 × 32,000 per token, two thirds of the 38 GFLOP a sequence of a training step) and its logits
(128 × 32,000 a sequence, in fp32 for the loss) at large ones, which also cap the batch by memory.

    gpuplan collect --workload examples/lstm_lm.py:build --profile standard

`build_tiny()` keeps the two tied LSTM layers with width 64, vocabulary 512 and sequence 32, for the CPU tests.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, HIDDEN, LAYERS, DROPOUT = 32_000, 128, 1024, 2, 0.2
BATCH_START = 16  # gpuplan's main batch on a GPU is 8 × this: 128 sequences (16,384 tokens)


class LSTMLanguageModel(nn.Module):
    """Embedding, dropout, LSTM, dropout, output layer tied to the embedding."""

    def __init__(self, vocab: int = VOCAB, hidden: int = HIDDEN, layers: int = LAYERS, dropout: float = DROPOUT):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, layers, dropout=dropout, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, vocab)
        self.head.weight = self.tokens.weight  # tied: the output layer is the token embedding

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x, _ = self.lstm(self.drop(self.tokens(ids)))  # a fresh zero state for each batch
        return self.head(self.drop(x))


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over every position, on fp32 logits (autocast leaves them in bf16/fp16 otherwise)."""
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def workload(name: str, vocab: int, seq: int, hidden: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, seq + 1), device=device)
        return ids[:, :-1], ids[:, 1:]  # targets: the inputs shifted by one token

    return {"name": name, "model": LSTMLanguageModel(vocab, hidden, LAYERS, DROPOUT), "make_batch": make_batch,
            "loss": next_token_loss, "unit": "sequences", "tokens_per_sample": seq, "batch_start": batch_start}


def build() -> dict:
    """Two LSTM layers of 1024, sequence 128, vocabulary 32,000, tied output layer: 49.6 M parameters."""
    return workload("lstm-lm", VOCAB, SEQ, HIDDEN, BATCH_START)


def build_tiny() -> dict:
    """The same two tied layers with width 64, vocabulary 512 and sequence 32: for CPU tests."""
    return workload("lstm-lm-cpu", 512, 32, 64, 2)
