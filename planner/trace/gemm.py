"""The shape of a matrix product, read from a traced op's input shapes, and how well a GPU fills it.

A GPU runs a matrix product (a convolution too, as an implicit GEMM) as tiles of the output spread over its SMs.
Three things keep it below the matmul roof that a large square product reaches:

- waves: the output's TILE x TILE tiles (smaller for a small product) run in waves of one per SM; the last wave
  is part-empty (a 768 x 768 product is 36 tiles on 132 SMs: 27 % of one wave busy);
- depth: each tile loads its operands before it multiplies, which a short reduction (K) cannot hide:
  efficiency K / (K + k_half);
- alignment: a dimension that is not a multiple of 8 elements (of 2-byte types) keeps cuBLAS off its fastest
  kernels (the gpt-small vocabulary of 50,257: `align1` kernels at a third of the roof on the H100).

`fill` returns the first two as one factor, `alignment` the third: off 8 but even (700: cuBLAS's align2 and align4
kernels) costs less than odd (50,257 and Transformer-XL's 267,735: `align1`, 6-9x below the roof on the H100).
planner/trace/efficiency.py learns k_half and the two alignment factors from the measured profiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TILE = 128
ALIGN = 8
SPLIT_DEPTH = 512   # the shallowest reduction a split-K piece is given
MAX_SPLIT = 16


@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    batch: int = 1
    vector: int | None = None   # the elements of one 16-byte load where its kernels take them from its dtype (None:
                                # its family's, efficiency.Shape): a pointwise NCHW convolution's (training.py)

    @property
    def alignment(self) -> int:
        """The largest of 8, 4, 2 and 1 elements that every dimension is a multiple of (a transposed operand's
        leading dimension is M, so all three count)."""
        return next(a for a in (ALIGN, 4, 2, 1) if self.m % a == 0 and self.n % a == 0 and self.k % a == 0)

    def fill(self, sms: int, k_half: float, split_waves: bool = False) -> float:
        """The share of the roof the tiles and the reduction depth allow (0-1). Too few tiles for the SMs and a
        deep reduction (a weight gradient: 768 x 768 over 61,440 tokens) are split along K as cuBLAS's split-K
        kernels do: into the number of pieces (each at least SPLIT_DEPTH deep) whose waves leave the fewest SMs
        idle."""
        tm, tn = _tile(self.m), _tile(self.n)
        tiles = self.batch * math.ceil(self.m / tm) * math.ceil(self.n / tn)
        splits = range(1, min(MAX_SPLIT, max(1, self.k // SPLIT_DEPTH)) + 1) if tiles < sms or split_waves else (1,)
        busy = max(tiles * s / (math.ceil(tiles * s / sms) * sms) for s in splits)   # the best split's waves
        used = (self.m * self.n * self.batch) / (tiles * tm * tn) * busy
        return max(1e-3, min(1.0, used)) * self.k / (self.k + k_half)


# A product with an odd dimension (gemm.py alignment 1) that reuses little of what it loads (a batch of tiny
# products: DLRM's feature interaction, a million 9 x 9 products over 64) is set by its kernels' element-by-element
# loads, not by its bytes at the bandwidth nor its tensor-core FLOPs: one element a cycle on each SM. dlrm-small's
# bmm took 0.96-1.06 SM cycles per element read and written on the H100 and on the H200 alike (the same 15.3 ms at
# 1,048,576 where their bandwidths differ 1.43x), in bf16 (cuBLAS's magma_sgemmEx and align1 wmma kernels) and in
# TF32 (xmma kernels), at batches 4,096 to 1,048,576 (results/*/roofline-dlrm-small*.json `kernels`); its bytes at
# the bandwidth were 2.5 (H100) to 3.4 (H200) ms of the 15.3. A large odd product (an LM head over a 50,257 vocabulary)
# reuses each element across a tile, and an odd plain product's kernels (cuBLAS's align1 tiles, its GEMV for a
# dimension of 1) are the `odd` factor's (efficiency.py): batched products alone take the element rate.
UNALIGNED_CYCLES = 1.0
# The element rate rises with the side past DLRM's 9 (a larger tile reuses what it loads): UNALIGNED_CYCLES ×
# (SIDE_REF / side) ** SIDE_POWER, side the square root of a product's output, fitted on the H200's tiny-product grid
# (benchmarks/tiny_bmm_fit.py: odd sides 9 to 33 over 64, results/h200/diagnostics/tiny-bmm-grid-2026-11-28; one
# cycle over-timed them by a median 48 %, the power by 3 %) and checked on Swin's 49 x 49 x 32 window products
# (results/h200/diagnostics/scan-grid-2026-11-28: 0.37-0.76 cycles; one cycle +109 %, the power -25 %)
SIDE_REF = 9
SIDE_POWER = 0.6


def unaligned_s(gemm: Gemm | None, elements: float, sms: int, clock_hz: float) -> float:
    """Per call, an odd batched product's element loads at UNALIGNED_CYCLES an element on each SM (0: aligned, not
    batched, or the GPU's SMs or clock unknown)."""
    if gemm is None or gemm.batch == 1 or gemm.alignment != 1 or sms <= 0 or clock_hz <= 0:
        return 0.0
    side = math.sqrt(gemm.m * gemm.n)
    return elements * UNALIGNED_CYCLES * min(1.0, (SIDE_REF / side) ** SIDE_POWER) / (sms * clock_hz)


def _tile(dim: int) -> int:
    """The tile side a library picks for a dimension: TILE, or for a smaller dimension the power of two that covers
    it (at least 16): cuBLAS has kernels with small tiles for small products, and a batched 27 x 27 product does not
    leave 95 % of a 128 x 128 tile empty."""
    return TILE if dim >= TILE else max(16, 1 << max(0, dim - 1).bit_length())


def _dims(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def gemm_of(kind: str, shapes: list[list[int]], flops_per_call: float | None) -> Gemm | None:
    """The product a matmul-kind op computes, from its first input shapes; None where they do not say."""
    try:
        if kind == "mm" and len(shapes) >= 2:
            (m, k), (_, n) = shapes[0][-2:], shapes[1][-2:]
            return Gemm(m, n, k)
        if kind == "addmm" and len(shapes) >= 3:
            (m, k), (_, n) = shapes[1][-2:], shapes[2][-2:]
            return Gemm(m, n, k)
        if kind in ("bmm", "baddbmm") and len(shapes) >= 2:
            a, b = shapes[-2], shapes[-1]
            return Gemm(a[-2], b[-1], a[-1], _dims(a[:-2]))
        if kind in ("convolution", "convolution_backward") and len(shapes) >= 2 and flops_per_call:
            weight = shapes[1] if kind == "convolution" else shapes[2] if len(shapes) > 2 else shapes[1]
            n, k = weight[0], _dims(weight[1:])
            m = max(1, round(flops_per_call / (2 * n * k * (2 if kind == "convolution_backward" else 1))))
            return Gemm(m, n, k)
    except (IndexError, ValueError, TypeError, ZeroDivisionError):
        return None
    return None
