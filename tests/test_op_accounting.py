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


def test_factories_of_another_tensors_shape_write_their_output_and_read_nothing():
    """`new_zeros` takes its dtype from its tensor (index_select's backward: a 1,000-row zero gradient made from a
    40,000-row one) and `zeros_like` its shape: neither reads it, on the CPU or the meta device."""
    for device in ("cpu", "meta"):
        big = torch.randn(40_000, 16, device=device)
        calls = record(lambda big=big: (big.new_zeros(1000, 16), torch.zeros_like(big), torch.ones_like(big)))
        small = only(calls, "aten::new_zeros")
        assert (small.read_bytes, small.written_bytes) == (0, 1000 * 16 * F32), device
        for name in ("aten::zeros_like", "aten::ones_like"):
            like = only(calls, name)
            assert (like.read_bytes, like.written_bytes) == (0, 40_000 * 16 * F32), (device, name)


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


# nn.EmbeddingBag (collectors/roofline/embedding_bag.py): counted as CUDA's kernels move the bytes, a row per index.
I64 = 8
SORT_PASSES = 8            # CUB's radix sort over an int64 key, 8 bits a pass


def bag_calls(rows: int, dim: int, ids: torch.Tensor, bags: int, device: str = "cpu", mode: str = "sum",
              **options) -> list[OpCall]:
    """One EmbeddingBag step (forward, backward with a real gradient) on a table of `rows` rows."""
    with torch.device(device):
        bag = torch.nn.EmbeddingBag(rows, dim, mode=mode, **options)
        offsets, grad = torch.arange(0, ids.numel(), ids.numel() // bags), torch.randn(bags, dim)
    return record(lambda: bag(ids.to(device), offsets).backward(grad))


def dense_backward_bytes(n: int, bags: int, rows: int, dim: int) -> tuple[int, int]:
    """By hand, for mode="sum" and int64 ids (EmbeddingBag.cu, EmbeddingBackwardKernel.cu): `segments` distinct rows
    at most; each index's gradient row read once, a partial row (fp32) and a gradient row written per segment."""
    segments, row = min(n, rows), dim * F32
    sort = SORT_PASSES * 2 * n * I64                           # keys and positions, each pass
    read = (n * I64 + sort + n * I64                           # histogram, passes, unique_by_key
            + n * (2 * I64 + row)                              # position, bag and gradient row per index
            + segments * (row + I64))                          # sum_and_scatter reads the partial rows
    written = n * I64 + sort + segments * I64 + segments * 2 * row + rows * row   # ... and the zero-filled table
    return read, written


def test_embedding_bag_forward_reads_a_row_per_index_not_the_table():
    dim, bags = 16, 6
    ids = torch.tensor([3, 9, 9, 41, 0, 7, 999, 3, 12, 5, 5, 5])     # 12 ids, two per bag, one id three times
    n = ids.numel()
    for rows in (1000, 50_000):
        forward = only(bag_calls(rows, dim, ids, bags), "aten::_embedding_bag")
        assert forward.read_bytes == n * dim * F32 + n * I64 + bags * I64     # rows, ids, offsets
        table = torch.randn(rows, dim, requires_grad=True)   # CPU's kernel keeps offset2bag for a backward only
        outputs = torch.ops.aten._embedding_bag(table, ids, torch.arange(0, n, n // bags))
        assert forward.written_bytes == sum(t.numel() * t.element_size() for t in outputs)
    twice = only(bag_calls(1000, dim, ids.repeat(2), bags), "aten::_embedding_bag")
    assert twice.read_bytes - forward.read_bytes == n * dim * F32 + n * I64  # grows with the ids, not the table


def test_embedding_bag_backward_scatters_a_row_per_index_beside_the_zero_fill():
    dim, bags, n = 16, 8, 32
    ids = torch.randint(0, 1000, (n,))
    backward = only(bag_calls(1000, dim, ids, bags), "aten::_embedding_bag_backward")
    assert (backward.read_bytes, backward.written_bytes) == dense_backward_bytes(n, bags, 1000, dim)
    mean = only(bag_calls(1000, dim, ids, bags, mode="mean"), "aten::_embedding_bag_backward")
    assert mean.read_bytes == backward.read_bytes + n * I64                  # each index reads its bag's size
    bigger_table = only(bag_calls(50_000, dim, ids, bags), "aten::_embedding_bag_backward")
    assert bigger_table.read_bytes == backward.read_bytes                     # the table is written, never read
    assert bigger_table.written_bytes - backward.written_bytes == 49_000 * dim * F32
    more_ids = only(bag_calls(1000, dim, ids.repeat(4), bags), "aten::_embedding_bag_backward")
    assert more_ids.read_bytes > backward.read_bytes + 3 * n * dim * F32       # a gradient row per index, at least
    # more ids than rows: at most one segment (partial row, gradient row) per row of the table
    crowded = only(bag_calls(10, dim, torch.randint(0, 10, (n,)), bags), "aten::_embedding_bag_backward")
    assert (crowded.read_bytes, crowded.written_bytes) == dense_backward_bytes(n, bags, 10, dim)


def test_embedding_bag_counts_the_same_on_the_meta_device():
    """The trace runs on `meta`: the same ops and the same bytes as on real tensors (offset2bag, which the CPU's
    sum kernel does not fill, aside: meta and CUDA write one id per index)."""
    dim, bags, ids = 16, 8, torch.randint(0, 1000, (32,))
    cpu, meta = bag_calls(1000, dim, ids, bags), bag_calls(1000, dim, ids, bags, device="meta")
    for name in ("aten::_embedding_bag", "aten::_embedding_bag_backward"):
        assert only(meta, name).read_bytes == only(cpu, name).read_bytes
    assert only(meta, "aten::_embedding_bag_backward").written_bytes == \
        only(cpu, "aten::_embedding_bag_backward").written_bytes
    assert only(meta, "aten::_embedding_bag").written_bytes == (bags * dim) * F32 + (32 + bags) * I64


def test_embedding_bag_sparse_max_and_per_sample_weights_backwards():
    dim, bags, n, rows = 16, 8, 32, 1000
    ids = torch.randint(0, rows, (n,))
    sparse = only(bag_calls(rows, dim, ids, bags, sparse=True), "aten::_embedding_bag_backward")
    assert sparse.written_bytes == n * dim * F32          # the sparse gradient's values, not a dense table
    assert sparse.read_bytes >= n * dim * F32
    biggest = only(bag_calls(rows, dim, ids, bags, mode="max"), "aten::_embedding_bag_backward")
    assert biggest.read_bytes == bags * dim * (F32 + I64)                   # the gradient and max_indices
    assert biggest.written_bytes == rows * dim * F32 + bags * dim * F32     # the zero fill, a row per bag added
    table, weights = torch.randn(rows, dim, requires_grad=True), torch.rand(n, requires_grad=True)
    calls = record(lambda: F.embedding_bag(ids, table, torch.arange(0, n, n // bags), per_sample_weights=weights,
                                           mode="sum").backward(torch.randn(bags, dim)))
    forward = only(calls, "aten::_embedding_bag")
    assert forward.read_bytes == n * dim * F32 + n * I64 + bags * I64 + n * F32  # ... and a weight per index
    weights_grad = only(calls, "aten::_embedding_bag_per_sample_weights_backward")
    assert weights_grad.written_bytes == n * F32
    assert weights_grad.read_bytes >= 2 * n * dim * F32   # a gradient row and a table row per index
