"""The FLOPs of a grouped convolution's backward (collectors/core/conv_flops.py): torch's counter loses the groups."""

import torch
from torch.utils.flop_counter import FlopCounterMode

import collectors.core.conv_flops  # noqa: F401 - registers the formula
from collectors.core.conv_flops import conv_backward_flops


def _counts(groups: int) -> tuple[int, int]:
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, groups=groups, bias=False)
    x = torch.randn(2, 64, 8, 8, requires_grad=True)
    counter = FlopCounterMode(display=False)
    with counter:
        conv(x).sum().backward()
    counts = counter.get_flop_counts()["Global"]
    return counts[torch.ops.aten.convolution], counts[torch.ops.aten.convolution_backward]


def test_a_depthwise_backward_is_twice_its_forward_not_groups_times_more():
    # 2 × (N · C · H · W · k²) multiply-adds forward; torch's formula gave the weight's gradient 64× that
    forward, backward = _counts(64)
    assert forward == 2 * 2 * 64 * 8 * 8 * 9
    assert backward == 2 * forward


def test_a_dense_convolution_counts_as_torch_counted_it():
    forward, backward = _counts(1)
    assert backward == 2 * forward
    assert _counts(8)[0] * 8 == forward  # a grouped one's FLOPs fall with its groups, forward and backward alike
    assert _counts(8)[1] * 8 == backward


def test_only_the_gradients_asked_for_are_counted():
    shapes = ([2, 16, 8, 8], [2, 16, 8, 8], [16, 1, 3, 3])
    both = conv_backward_flops(*shapes, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 16, [True, True])
    weight = conv_backward_flops(*shapes, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 16, [False, True])
    assert both == 2 * weight == 2 * (2 * 2 * 16 * 8 * 8 * 9)
