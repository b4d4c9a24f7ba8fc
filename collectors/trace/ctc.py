"""CTC loss on the meta device: the kernels torch has no Meta implementation of, which a speech model's step runs.

`F.ctc_loss` with lengths as Python ints runs `_ctc_loss` (torch has its meta kernel) and, in backward,
`_ctc_loss_backward` (none); with lengths as tensors, as Hugging Face's Wav2Vec2ForCTC passes them, the meta device
takes the `.Tensor` overloads (neither has one), where CUDA copies the lengths to the host and runs the first pair.
Without these every traced step of a CTC model failed at its loss (examples/audio_encoder.py).

Shapes as CUDA's kernels make them (aten/src/ATen/native/cuda/LossCTC.cu): the forward returns each sequence's
negative log-likelihood (batch,) and log_alpha (batch, frames, 2 × the longest target + 1); the backward the
gradient of the log-probabilities, their shape. The longest target is a value the meta device does not hold: a
padded (batch, S) target gives S, a concatenated one its mean length (the GPU's is its longest). CUDA's backward
also holds a log_beta of log_alpha's size while it runs, which the trace does not count (1.5 MB at 64 clips of
examples/audio_encoder.py).
"""

from __future__ import annotations

import math

import torch


def _longest_target(targets: torch.Tensor, batch: int) -> int:
    if targets.dim() == 2:
        return targets.shape[1]
    return math.ceil(targets.numel() / max(batch, 1))


def _forward_meta(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: torch.Tensor,
                  target_lengths: torch.Tensor, blank: int = 0, zero_infinity: bool = False,
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """`_ctc_loss.Tensor`: (neg_log_likelihood, log_alpha) of log_probs (frames, batch, classes)."""
    batch = log_probs.shape[1] if log_probs.dim() == 3 else 1
    steps = 2 * _longest_target(targets, batch) + 1
    return (log_probs.new_empty((batch,)), log_probs.new_empty((batch, log_probs.shape[0], steps)))


def _backward_meta(grad: torch.Tensor, log_probs: torch.Tensor, *rest: object) -> torch.Tensor:
    """`_ctc_loss_backward` (both overloads): the gradient of the log-probabilities."""
    return torch.empty_like(log_probs)


KERNELS = {"_ctc_loss.Tensor": _forward_meta, "_ctc_loss_backward": _backward_meta,
           "_ctc_loss_backward.Tensor": _backward_meta}


def register(library: torch.library.Library) -> None:
    """Teach the meta device the CTC kernels above; a kernel torch already has is kept."""
    for name, kernel in KERNELS.items():
        if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", "Meta"):
            library.impl(name, kernel, "Meta")
