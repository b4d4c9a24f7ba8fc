"""A layer norm's forward timed by the share of the GPU its one block per row fills (planner/trace/rows.py), and an
unaligned cuBLAS product's factors carried between its math classes at one FLOP rate (efficiency.py Shape.of)."""

from __future__ import annotations

import pytest

from collectors.trace.collect import load_on_meta, trace_run
from gpuplan_schema.payloads import TracedOp, TraceRun
from planner.trace.efficiency import Efficiency, Group, KindFit, Row, Shape, fit_efficiency
from planner.trace.gemm import Gemm
from planner.trace.kinds import Roofs, kind_family
from planner.trace.references import REFERENCE_SPECS
from planner.trace.rows import RowGrid, rows_of
from planner.trace.training import traced_kinds

ROOFS = Roofs({"bf16": 8e14, "tf32": 4e14}, 3e12)


def test_a_row_fills_the_lanes_of_its_block_as_atens_vectorised_kernel_covers_it():
    many = 132 * 16 * 1000   # whole waves of the H100's 132 SMs x 16 blocks
    assert RowGrid(many, 192).fill(132) == pytest.approx(48 / 128, rel=1e-3)   # ViT-tiny: 48 vectors, 128 threads
    assert RowGrid(many, 768).fill(132) == pytest.approx(192 / 256, rel=1e-3)  # 2 passes, the second half empty
    assert RowGrid(many, 1024).fill(132) == pytest.approx(1.0, rel=1e-3)
    assert RowGrid(many, 190).fill(132) == pytest.approx(190 / 256, rel=1e-3)  # not 4-wide: one element a thread
    # a few rows (a decoder's one token) fill a few of the 132 x 16 block slots
    assert RowGrid(132 * 16 // 4, 1024).fill(132) == pytest.approx(0.25)


def test_the_normalised_width_is_the_weights_else_the_last_dimension():
    assert rows_of([[8, 197, 192], [192], [192]]) == RowGrid(8 * 197, 192)
    assert rows_of([[8, 64, 7, 7], [64, 7, 7], [64, 7, 7]]) == RowGrid(8, 64 * 49)   # LayerNorm([C, H, W])
    assert rows_of([[8, 197, 192]]) == RowGrid(8 * 197, 192)                         # no affine weight
    assert rows_of([]) is None


def _layer_norm(width: int, rows: int = 2**20) -> TracedOp:
    nbytes = 4 * rows * width   # fp32 under autocast: read once, written once
    return TracedOp("aten::native_layer_norm", "forward", 1, nbytes, nbytes, 1, "fp32", [[rows, width], [width],
                    [width]])


def test_a_narrow_layer_norm_takes_longer_per_byte_than_a_wide_one_with_one_learned_slowdown():
    fit = KindFit(0.0, 1.2, 30)
    efficiency = Efficiency(132, {}, {"native_layer_norm": fit}, KindFit(5e-6, 2.0, 0))
    times, excess = {}, {}
    for width in (192, 768, 1024):
        rows = 2**28 // width   # the same bytes
        groups = traced_kinds(TraceRun("bf16", 1, "ok", ops=[_layer_norm(width, rows)]), ROOFS)[
            ("native_layer_norm", "any")]
        times[width] = efficiency.time_s("native_layer_norm", "any", groups)[0]
        excess[width] = efficiency.plane_excess_s("native_layer_norm", "any", groups)
    # the measured H100 ratios of these widths' times per byte were 3.4-3.6 : 1.4-1.5 : 1.2-1.3
    assert times[192] / times[1024] == pytest.approx(1024 / 384, rel=0.02)
    assert times[768] / times[1024] == pytest.approx(4 / 3, rel=0.02)
    # the excess over full blocks is what a compiled step drops (Inductor's own reductions fill the GPU)
    assert excess[192] / times[192] == pytest.approx(1 - 0.375, rel=0.02)
    assert excess[1024] / times[1024] < 0.01


def test_a_traced_vit_layer_norm_runs_its_rows_and_its_backward_stays_on_its_bytes():
    run = trace_run(load_on_meta(REFERENCE_SPECS["vit-tiny"]), "bf16", 2)
    kinds = traced_kinds(run, ROOFS)
    forward, backward = kinds[("native_layer_norm", "any")], kinds[("native_layer_norm_backward", "any")]
    assert {g.plane for g in forward} == {RowGrid(2 * 197, 192)}
    assert all(g.memory_s == 0 and g.plane_s > 0 for g in forward)
    assert all(g.plane is None and g.memory_s > 0 for g in backward)


def test_a_layer_norms_per_row_slowdown_teaches_no_family_nor_the_pool():
    assert kind_family("native_layer_norm") is None
    assert kind_family("native_group_norm") == "normalization"
    rows = [Row(kind, "any", (Group(10, 0.0, 1e-3),), 10 * slowdown * 1e-3, 0.1, "w")
            for kind, slowdown in (("native_layer_norm", 1.1), ("_fused_rms_norm", 2.8), ("add", 1.3))
            for _ in range(3)]
    efficiency = fit_efficiency(rows, 132)
    assert efficiency.unlearned("native_group_norm").slowdown == pytest.approx(2.8)
    assert efficiency.pooled.slowdown == pytest.approx((2.8 + 1.3) / 2)


def _product(m: int, n: int, k: int, roofs_flops: float, calls: int = 1) -> Group:
    return Group(calls, 2 * m * n * k / roofs_flops, 0.0, Gemm(m, n, k))


def test_an_unaligned_tf32_product_runs_at_the_half_products_flop_rate_and_4_aligned_is_aligned():
    shape = Shape(even=0.45, odd=0.2, tf32_scale=2.0)
    assert shape.of("half") == shape
    tf32 = shape.of("tf32")
    assert (tf32.odd, tf32.even, tf32.aligned(4), tf32.aligned(2)) == (pytest.approx(0.4), 0.9, 1.0, 0.9)
    assert shape.aligned(4) == 0.45   # a half product's 16-byte loads are of 8 elements
    assert Shape(odd=0.2).of("tf32") == Shape(odd=0.2)   # no scale (cuDNN's convolutions): alike in every class
    assert Shape(odd=0.7, tf32_scale=2.0).of("tf32").odd == 1.0
    assert ROOFS.half_over_tf32 == 2.0 and Roofs({"bf16": 8e14}, 3e12).half_over_tf32 == 1.0


def test_odd_products_of_one_flop_rate_in_bf16_and_tf32_teach_one_odd_factor():
    rows = []   # an odd product draws one FLOP rate in either class: 0.2 of the half roof, 0.4 of the TF32 one
    for cls, roof in (("half", 8e14), ("tf32", 4e14)):
        for tokens in (8192, 32768, 65536):
            aligned = _product(tokens, 3072, 768, roof, 12)   # at the roof: what pins the kind's slowdown to 1
            rows.append(Row("mm", cls, (aligned,), aligned.roof_s(132, Shape()), 1.0, "w"))
            odd = _product(tokens, 50257, 768, roof)
            assert odd.gemm is not None and odd.gemm.alignment == 1
            measured = odd.roof_s(132, Shape(odd=0.2 * 8e14 / roof)) + aligned.roof_s(132, Shape())
            rows.append(Row("mm", cls, (odd, aligned), measured, 1.0, "w"))
    efficiency = fit_efficiency(rows, 132, tf32_scale=2.0)
    assert efficiency.shapes["gemm"].odd == 0.2
    for row in rows:
        predicted, _ = efficiency.time_s("mm", row.cls, row.groups)
        assert predicted == pytest.approx(row.measured_s, rel=0.01)
