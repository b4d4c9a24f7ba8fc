"""CTC loss on the meta device (collectors/trace/ctc.py): torch has no meta kernel for its backward, nor for its
forward with the lengths as tensors, so a CTC model's every traced step failed at its loss. The kernels the trace adds
give the shapes the real kernels give (checked against the CPU's), and a CTC model traces with both of its ops."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from collectors.trace import autocast  # noqa: F401 - registers the meta kernels, as the trace does
from collectors.trace.collect import load_on_meta, trace_run

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them

FRAMES, BATCH, CHARS, LONGEST = 12, 3, 6, 4


def ctc_inputs(device: str, tensor_lengths: bool) -> tuple:
    generator = torch.Generator().manual_seed(0)
    log_probs = torch.randn(FRAMES, BATCH, CHARS, generator=generator).log_softmax(-1).to(device)
    targets = torch.randint(1, CHARS, (BATCH, LONGEST), generator=generator).to(device)
    frames, lengths = (FRAMES,) * BATCH, (LONGEST, 2, 3)
    if tensor_lengths:
        return log_probs, targets, torch.tensor(frames, device=device), torch.tensor(lengths, device=device)
    return log_probs, targets, frames, lengths


@pytest.mark.parametrize("tensor_lengths", [False, True], ids=["int lengths", "tensor lengths"])
def test_ctc_on_meta_has_the_shapes_of_the_real_kernels(tensor_lengths):
    shapes = {}
    for device in ("cpu", "meta"):
        log_probs, targets, frames, lengths = ctc_inputs(device, tensor_lengths)
        forward = torch.ops.aten._ctc_loss(log_probs, targets, frames, lengths, 0, True)
        grad = torch.ops.aten._ctc_loss_backward(torch.ones(BATCH, device=device), log_probs, targets, frames,
                                                  lengths, *forward, 0, True)
        shapes[device] = [tuple(t.shape) for t in (*forward, grad)] + [t.dtype for t in (*forward, grad)]
    assert shapes["meta"] == shapes["cpu"] == [(BATCH,), (BATCH, FRAMES, 2 * LONGEST + 1), (FRAMES, BATCH, CHARS),
                                               torch.float32, torch.float32, torch.float32]


@pytest.mark.parametrize("tensor_lengths", [False, True], ids=["int lengths", "tensor lengths"])
def test_ctc_loss_backward_runs_on_meta(tensor_lengths):
    log_probs, targets, frames, lengths = ctc_inputs("meta", tensor_lengths)
    log_probs.requires_grad_()
    F.ctc_loss(log_probs, targets, frames, lengths, zero_infinity=True).backward()
    assert log_probs.grad.shape == log_probs.shape


def test_a_ctc_model_traces_with_its_loss_and_its_backward():
    run = trace_run(load_on_meta("examples/audio_encoder.py:build_tiny"), "bf16", 2)
    assert run.status == "ok", run.reason
    ctc = {op.name: op for op in run.ops if "ctc" in op.name}
    assert set(ctc) == {"aten::_ctc_loss", "aten::_ctc_loss_backward"}
    assert {op.dtype for op in ctc.values()} == {"fp32"}   # autocast's fp32 list: the loss runs on fp32
    assert all(op.calls == 1 and op.flops is None and op.bytes > 0 for op in ctc.values())
