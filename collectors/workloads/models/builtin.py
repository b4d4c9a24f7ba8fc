"""The four reference workloads of DESIGN.md, each written as a workload function a user could
have written: they go through the same interface as user files."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from collectors.workloads.models.gpt import GPT, gpt_loss
from collectors.workloads.models.resnet import ResNet50
from collectors.workloads.models.small import ROLLOUT_STEPS, ConvOperator, build_stgan_generator, rollout

GPT_VOCAB, GPT_SEQ = 50257, 1024


def gpt_small(seq_len: int = GPT_SEQ, d_model: int = 768, n_layers: int = 12, n_heads: int = 12,
              vocab: int = GPT_VOCAB) -> dict:
    """`vocab` above GPT_VOCAB pads the embedding and output layer (tokens stay below GPT_VOCAB), as
    benchmarks/vocab_padding.py measures: a multiple of 64 keeps the output GEMMs off unaligned kernels."""
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.randint(0, GPT_VOCAB, (batch_size, seq_len + 1), device=device)
        return tokens[:, :-1], tokens[:, 1:]

    return {"name": "gpt-small", "model": GPT(vocab, seq_len, d_model, n_layers, n_heads),
            "make_batch": make_batch, "loss": gpt_loss,
            "unit": "sequences", "tokens_per_sample": seq_len, "batch_start": 1}


def resnet50(image: int = 224) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.randn(batch_size, 3, image, image, device=device).to(memory_format=torch.channels_last)
        return images, torch.randint(0, 1000, (batch_size,), device=device)

    model = ResNet50().to(memory_format=torch.channels_last)  # DESIGN: channels_last by default
    return {"name": "resnet50", "model": model, "make_batch": make_batch, "loss": F.cross_entropy,
            "unit": "images", "batch_start": 16}


def mlp_stgan(x_dim: int = 3000) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(batch_size, x_dim, device=device), torch.randn(batch_size, x_dim, device=device)

    return {"name": "mlp-stgan", "model": build_stgan_generator(x_dim), "make_batch": make_batch,
            "loss": F.mse_loss, "unit": "samples", "batch_start": 256}


def conv_rollout(size: int = 128, steps: int = ROLLOUT_STEPS) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, None]:
        return torch.randn(batch_size, 3, size, size, device=device), None

    return {"name": "conv-rollout", "model": ConvOperator(), "make_batch": make_batch, "loss": None,
            "run": lambda model, state: rollout(model, state, steps), "unit": "realizations", "batch_start": 10,
            # Without gradients each step frees the last state: two steps peak as high as a hundred.
            "probe_run": lambda model, state: rollout(model, state, min(steps, 2))}


# Tiny sizes for the CPU path (tests, `make report` on a laptop): same code, smaller shapes.
TINY_GPT = {"d_model": 128, "n_layers": 2, "n_heads": 4}
TINY_GPT_SEQ = 64
TINY = {
    "gpt-small": lambda: gpt_small(seq_len=TINY_GPT_SEQ, **TINY_GPT),
    "resnet50": lambda: resnet50(image=64),
    "mlp-stgan": mlp_stgan,
    "conv-rollout": lambda: conv_rollout(size=32, steps=5),
}
