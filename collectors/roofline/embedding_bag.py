"""The bytes nn.EmbeddingBag's aten ops move, counted as PyTorch's CUDA kernels move them.

The generic rule of op_accounting.py (every argument read once, every output written once) is wrong both ways for
an embedding bag: its forward would read the whole table, its backward only the indices and the incoming gradient.
A recommender's tables are gigabytes and its batches millions, so both errors grow with the model.

Forward (`_embedding_bag`, `_embedding_bag_forward_only`; aten/src/ATen/native/cuda/EmbeddingBag.cu,
EmbeddingBag_updateOutputKernel_sum_mean / _max): one thread per (bag, feature) loops over its bag's indices and
reads one table row per index: indices + offsets + per-sample weights + indices × row, NOT capped at the table
(unlike op_accounting's GATHERS): with random ids in a table larger than the L2 a row picked twice is fetched twice.
dlrm-small's H100 profile (results/h100-80gb/roofline-dlrm-small.json) ran 0.28-0.31 ns an index from batch 16,384 to
1,048,576, where the indices are twice the table's rows; capped, the 1 M batch would move what the 512 k does. Its
outputs are written as the generic rule counts them.

Backward, dense, sum or mean (`_embedding_bag_backward` with sparse=False, `_embedding_bag_dense_backward`;
EmbeddingBag.cu embedding_bag_backward_cuda_sum_avg, then EmbeddingBackwardKernel.cu
embedding_backward_cuda_kernel):
- the gradient of the table is zero-filled (`at::zeros`): the whole table written;
- the indices are sorted with their positions (an `arange` of them) by `cuda::cub::radix_sort_pairs` over all the
  key's bits: a histogram pass, then one pass per 8 bits (8 for int64: the H100 profile shows 8 onesweep kernels a
  call), each reading and writing keys and values;
- `unique_by_key` finds the segments (the distinct rows, at most min(indices, table rows));
- compute_grad_weight_bags reads, per index, its position, its bag (offset2bag), the bag's gradient row (and its
  per-sample weight, its bag's size for a mean), and writes one partial row per segment in the accumulate type
  (fp32 for half types; segments of over 10 indices write several: not counted);
- sum_and_scatter reads the partial rows and writes each segment's row of the gradient.
Per index that is about two row reads and two row writes plus 32 sort bytes a key byte; the zero fill is the part
that does not grow with the batch.

Backward, max mode (embedding_bag_backward_cuda_max): zero fill, then per (bag, feature) read max_indices and the
gradient and add it into its row: the gradient and max_indices read, the table and a row per bag written.
Backward, sparse (EmbeddingBag.cpp _embedding_bag_sparse_backward): `grad.index_select(0, offset2bag)`, a row per
index read and written (the values of the sparse gradient), scaled in place by per-sample weights if any.
Per-sample weights' gradient (`_embedding_bag_per_sample_weights_backward`, EmbeddingBag.cu): per index a gradient
row and a table row read, one element written.
"""

from __future__ import annotations

from typing import Any

import torch

FORWARD = frozenset({"_embedding_bag", "_embedding_bag_forward_only"})
BACKWARD = frozenset({"_embedding_bag_backward", "_embedding_bag_dense_backward"})
PER_SAMPLE_WEIGHTS_BACKWARD = "_embedding_bag_per_sample_weights_backward"
OPS = FORWARD | BACKWARD | {PER_SAMPLE_WEIGHTS_BACKWARD}
MEAN, MAX = 1, 2
SORT_BITS_PER_PASS = 8   # CUB's onesweep radix sort digit


def _size(t: torch.Tensor | None) -> int:
    return 0 if t is None else t.numel() * t.element_size()


def _accumulate_size(t: torch.Tensor) -> int:
    """Bytes of CUDA's accumulate type of the gradient's dtype (acc_type: fp32 for fp16/bf16/fp32, fp64 for fp64)."""
    return max(4, t.element_size())


def _sort_bytes(keys: int, key_size: int) -> int:
    """Bytes radix_sort_pairs reads (and as many it writes) sorting `keys` keys with as many values of one size,
    over all the key's bits: one pass per digit, each reading keys and values (the histogram pass counted apart)."""
    return key_size * 8 // SORT_BITS_PER_PASS * 2 * keys * key_size


def forward_bytes(named: dict[str, Any], fresh_bytes: int) -> tuple[int, int]:
    weight, indices = named["weight"], named["indices"]
    row = weight.size(1) * weight.element_size()
    read = indices.numel() * row + _size(indices) + _size(named.get("offsets")) + _size(named.get("per_sample_weights"))
    return read, fresh_bytes


def dense_backward_bytes(named: dict[str, Any], fresh_bytes: int) -> tuple[int, int]:
    """(read, written) of the dense sum/mean backward (module docstring); `fresh_bytes`: the zero-filled gradient."""
    grad, indices, weights = named["grad"], named["indices"], named.get("per_sample_weights")
    n, key = indices.numel(), indices.element_size()
    row, partial_row = grad.size(1) * grad.element_size(), grad.size(1) * _accumulate_size(grad)
    segments = min(n, int(named["num_weights"]))
    sort = _sort_bytes(n, key)
    # per index in compute_grad_weight_bags: its position, its bag, the bag's gradient row, [weight], [bag size]
    per_index = 2 * key + row + (weights.element_size() if weights is not None else 0) + \
        (key if named["mode"] == MEAN else 0)
    # scale_grad_by_freq: two scans by key over the sorted indices (read keys, write counts; read keys and counts,
    # write counts), then a count read per index
    freq_read, freq_written = (4 * n * key, 2 * n * key) if named.get("scale_grad_by_freq") else (0, 0)
    read = (n * key + sort              # the sort's histogram pass, then its passes
            + n * key                   # unique_by_key over the sorted indices
            + n * per_index + freq_read
            + segments * (partial_row + key))       # sum_and_scatter: the partial rows, each segment's row id
    written = (n * key + sort           # the positions (arange), then the sort's passes
               + segments * key         # the segments' offsets
               + segments * (partial_row + row)     # the partial rows, then the gradient's rows
               + freq_written + fresh_bytes)
    return read, written


def max_backward_bytes(named: dict[str, Any], fresh_bytes: int) -> tuple[int, int]:
    grad = named["grad"]
    return _size(grad) + _size(named["maximum_indices"]), fresh_bytes + _size(grad)


def sparse_backward_bytes(named: dict[str, Any]) -> tuple[int, int]:
    grad, indices = named["grad"], named["indices"]
    rows = indices.numel() * grad.size(1) * grad.element_size()
    scaled = rows if named.get("per_sample_weights") is not None else 0
    return rows + _size(named["offset2bag"]) + scaled + _size(named.get("per_sample_weights")), rows + scaled


def per_sample_weights_backward_bytes(named: dict[str, Any], fresh_bytes: int) -> tuple[int, int]:
    grad, weight, indices = named["grad"], named["weight"], named["indices"]
    rows = indices.numel() * (grad.size(1) * grad.element_size() + weight.size(1) * weight.element_size())
    return rows + _size(indices) + _size(named["offset2bag"]), fresh_bytes


def count_embedding_bag(base: str, named: dict[str, Any], fresh_bytes: int) -> tuple[int, int]:
    """(bytes read, bytes written) of one embedding-bag op `base` (in OPS), its arguments by schema name and the bytes
    of its fresh outputs as op_accounting counts them."""
    if base in FORWARD:
        return forward_bytes(named, fresh_bytes)
    if base == PER_SAMPLE_WEIGHTS_BACKWARD:
        return per_sample_weights_backward_bytes(named, fresh_bytes)
    if named.get("sparse"):
        return sparse_backward_bytes(named)
    if named["mode"] == MAX:
        return max_backward_bytes(named, fresh_bytes)
    return dense_backward_bytes(named, fresh_bytes)
