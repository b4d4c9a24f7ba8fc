"""The two small reference workloads of the seed analyses: a dense GAN generator and a
convolutional neural-operator rollout."""

from __future__ import annotations

import torch
from torch import nn

ROLLOUT_STEPS = 100


def build_stgan_generator(x_dim: int = 3000) -> nn.Module:
    """X_dim → 700 (BatchNorm, ReLU) → 100 → 50 → 100 → 700 → X_dim, ReLU between."""
    return nn.Sequential(
        nn.Linear(x_dim, 700), nn.BatchNorm1d(700), nn.ReLU(),
        nn.Linear(700, 100), nn.ReLU(),
        nn.Linear(100, 50), nn.ReLU(),
        nn.Linear(50, 100), nn.ReLU(),
        nn.Linear(100, 700), nn.ReLU(),
        nn.Linear(700, x_dim),
    )


class ConvOperator(nn.Module):
    """4 × [Conv2d 3×3, 64 channels, InstanceNorm2d, GELU] + 1×1 conv back to 3 channels; x + net(x)."""

    def __init__(self, channels: int = 3, width: int = 64):
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [nn.Conv2d(channels if i == 0 else width, width, 3, padding=1), nn.InstanceNorm2d(width),
                       nn.GELU()]
        layers.append(nn.Conv2d(width, channels, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.net(x)


def rollout(model: nn.Module, state: torch.Tensor, steps: int = ROLLOUT_STEPS) -> torch.Tensor:
    """Advance every realization `steps` times without gradients (inference)."""
    with torch.no_grad():
        for _ in range(steps):
            state = model(state)
    return state
