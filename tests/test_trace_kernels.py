"""What a CUDA kernel allocates that the meta device's does not (collectors/trace/kernels.py): the storage a reduced
loss's scalar keeps, and the fp32 copy a bf16 batch norm reads past 32-bit indexing. The loss rule is checked against
the CPU's own kernel (the same structured kernel as CUDA's); the batch norm's against ATen's rule, on meta shapes no
CPU could hold."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from collectors.trace.kernels import can_use_32bit_index_math
from collectors.trace.memory import LiveMemory
from collectors.trace.recorder import TraceRecorder

LOSSES = {"mse_loss": F.mse_loss, "smooth_l1_loss": F.smooth_l1_loss}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_a_traced_loss_keeps_the_storage_the_real_kernel_leaves_it_on(name, reduction):
    loss = LOSSES[name]
    x, y = torch.randn(64, 300), torch.randn(64, 300)
    real = loss(x, y, reduction=reduction).untyped_storage().nbytes()   # the CPU kernel: 64 x 300 x 4 for all three
    with TraceRecorder(LiveMemory()):
        traced = loss(x.to("meta"), y.to("meta"), reduction=reduction)
    assert traced.shape == (() if reduction != "none" else (64, 300))
    assert traced.untyped_storage().nbytes() == real == 64 * 300 * 4


def test_a_reduced_losss_storage_lives_as_long_as_the_loss():
    memory = LiveMemory()
    x = torch.empty(4096, 3000, device="meta", requires_grad=True)
    y = torch.empty(4096, 3000, device="meta")
    memory.adopt((x, y), "inputs")
    memory.reset_peak()
    inputs = memory.total
    with TraceRecorder(memory):
        loss = F.mse_loss(x, y)
        loss.backward()
        assert memory.total - inputs >= 2 * 4096 * 3000 * 4      # the loss's storage and x's gradient
        del loss                                                  # as `train_on` returns on a GPU
        assert memory.total - inputs == 4096 * 3000 * 4           # the gradient alone
    # while it ran: its storage and the unreduced loss it wrote and reduced
    assert memory.peak - inputs >= 2 * 4096 * 3000 * 4


def _batch_norm_extra(shape: tuple[int, ...], dtype: torch.dtype, training: bool = True) -> int:
    """The bytes a traced batch norm held beyond its input and its result while it ran."""
    memory = LiveMemory()
    x = torch.empty(shape, dtype=dtype, device="meta")
    channels = shape[1]
    stats = [torch.zeros(channels, device="meta"), torch.ones(channels, device="meta")]
    memory.adopt([x, *stats], "inputs")
    memory.reset_peak()
    with TraceRecorder(memory):
        out = F.batch_norm(x, *stats, training=training)
    assert out.shape == x.shape
    return memory.peak - memory.total     # the result and the saved statistics are still held: the rest was internal


# the conv rollout's instance norm at 2,048 realizations (a batch norm of (1, 2048·64, 128, 128): 2^31 elements) and
# sensor-cnn's first batch norm at 262,144 windows ((262144, 32, 256): 2^31)
PAST_INT32 = ((1, 2048 * 64, 128, 128), (262_144, 32, 256))


@pytest.mark.parametrize("shape", PAST_INT32)
def test_a_bf16_batch_norm_past_32_bit_indexing_reads_an_fp32_copy_of_its_input(shape):
    numel = torch.Size(shape).numel()
    assert _batch_norm_extra(shape, torch.bfloat16) >= 4 * numel          # CUDA's General path: self.to(float)
    assert _batch_norm_extra(shape, torch.float16) < numel // 1000         # fp16 is read as it is
    assert _batch_norm_extra(shape, torch.float32) < numel // 1000         # the statistics' own dtype
    assert _batch_norm_extra(shape, torch.bfloat16, training=False) < numel // 1000   # running statistics: no var_mean
    smaller = (shape[0] // 2, *shape[1:]) if shape[0] > 1 else (1, shape[1] // 2, *shape[2:])
    assert _batch_norm_extra(smaller, torch.bfloat16) < numel // 1000      # 2^30 elements: 32-bit kernels


def test_32_bit_index_math_is_decided_by_the_largest_offset_as_aten_does():
    assert can_use_32bit_index_math(torch.empty(2**31 - 2, device="meta"))
    assert not can_use_32bit_index_math(torch.empty(2**31, device="meta"))
    assert can_use_32bit_index_math(torch.empty(0, device="meta"))
    # few elements, far apart: a strided view whose last element lies past INT32_MAX
    wide = torch.empty(2, 2**31, device="meta")[:, :1]
    assert wide.numel() == 2 and not can_use_32bit_index_math(wide)
