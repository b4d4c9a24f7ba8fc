"""FLOPs and bytes per aten op (collectors/roofline/op_accounting.py) against counts made by hand.

Each case runs the real op under the OpRecorder and compares with the figure worked out from the
shapes: a matmul reads both operands and writes the product, 2·m·k·n FLOPs; a convolution reads
input, weight and bias, 2 FLOPs per multiply-add; an elementwise op one FLOP per output element.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from collectors.roofline.op_accounting import OpCall, OpRecorder

F32, BF16 = 4, 2


def record(fn) -> list[OpCall]:  # noqa: ANN001 - any callable
    recorder = OpRecorder()
    with recorder:
        fn()
    return recorder.calls


def only(calls: list[OpCall], name: str) -> OpCall:
    matching = [c for c in calls if c.name == name]
    assert len(matching) == 1, [c.name for c in calls]
    return matching[0]


def test_matmul_reads_both_operands_and_writes_the_product():
    m, k, n = 64, 128, 32
    a, b = torch.randn(m, k), torch.randn(k, n)
    call = only(record(lambda: a @ b), "aten::mm")
    assert call.flops == 2 * m * k * n
    assert (call.read_bytes, call.written_bytes) == ((m * k + k * n) * F32, m * n * F32)
    assert call.dtype == "fp32"


def test_linear_under_bf16_autocast_counts_two_byte_operands_and_the_casts():
    batch, d_in, d_out = 16, 96, 48
    layer, x = torch.nn.Linear(d_in, d_out), torch.randn(batch, d_in)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        calls = record(lambda: layer(x))
    addmm = only(calls, "aten::addmm")
    assert addmm.dtype == "bf16"
    assert addmm.flops == 2 * batch * d_in * d_out
    assert addmm.read_bytes == (d_out + batch * d_in + d_in * d_out) * BF16   # bias, input, weight (a view: t())
    assert addmm.written_bytes == batch * d_out * BF16
    casts = [c for c in calls if c.name == "aten::_to_copy"]
    assert sorted(c.read_bytes for c in casts) == sorted([d_out * F32, batch * d_in * F32, d_in * d_out * F32])
    assert sorted(c.written_bytes for c in casts) == sorted([d_out * BF16, batch * d_in * BF16, d_in * d_out * BF16])
    assert all(c.read_bytes == c.written_bytes == 0 for c in calls if c.name == "aten::t")  # a view moves nothing


def test_convolution_forward_and_backward():
    n, c_in, c_out, size, kernel = 2, 3, 8, 16, 3
    x = torch.randn(n, c_in, size, size, requires_grad=True)
    conv = torch.nn.Conv2d(c_in, c_out, kernel, padding=1)
    grad = torch.randn(n, c_out, size, size)  # a real gradient (that of .sum() is one broadcast element)
    calls = record(lambda: conv(x).backward(grad))
    forward = only(calls, "aten::convolution")
    macs = n * c_out * size * size * c_in * kernel * kernel
    assert forward.flops == 2 * macs
    assert forward.read_bytes == (n * c_in * size * size + c_out * c_in * kernel * kernel + c_out) * F32
    assert forward.written_bytes == n * c_out * size * size * F32
    backward = only(calls, "aten::convolution_backward")
    assert backward.flops == 2 * forward.flops   # gradient of the input and of the weight
    # reads grad_output, input, weight; writes grad_input, grad_weight, grad_bias
    assert backward.read_bytes == (n * c_out * size * size + n * c_in * size * size
                                   + c_out * c_in * kernel * kernel) * F32
    assert backward.written_bytes == (n * c_in * size * size + c_out * c_in * kernel * kernel + c_out) * F32


def test_elementwise_add_one_flop_per_element_and_broadcast_read_once():
    a, b, bias = torch.randn(1000), torch.randn(1000), torch.randn(10)
    add = only(record(lambda: a + b), "aten::add")
    assert add.flops == 1000
    assert (add.read_bytes, add.written_bytes) == (2000 * F32, 1000 * F32)
    grid = torch.randn(100, 10)
    broadcast = only(record(lambda: grid + bias.expand(100, 10)), "aten::add")
    assert broadcast.read_bytes == (1000 + 10) * F32  # the stride-0 dimension counts once


def test_in_place_and_same_input_twice():
    a, b = torch.randn(500), torch.randn(500)
    inplace = only(record(lambda: a.add_(b)), "aten::add_")
    assert (inplace.flops, inplace.read_bytes, inplace.written_bytes) == (500, 1000 * F32, 500 * F32)
    square = only(record(lambda: a * a), "aten::mul")
    assert (square.read_bytes, square.written_bytes) == (500 * F32, 500 * F32)
    copy = only(record(lambda: a.copy_(b)), "aten::copy_")
    assert (copy.flops, copy.read_bytes, copy.written_bytes) == (None, 500 * F32, 500 * F32)  # dst is not read


def test_activation_and_its_backward():
    x = torch.randn(4, 256, requires_grad=True)
    calls = record(lambda: F.gelu(x).backward(torch.randn(4, 256)))
    gelu, grad = only(calls, "aten::gelu"), only(calls, "aten::gelu_backward")
    assert (gelu.flops, gelu.read_bytes, gelu.written_bytes) == (1024, 1024 * F32, 1024 * F32)
    assert (grad.flops, grad.read_bytes, grad.written_bytes) == (1024, 2 * 1024 * F32, 1024 * F32)


def test_ops_without_a_formula_say_so_and_still_count_bytes():
    x = torch.randn(8, 64)
    norm = only(record(lambda: F.layer_norm(x, (64,))), "aten::native_layer_norm")
    assert norm.flops is None
    assert norm.read_bytes == 8 * 64 * F32
    assert norm.written_bytes == (8 * 64 + 8 + 8) * F32  # output, mean and rstd


def test_embedding_reads_only_the_rows_it_picks():
    vocab, dim, tokens = 1000, 16, 5
    table, ids = torch.randn(vocab, dim), torch.tensor([1, 7, 7, 42, 999])
    call = only(record(lambda: F.embedding(ids, table)), "aten::embedding")
    assert call.read_bytes == tokens * 8 + tokens * dim * F32  # int64 ids, then one row per id
    assert call.written_bytes == tokens * dim * F32


@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16"), (torch.float16, "fp16")])
def test_dtype_is_the_first_floating_input(dtype, name):
    a = torch.randn(4, 4, dtype=dtype)
    assert only(record(lambda: a @ a), "aten::mm").dtype == name
