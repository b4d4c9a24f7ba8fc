"""FLOPs of the fused recurrent kernels, which torch's FLOP counter has no formula for: cuDNN's LSTM/GRU/RNN
(`_cudnn_rnn` and its backward, one call for every layer and direction of an nn.LSTM on a GPU) and oneDNN's on a CPU
(`mkldnn_rnn_layer` and its backward, one layer and direction a call). Without them FlopCounterMode counts none of a
recurrent model's matrix products (72 % of GNMT's). Importing this module registers them in torch's registry, which
both counters read (collectors/workloads/accounting.py for the step, collectors/roofline/op_accounting.py per op);
a formula torch already has is kept.

Counted as torch counts a matmul: 2 FLOPs a weight-matrix entry a token, forward (the input projection and the
recurrent one; biases and gates are pointwise and not counted); backward twice that where the weights' gradient is
asked (the gradients of the inputs and states always, of the weights too), once where it is not. Against torch's
per-step decomposition the fused backward also takes the gradient of the zero initial state: one recurrent product
per layer and direction more (tests/test_rnn_flops.py).
"""

from __future__ import annotations

import math

import torch
from torch.utils.flop_counter import flop_registry, register_flop_formula


def rnn_gemm_flops(input_shape: torch.Size, weight_shapes: list[torch.Size]) -> int:
    """The matrix products of an LSTM over its input: each token of the input (all the rows but the features: a
    packed sequence's lengths summed, or time × batch) meets every weight matrix of every layer and direction
    once, 2 FLOPs an entry (the input's projection and the recurrent one; biases and gates, pointwise, are not
    counted, as torch's counter counts no pointwise op)."""
    tokens = math.prod(input_shape[:-1])
    return 2 * tokens * sum(math.prod(w) for w in weight_shapes if len(w) == 2)


def _cudnn_forward(input_shape, weight_shapes, *args, out_shape=None, **kwargs) -> int:
    return rnn_gemm_flops(input_shape, weight_shapes)


def _cudnn_backward(input_shape, weight_shapes, *args, out_shape=None, **kwargs) -> int:
    """The gradients of the input and the states (cuDNN's backward-data, always run) and, where the last entry
    of output_mask asks, of the weights: each as many FLOPs as the forward."""
    mask = kwargs.get("output_mask", args[-1] if args else None)
    weights = not isinstance(mask, (list, tuple)) or bool(mask[-1])
    return rnn_gemm_flops(input_shape, weight_shapes) * (2 if weights else 1)


def _onednn_forward(input_shape, w_ih, w_hh, *args, out_shape=None, **kwargs) -> int:
    return rnn_gemm_flops(input_shape, [w_ih, w_hh])


def _onednn_backward(input_shape, w_ih, w_hh, *args, out_shape=None, **kwargs) -> int:
    return 2 * rnn_gemm_flops(input_shape, [w_ih, w_hh])


def register_rnn_flops() -> None:
    """Teach torch's FLOP counter the fused recurrent kernels (module docstring). Idempotent."""
    aten = torch.ops.aten
    for op, formula in ((aten._cudnn_rnn, _cudnn_forward), (aten._cudnn_rnn_backward, _cudnn_backward),
                        (aten.mkldnn_rnn_layer, _onednn_forward),
                        (aten.mkldnn_rnn_layer_backward, _onednn_backward)):
        if op not in flop_registry:
            register_flop_formula(op)(formula)


register_rnn_flops()
