"""ncf: NVIDIA DeepLearningExamples' NCF (NeuMF) training step on MovieLens-20M's sizes, as Lambda timed it; a
recommender (embedding gathers feeding a small MLP, million-sample batches) of a family gpuplan had not seen,
written in plain PyTorch for the held-out check across architectures (issues 39 and 41).

Why: Lambda's per-GPU PyTorch tables (lambdal/deeplearning-benchmark @ aa5addb6a53675a649a80036dad548f1c27cbcc4,
column `ncf` of pytorch/pytorch-train-throughput-fp32.csv, batches in pytorch-train-bs-fp32.csv) time this job on
twelve GPUs from a Quadro RTX 8000 and a V100 to an H100. No reference workload is a recommender of this shape; the
model and its bands never saw it.

What Lambda ran: pytorch/scripts/config_v1/config_pytorch_80GB.sh, `PyTorch_ncf_FP32_PARAMS`: DLE's
PyTorch/Recommendation/NCF/ncf.py with `--data /data/ncf/cache/ml-20m --epochs 2 --batch_size 8000000` (the 80 GB
cards; 1,280,000 on the V100 16GB, 2,516,582 on the 24 GB cards, 4,000,000 on the A100 40GB, 5,000,000 on the 48 GB
ones), no --amp. The H100 SXM5 log (pytorch/results/H100_80GB_SXM5_v1/PyTorch_ncf_FP32/14-02-2023_05-05-43.txt)
prints `factors : 64  layers : [256, 256, 128, 64]  negative_samples : 4 ... dropout : 0.5 ... amp : False`, the
NeuMF module (Embedding(138493, 64), Embedding(26744, 64), Embedding(138493, 128), Embedding(26744, 128), Linear
256 -> 256, 256 -> 128, 128 -> 64, final Linear 128 -> 1) and `31832577 parameters`; the table's figure is
`best_train_throughput`, the faster of the two epochs (the second).

Model (DLE's neumf.py, in plain torch): a user id and an item id a sample; GMF branch: the 64-wide user and item
embeddings multiplied; MLP branch: the 128-wide user and item embeddings concatenated (256) through Linear + ReLU +
dropout 0.5 three times (256 -> 256 -> 128 -> 64); the GMF product and the MLP output concatenated (128) into one
logit. 31,832,577 parameters (127 MB in fp32): 31,725,504 in the four tables, 107,073 in the MLP and the final layer.
Initialisation as DLE: embeddings N(0, 0.01), MLP Glorot-uniform, the final layer LeCun-uniform, biases 0. The
loss: BCEWithLogits per sample, its mean in fp32 (DLE: `torch.mean(loss.float().view(-1), 0)`).

Inputs, made on the device (no data loader): DLE's epoch is MovieLens-20M's 19,861,770 training ratings (the users'
last rating held out) each with 4 negatives, 99,308,850 samples, shuffled on the GPU and split into batches. Here a
batch draws user ids uniformly from 138,493 and item ids uniformly from 26,744, a label 1 for a fifth of the samples
(the positives' share) and 0 for the rest.

What sets its step: bytes, not FLOPs. Forward: 4 gathers of 64-128 fp32 values a sample (1.5 kB), the MLP's 0.2
MFLOP, dropout masks; backward: each table's gradient is a dense (rows × width) tensor the embedding backward
builds by sorting the ids and summing runs (`embedding_dense_backward`), the MLP's products, and the optimizer
over the 31.8 M parameters (AdamW here, apex FusedAdam in DLE: a few hundred MB a step either way). 0.64 MFLOP a
sample for a training step, 5.1 TFLOP at 8 M: a few ms of an H100's TF32 tensor cores against ~100 ms of memory
traffic; Lambda's H100 SXM5 row, 49.1 M samples/s, is ~0.16 s a step of 8 M.

What differs from Lambda's run, knowingly:
- the epoch's data preparation is not in the step: DLE times the whole epoch (`train_time` around
  `get_epoch_data()`: negatives drawn with `random_`, a `randperm` of 99.3 M, three gathers of 99.3 M, the split),
  and counts all 99,308,850 samples while it trains only the full batches (the last, partial one is dropped: 12
  steps of 8 M = 96 M at 8 M, 77 steps of 1.28 M on the V100). A published rate is thus (99,308,850 / trained
  samples) × the trained rate, 3.4 % above it at 8 M, 0.8 % at 1.28 M, less the preparation's share;
- uniformly random ids where MovieLens' are skewed to popular items (the sorted embedding backward costs the same
  per id either way; the gathers hit the cache more often in DLE);
- DLE's loss is BCEWithLogitsLoss run through torch.jit.trace; its optimizer apex FusedAdam (betas 0.25 / 0.5), ours
  gpuplan's AdamW; DLE calls no `.item()` in the loop;
- Lambda's fp32 ran on NGC 22.10 (PyTorch 1.13), whose container turns TF32 on for cuBLAS on Ampere and later: it
  compares with gpuplan's `tf32` there and plain fp32 on the V100 and the Quadro RTX 8000.
Lambda's fp16 column (`--amp` on eight of the twelve GPUs, not on the A100 80GB and H100 rows: their logs print `amp
: False` at batch 10,000,000) is not a configuration of one stack and is not compared.

Sources: NVIDIA/DeepLearningExamples PyTorch/Recommendation/NCF/neumf.py, ncf.py and dataloading.py as stored
(read, not copied), and the lambdal/deeplearning-benchmark files named above.

Batches: the sweep starts at 1,000,000 and doubles, so gpuplan's main batch (8 × the start), where every precision
is tried, is 8,000,000: Lambda's fp32 batch on the 80 GB cards.

    gpuplan collect --workload examples/ncf.py:build --profile standard

`build_tiny()` keeps both branches, the dropout and the loss with 1,000 users, 500 items and factors 8 (MLP 32 -> 32
-> 16 -> 8), batches from 64, for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

USERS, ITEMS = 138_493, 26_744          # MovieLens-20M (Lambda's log: Embedding(138493, ·), Embedding(26744, ·))
FACTORS, LAYERS, DROPOUT = 64, (256, 256, 128, 64), 0.5
POSITIVE_SHARE = 1 / 5                  # one rating and 4 negatives
BATCH_START = 1_000_000                 # gpuplan's main batch on a GPU is 8 × this: 8,000,000 (Lambda's fp32, 80 GB)
TINY = {"users": 1000, "items": 500, "factors": 8, "layers": (32, 32, 16, 8)}
TINY_BATCH_START = 64


class NeuMF(nn.Module):
    """forward((users, items)) -> (batch, 1) logits: GMF and MLP branches over their own embeddings (DLE's neumf.py)."""

    def __init__(self, users: int = USERS, items: int = ITEMS, factors: int = FACTORS,
                 layers: tuple[int, ...] = LAYERS, dropout: float = DROPOUT):
        super().__init__()
        self.mf_user_embed, self.mf_item_embed = nn.Embedding(users, factors), nn.Embedding(items, factors)
        self.mlp_user_embed = nn.Embedding(users, layers[0] // 2)
        self.mlp_item_embed = nn.Embedding(items, layers[0] // 2)
        self.mlp = nn.ModuleList(nn.Linear(a, b) for a, b in zip(layers, layers[1:], strict=False))
        self.final = nn.Linear(layers[-1] + factors, 1)
        self.dropout = dropout
        for embedding in (self.mf_user_embed, self.mf_item_embed, self.mlp_user_embed, self.mlp_item_embed):
            nn.init.normal_(embedding.weight, 0.0, 0.01)
        for layer in self.mlp:       # Glorot uniform
            limit = math.sqrt(6 / (layer.in_features + layer.out_features))
            nn.init.uniform_(layer.weight, -limit, limit)
            nn.init.zeros_(layer.bias)
        limit = math.sqrt(3 / self.final.in_features)   # LeCun uniform
        nn.init.uniform_(self.final.weight, -limit, limit)
        nn.init.zeros_(self.final.bias)

    def forward(self, ids: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        users, items = ids
        mf = self.mf_user_embed(users) * self.mf_item_embed(items)
        x = torch.cat((self.mlp_user_embed(users), self.mlp_item_embed(items)), dim=1)
        for layer in self.mlp:
            x = F.dropout(F.relu(layer(x)), self.dropout, self.training)
        return self.final(torch.cat((mf, x), dim=1))


def bce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """BCEWithLogits per sample, averaged in fp32 (DLE: reduction 'none', then `torch.mean(loss.float())`)."""
    loss = F.binary_cross_entropy_with_logits(logits, labels.view(-1, 1).to(logits.dtype), reduction="none")
    return loss.float().view(-1).mean()


def ncf(config: dict, batch_start: int, name: str) -> dict:
    users, items = config["users"], config["items"]

    def make_batch(batch_size: int, device: torch.device) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
        """Uniform user and item ids, a label 1 for a fifth of the samples (one positive to four negatives)."""
        ids = (torch.randint(0, users, (batch_size,), device=device),
               torch.randint(0, items, (batch_size,), device=device))
        labels = (torch.rand(batch_size, device=device) < POSITIVE_SHARE).float()
        return ids, labels

    return {"name": name, "model": NeuMF(**config), "make_batch": make_batch, "loss": bce, "unit": "samples",
            "batch_start": batch_start}


def build() -> dict:
    """NeuMF on MovieLens-20M's 138,493 users and 26,744 items, factors 64, MLP 256-256-128-64: 31,832,577
    parameters (Lambda's logged count)."""
    return ncf({"users": USERS, "items": ITEMS, "factors": FACTORS, "layers": LAYERS}, BATCH_START, "ncf")


def build_tiny() -> dict:
    """Both branches, dropout and the loss at 1,000 users, 500 items and factors 8: CPU tests."""
    return ncf(TINY, TINY_BATCH_START, "ncf-cpu")
