"""Kinds set by the SMs, not the bytes (planner/trace/kinds.py GATHER_BACKWARDS, gemm.py UNALIGNED_CYCLES): an
embedding bag's backward runs an embedding's backward kernels and is timed with their learned figures when no
profile showed it; a batch of tiny odd products (a recommender's feature interaction) runs at an element a cycle on
each SM, whatever the card's bandwidth."""

from __future__ import annotations

import pytest
from paths import REPO, load_script

from gpuplan_schema.payloads import TracedOp
from planner.trace.efficiency import Efficiency, Group, KindFit, Shape
from planner.trace.gemm import SIDE_POWER, SIDE_REF, UNALIGNED_CYCLES, Gemm, unaligned_s
from planner.trace.kinds import Roofs, kind_family
from planner.trace.training import group_of

H100 = Roofs({"bf16": 7.5e14, "tf32": 3.9e14}, 3.35e12, 132, 1.98e9)
H200 = Roofs({"bf16": 7.5e14, "tf32": 3.9e14}, 4.8e12, 132, 1.98e9)


def test_an_embedding_bags_backward_is_timed_with_the_learned_embedding_backward_when_unseen():
    assert kind_family("_embedding_bag_backward") == kind_family("embedding_dense_backward") == "gather_backward"
    assert kind_family("embedding") is None and kind_family("_embedding_bag") is None   # forwards: other kernels
    pooled = KindFit(1.5e-6, 1.4, 0)
    dense = KindFit(8e-5, 3.8, 20)
    efficiency = Efficiency(132, {}, {"embedding_dense_backward": dense, "add": KindFit(1e-6, 1.2, 40)}, pooled)
    bag = efficiency.unlearned("_embedding_bag_backward")
    assert (bag.per_call_s, bag.slowdown) == (dense.per_call_s, dense.slowdown)
    group = Group(calls=8, math_s=0.0, memory_s=1e-3)
    seconds, learned = efficiency.time_s("_embedding_bag_backward", "any", [group])
    assert seconds == pytest.approx(8 * 8e-5 + 3.8 * 8e-3) and not learned   # still in the unknown share


def _bmm(batch: int, m: int, n: int, k: int, dtype: str = "bf16") -> TracedOp:
    size = 2 if dtype == "bf16" else 4
    read, written = batch * (m * k + k * n) * size, batch * m * n * size
    return TracedOp("aten::bmm", "forward", 1, read, written, 1, dtype, [[batch, m, k], [batch, k, n]],
                    2.0 * batch * m * n * k)


def test_a_batch_of_tiny_odd_products_takes_an_element_a_cycle_on_each_sm_on_either_card():
    # dlrm-small's interaction at 1,048,576: 9 x 9 over 64, measured 4.0 ms forward on the H100 and the H200 alike
    op = _bmm(1_048_576, 9, 9, 64)
    elements = op.bytes / 2
    for roofs in (H100, H200):
        group = group_of(op, roofs, "bf16")
        assert group.sm_s == pytest.approx(elements / (132 * 1.98e9))
        assert group.roof_s(132, Shape(odd=0.2, even=0.45)) == pytest.approx(group.sm_s)   # above bytes and math
        assert group.sm_s > 4 * group.memory_s
    assert group_of(op, H100, "bf16").roof_s(132, Shape()) == group_of(op, H200, "bf16").roof_s(132, Shape())


def test_aligned_plain_or_unknown_products_keep_their_bytes_and_math():
    assert group_of(_bmm(1_048_576, 16, 16, 64), H200, "bf16").sm_s == 0.0          # 8-aligned: vector loads
    assert unaligned_s(Gemm(2048, 50257, 768), 1e9, 132, 1.98e9) == 0.0           # an LM head: the odd factor's
    assert unaligned_s(Gemm(9, 9, 64, 1024), 1e9, 0, 0.0) == 0.0                  # a GPU of unknown SMs
    large = group_of(_bmm(128, 30, 1024, 31), H200, "bf16")   # odd but reused: still above the element floor?
    assert large.sm_s > 0


def test_a_wider_odd_product_takes_fewer_cycles_an_element_as_the_grid_fitted():
    sms, clock = 132, 1.98e9
    dlrm, swin = Gemm(9, 9, 64, batch=1 << 20), Gemm(49, 49, 32, batch=24576)
    assert unaligned_s(dlrm, 1e9, sms, clock) == pytest.approx(1e9 * UNALIGNED_CYCLES / (sms * clock))
    per_element = unaligned_s(swin, 1e9, sms, clock) * sms * clock / 1e9
    assert per_element == pytest.approx(UNALIGNED_CYCLES * (SIDE_REF / 49) ** SIDE_POWER) and per_element < 0.5


def test_the_side_power_is_the_fit_of_the_committed_tiny_product_grid(capsys):
    fit = load_script(REPO / "benchmarks" / "tiny_bmm_fit.py")
    assert fit.main([]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert f"power {SIDE_POWER}:" in out and "Swin 49 x 49 x 32 (check)" in out
