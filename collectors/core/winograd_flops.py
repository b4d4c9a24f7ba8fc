"""The FLOPs of a step that cuDNN can run as Winograd convolutions on CUDA cores: dense 3×3 stride-1 convolutions'
forward and input gradient.

On a GPU whose fp32 runs on CUDA cores (a V100, a Turing card: no TF32), cuDNN runs such a convolution with its
Winograd kernel (`volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1` in V100 fp32 profiles of ResNet-50's
3×3 layers, the 1×1 layers on `volta_scudnn_128x128_relu_interior_nn_v1`), which multiplies 4/9 as often as the
direct convolution the FLOP count assumes (F(2×2, 3×3): 16 products for 4 outputs where the direct convolution
takes 36). The input gradient is the same 3×3 stride-1 convolution of the output gradient with the flipped weight;
the weight gradient runs a direct engine (`wgrad_alg0_engine`) and is not counted here. With TF32, fp16 or bf16 the
same layers run tensor-core implicit GEMMs (our H100/H200 profiles: every convolution kernel `xmma_*implicit_gemm*`),
so the count matters only where a tensor-core step is predicted on CUDA cores (planner/model/winograd.py).
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import conv_flop_count

aten = torch.ops.aten


def winograd_eligible(weight_shape, stride, dilation, groups: int, transposed: bool) -> bool:
    """A dense 2-D 3×3 convolution of stride 1 and dilation 1, not transposed."""
    return (len(weight_shape) == 4 and tuple(weight_shape[2:]) == (3, 3) and groups == 1 and not transposed
            and all(s == 1 for s in stride) and all(d == 1 for d in dilation))


class WinogradFlopCounter(TorchDispatchMode):
    """Sums, over the ops it sees, the FLOPs of eligible convolutions' forward and input gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is aten.convolution.default:
            x, w, _bias, stride, _padding, dilation, transposed, _out_pad, groups = args[:9]
            if winograd_eligible(w.shape, stride, dilation, groups, transposed):
                self.flops += conv_flop_count(list(x.shape), list(w.shape), list(out.shape), transposed)
        elif func is aten.convolution_backward.default:
            grad_out, x, w, _bias_sizes, stride, _padding, dilation, transposed, _out_pad, groups, mask = args[:11]
            if mask[0] and winograd_eligible(w.shape, stride, dilation, groups, transposed):
                self.flops += conv_flop_count(list(grad_out.shape), list(w.shape), list(x.shape), not transposed)
        return out
