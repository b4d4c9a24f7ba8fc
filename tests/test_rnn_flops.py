"""collectors/core/rnn_flops.py: torch's FLOP counter learns the fused RNN kernels (cuDNN's `_cudnn_rnn` on a GPU,
oneDNN's `mkldnn_rnn_layer` on a CPU), so a user model's LSTMs are counted by both collectors."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode, flop_registry

import collectors.core.rnn_flops  # noqa: F401 - what the collectors import
from collectors.workloads.accounting import count_flops
from collectors.workloads.training import Step

META = torch.device("meta")


@pytest.mark.parametrize("packed", [True, False])
def test_cudnn_formula_counts_what_the_decomposition_counts(packed):
    """The formula registered for cuDNN's kernel, given a bidirectional LSTM's arguments as `_cudnn_rnn` takes them
    (packed: the tokens of every sentence in a row), against the same LSTM's forward on `meta`."""
    lstm = torch.nn.LSTM(16, 8, bidirectional=True, device=META)
    lengths = torch.tensor([5, 3, 2])
    x = torch.empty(5, 3, 16, device=META)
    counter = FlopCounterMode(display=False)
    with counter:
        lstm(torch.nn.utils.rnn.pack_padded_sequence(x, lengths) if packed else x)
    weights = list(lstm.parameters())  # w_ih, w_hh, b_ih, b_hh for each direction
    rows = torch.empty(int(lengths.sum()), 16, device=META) if packed else x
    forward = flop_registry[torch.ops.aten._cudnn_rnn](rows, weights, 4, None)
    assert forward == counter.get_total_flops() == 2 * rows.shape[:-1].numel() * 2 * 32 * (16 + 8)
    backward = flop_registry[torch.ops.aten._cudnn_rnn_backward]
    assert backward(rows, weights, 4, None, [True, True, True, True]) == 2 * forward
    assert backward(rows, weights, 4, None, [True, True, True, False]) == forward


def test_a_plain_lstm_step_on_the_cpu_is_counted():
    """A user's nn.LSTM, trained one step on the CPU (oneDNN's fused kernel): forward and backward of its two
    weight matrices, not zero as torch alone counts it."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(16, 8)
    x = torch.randn(5, 3, 16)

    def run() -> None:
        out, _ = lstm(x)
        out.sum().backward()

    forward = 2 * 5 * 3 * 4 * 8 * (16 + 8)   # 15 tokens × (the 32×16 input and 32×8 recurrent matrices), 2 an entry
    assert count_flops(Step(run=run, optimizer=None, inputs=x, targets=None)) == 3 * forward
