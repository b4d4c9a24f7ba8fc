"""The FLOPs of a grouped convolution's backward, which torch's FLOP counter overcounts by the group count.

torch's `conv_backward_flop` (torch/utils/flop_counter.py, 2.13) counts the weight's gradient as a convolution of
the transposed input with the transposed output gradient, and the transposed shapes lose the group division: a
depthwise convolution (groups = channels) is counted as a dense one, `groups`× its FLOPs. EfficientNet-B0's training
step counted 32.2 GFLOP an image where its forward is 0.77 (its backward is twice that), ResNeXt-101 32x4d's 1.62×
its true count (the 32-group 3×3 convolutions). The fix upstream: pytorch/pytorch pull request 183405 (2026-05-12,
"// _groups" on the weight-gradient term).

Counted here as every gradient of a convolution is: as many FLOPs as its forward (the input's gradient is the
transposed convolution of the output gradient with the same weight, the weight's gradient the convolution of the
input with the output gradient; each multiplies every weight entry with every output position once), which the
forward formula counts with the weight's shape (out, in / groups, k, k), so groups are right. Importing this module
replaces torch's formula in the registry both counters read (collectors/workloads/accounting.py for the step,
collectors/roofline/op_accounting.py per op); for an ungrouped convolution the count is torch's
(tests/test_conv_flops.py). Committed documents counted before: benchmarks/recount_conv_flops.py.
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import conv_flop_count, flop_registry, register_flop_formula


def conv_backward_flops(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                        _output_padding, _groups, output_mask, out_shape=None, **kwargs) -> int:
    """The input's gradient (where output_mask[0] asks) and the weight's (output_mask[1]), each its forward's FLOPs."""
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(list(grad_out_shape), list(w_shape), list(x_shape), not transposed)
    if output_mask[1]:
        flops += conv_flop_count(list(x_shape), list(w_shape), list(grad_out_shape), transposed)
    return flops


def register_conv_flops() -> None:
    """Put this formula in torch's registry in place of its own (module docstring). Idempotent."""
    op = torch.ops.aten.convolution_backward
    flop_registry.pop(op, None)
    register_flop_formula(op)(conv_backward_flops)


register_conv_flops()
