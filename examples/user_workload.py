"""A user workload for gpuplan: a small 1-D convolutional classifier of sensor windows.

Copy this file, change the model and the batch maker, then measure it:

    gpuplan collect --only workloads --workload examples/user_workload.py:build

gpuplan imports the file, calls `build()` and times whole training steps (forward, backward,
AdamW) at several precisions and batch sizes, doubling the batch from `batch_start` until the
GPU runs out of memory. Keep the file self-contained: torch and the standard library only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

CHANNELS = 3      # e.g. an accelerometer's x, y and z
WINDOW = 256      # samples per window
CLASSES = 6       # activities to tell apart


def build_model() -> nn.Module:
    """Two strided convolutions, global average pooling and a linear head."""
    return nn.Sequential(
        nn.Conv1d(CHANNELS, 32, kernel_size=7, padding=3),
        nn.BatchNorm1d(32),
        nn.ReLU(),
        nn.Conv1d(32, 64, kernel_size=5, stride=2, padding=2),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.Conv1d(64, 64, kernel_size=5, stride=2, padding=2),
        nn.BatchNorm1d(64),
        nn.ReLU(),
        nn.AdaptiveAvgPool1d(1),
        nn.Flatten(),
        nn.Linear(64, CLASSES),
    )


def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch of synthetic data, made directly on `device` so no host-to-device copy is timed.

    Returns (inputs, targets): inputs go to the model, targets to the loss. Random data is
    enough: the step's time depends on the shapes, not on the values.
    """
    inputs = torch.randn(batch_size, CHANNELS, WINDOW, device=device)
    targets = torch.randint(0, CLASSES, (batch_size,), device=device)
    return inputs, targets


def build() -> dict:
    """The workload: gpuplan calls this function (the name after the colon on the command line)."""
    return {
        "name": "sensor-cnn",         # names the result file: workload-sensor-cnn.json
        "model": build_model(),       # any torch.nn.Module; gpuplan moves it to the device
        "make_batch": make_batch,     # (batch_size, device) -> (inputs, targets)
        "loss": F.cross_entropy,      # (outputs, targets) -> scalar; None measures inference only
        "unit": "windows",            # what one sample is, for throughput in windows/s
        "batch_start": 32,            # first batch of the sweep (doubled until out of memory)
        # Optional keys:
        #   "tokens_per_sample": 256,                  # report tokens/s as well
        #   "run": lambda model, inputs: model(inputs),  # a custom forward (e.g. several inputs)
    }
