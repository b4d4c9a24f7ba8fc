"""dlrm-small: a DLRM-like click-through recommender; the memory-bound example.

Model (after DLRM, Naumov et al. 2019, on Criteo-like inputs): 13 dense features through a bottom
MLP 13 → 512 → 256 → 64; 8 categorical features, each a bag of 4 ids summed in its own
`nn.EmbeddingBag` of 2 M rows × 64; the pairwise dot products of the 9 vectors (36) beside the
bottom MLP's output feed a top MLP 100 → 512 → 256 → 1; binary cross-entropy on the logit.
1.02 G parameters, 99.97 % of them in the tables (4.1 GB in fp32).

Regime: memory bandwidth. The tables keep dense gradients (`sparse=False`, as a plain
`nn.Embedding` does), so every step writes a zeroed 4.1 GB gradient, scatters the batch's rows
into it, and AdamW reads parameter, gradient and both moments and writes parameter and moments for
every row, touched or not. Numbers from `benchmarks/example_regimes.py`:

- Bytes: AdamW moves 28 B per parameter (4 read, 3 written, fp32), 28.7 GB a step, plus 4.1 GB
  to zero the gradient: the byte model gives 33.4 GB a step, almost independent of the batch.
  At ~3.0 TB/s that is 11 ms; the fused AdamW kernel reaches perhaps 80–90 % of copy bandwidth.
- FLOPs: 2.0 MFLOP per sample for a training step (the MLPs; the interaction is tiny), 0.033
  TFLOP at gpuplan's main batch 16,384: 0.04 ms at the H100's bf16 peak. Arithmetic intensity
  1.0 FLOP/B, far below the H100's ridge (~270 FLOP/B for bf16).
- Host: 218 aten ops a step (128 kernels), ~1–4 ms of host time, hidden behind the GPU.
- Memory: parameters, gradients and two moments are 16.4 GB before any batch; a sample adds only
  ~20 kB of activations and indices, so the OOM boundary is in the millions of samples.

So an H100 step should take roughly 12–16 ms and barely change with the batch until the lookups
and MLPs of ~a million samples catch up; an H200 (4.8 TB/s) should be ~1.4× faster, not the ~1×
its equal bf16 peak predicts. Sparse gradients (`sparse=True` with SparseAdam) would remove most
of the traffic; this example keeps them dense on purpose.

`build()` is the measured size: on a GPU host the tables are made on the GPU; on a CPU they take
4.1 GB of RAM and 5–10 s to initialise (a CPU step would need 16 GB: use the tiny size).
`build_tiny()` keeps the same 8 tables and MLP (the same ops per step) with 1,000 rows a table,
for the CPU tests.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

DENSE_FEATURES = 13
TABLES, ROWS, DIM, HOTNESS = 8, 2_000_000, 64, 4   # HOTNESS: ids per bag
BOTTOM = (512, 256, DIM)
TOP = (512, 256, 1)
BATCH_START = 2048  # gpuplan's main batch on a GPU is 8 × this: 16,384


def mlp(widths: tuple[int, ...], last_relu: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        layers.append(nn.Linear(a, b))
        if last_relu or i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def table_device() -> torch.device:
    """The GPU where there is one (gpuplan trains there: initialising 4.1 GB on the host takes 5–10 s
    and the copy more), else the default device (the CPU, or `meta` inside `with torch.device("meta")`)."""
    default = torch.get_default_device()
    if default.type == "cpu" and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return default


class DLRM(nn.Module):
    def __init__(self, tables: int = TABLES, rows: int = ROWS, dim: int = DIM):
        super().__init__()
        self.bottom = mlp((DENSE_FEATURES, *BOTTOM[:-1], dim), last_relu=True)
        # Dense gradients on purpose: AdamW then updates every row of every table each step.
        with torch.device(table_device()):  # 4.1 GB: initialised where they will be trained
            self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum", sparse=False) for _ in range(tables))
        pairs = (tables + 1) * tables // 2
        self.top = mlp((dim + pairs, *TOP), last_relu=False)
        rows_, cols_ = torch.tril_indices(tables + 1, tables + 1, offset=-1)
        self.register_buffer("pair_rows", rows_, persistent=False)
        self.register_buffer("pair_cols", cols_, persistent=False)

    def forward(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        dense, sparse = inputs                        # (B, 13) floats, (B, tables, hotness) ids
        x = self.bottom(dense)                        # (B, dim)
        vectors = [x] + [table(sparse[:, i]) for i, table in enumerate(self.tables)]
        z = torch.stack(vectors, dim=1)               # (B, tables + 1, dim)
        dots = torch.bmm(z, z.transpose(1, 2))        # every pair's dot product
        pairs = dots[:, self.pair_rows, self.pair_cols]  # the strict lower triangle
        return self.top(torch.cat([x, pairs.to(x.dtype)], dim=1)).squeeze(1)


def bce(logits: torch.Tensor, clicks: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits.float(), clicks)


def dlrm(tables: int, rows: int, dim: int, batch_start: int, name: str) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
        dense = torch.randn(batch_size, DENSE_FEATURES, device=device).abs().log1p()  # like log(1 + count)
        sparse = torch.randint(0, rows, (batch_size, tables, HOTNESS), device=device)
        clicks = torch.randint(0, 2, (batch_size,), device=device).float()
        return (dense, sparse), clicks

    return {"name": name, "model": DLRM(tables, rows, dim), "make_batch": make_batch, "loss": bce,
            "unit": "samples", "batch_start": batch_start}


def build() -> dict:
    """8 tables of 2 M rows × 64: the size measured on GPUs."""
    return dlrm(TABLES, ROWS, DIM, BATCH_START, "dlrm-small")


def build_tiny() -> dict:
    """The same 8 tables and MLPs with 1,000 rows a table: for CPU tests."""
    return dlrm(TABLES, 1000, DIM, 256, "dlrm-small-cpu")
