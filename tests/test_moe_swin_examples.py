"""What makes the two newest out-of-sample examples what their docstrings say (their sizes, CPU step and trace are
tested with the other examples in test_new_examples.py): moe-lm's top-2 routing with a fixed capacity (each token's
output is its two experts' weighted sum, dropped choices add nothing, first choices are served first, the balance
loss is 1 when the router is uniform) and swin-tiny's windows (partition and reverse are inverses, the relative
position bias depends on the offset alone, the shift mask separates the rolled-in regions and only those)."""

from __future__ import annotations

import pytest
import torch
from example_workloads import loaders

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them

MOE, SWIN = "examples/moe_lm.py", "examples/swin_tiny.py"


def moe_layer(d_model: int = 16, hidden: int = 24) -> torch.nn.Module:
    module = loaders(MOE)[2]()
    torch.manual_seed(0)
    return module.MoE(d_model, hidden).eval()


def dense_top2(moe: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The routing's meaning computed token by token: its two most probable experts, weighted by their renormalised
    probabilities, no capacity."""
    probs = moe.router(x).softmax(-1)
    weight, expert = probs.topk(2, dim=-1)
    weight = weight / weight.sum(-1, keepdim=True)
    rows = [sum(w * moe.experts[int(e)](t) for w, e in zip(ws, es, strict=True))
            for t, ws, es in zip(x, weight, expert, strict=True)]
    return torch.stack(rows)


def test_moe_output_is_each_tokens_two_experts_weighted_when_none_is_dropped():
    """Token i routed to experts i mod 8 and i + 1 mod 8 (a router reading the first 8 features): each expert gets
    its even share, under the capacity, and every token's output is the dense top-2 computation's."""
    moe = moe_layer()
    module = loaders(MOE)[2]()
    with torch.no_grad():
        moe.router.weight.copy_(torch.cat([torch.eye(8), torch.zeros(8, 8)], 1))
    x = torch.randn(40, 16) * 0.1
    rows = torch.arange(40)
    x[rows, rows % 8], x[rows, (rows + 1) % 8] = 3.0, 2.0
    expert, slot, _, _ = moe.route(x)
    assert torch.bincount(expert, minlength=8).tolist() == [10] * 8 and module.capacity(40, 8) == 13
    assert bool((slot >= 0).all())
    with torch.no_grad():
        y, _ = moe(x.unsqueeze(0))
        assert torch.allclose(y[0], dense_top2(moe, x), atol=1e-5)


def test_moe_drops_the_choices_past_an_experts_capacity_first_choices_first():
    """Every token routed first to expert 3 and second to expert 5: expert 3 takes the first `capacity` tokens'
    first choices, expert 5 their second ones, and the rest of the tokens get nothing from either."""
    moe = moe_layer()
    module = loaders(MOE)[2]()
    with torch.no_grad():
        moe.router.weight.zero_()
        moe.router.weight[3, 0], moe.router.weight[5, 0] = 2.0, 1.0
    x = torch.randn(64, 16)
    x[:, 0] = 4.0  # expert 3 most probable, 5 next, for every token
    cap = module.capacity(64, 8)
    expert, slot, weight, _ = moe.route(x)
    assert cap == 20 and expert[:64].eq(3).all() and expert[64:].eq(5).all()
    assert torch.equal(slot[:64], torch.where(torch.arange(64) < cap, torch.arange(64), -1))
    with torch.no_grad():
        y, _ = moe(x.unsqueeze(0))
        served = dense_top2(moe, x[:cap])
    assert torch.allclose(y[0, :cap], served, atol=1e-5)
    assert torch.count_nonzero(y[0, cap:]) == 0


def test_moe_balance_loss_is_one_for_a_uniform_router_and_more_when_skewed():
    moe = moe_layer()
    x = torch.randn(32, 16)
    with torch.no_grad():
        moe.router.weight.zero_()
        uniform = moe.route(x)[3]
        moe.router.weight[2, 0] = 5.0
        skewed = moe.route(x.abs())[3]
    assert float(uniform) == pytest.approx(1.0) and float(skewed) > 1.5


def test_moe_lm_returns_logits_and_the_layers_balance_loss_in_its_loss():
    workload = loaders(MOE)[0]()
    ids, targets = workload.make_batch(2, torch.device("cpu"))
    with torch.no_grad():
        logits, balance = workload.forward(ids)
    assert logits.shape == (2, workload.tokens_per_sample, 512) and balance.dim() == 0
    assert float(balance) == pytest.approx(8.0, rel=0.3)  # eight layers, each near 1 at initialisation
    ce = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    assert float(workload.loss((logits, balance), targets)) == pytest.approx(float(ce + 0.01 * balance))
    assert workload.model.head.weight is workload.model.tokens.weight


def test_swin_windows_partition_and_reverse_are_inverses():
    module = loaders(SWIN)[2]()
    x = torch.randn(2, 14, 21, 5)
    windows = module.window_partition(x, 7)
    assert windows.shape == (2 * 2 * 3, 49, 5)
    assert torch.equal(windows[1].view(7, 7, 5), x[0, :7, 7:14])  # row-major windows
    assert torch.equal(module.window_reverse(windows, 7, 14, 21), x)


def test_swin_relative_position_bias_depends_on_the_offset_alone():
    module = loaders(SWIN)[2]()
    index = module.relative_position_index(7)
    assert index.shape == (49, 49) and int(index.min()) == 0 and int(index.max()) == 168
    assert index.unique().numel() == 169 and bool((index.diagonal() == 84).all())  # offset (0, 0): the middle
    # (1,2)->(3,5) and (0,0)->(2,3): the same offset (2, 3), the same row; (3,5)->(1,2) the opposite one
    assert index[1 * 7 + 2, 3 * 7 + 5] == index[0, 2 * 7 + 3] != index[3 * 7 + 5, 1 * 7 + 2]


def test_swin_shift_mask_separates_the_rolled_in_regions_only():
    module = loaders(SWIN)[2]()
    mask = module.shift_mask(56, 7, 3)
    assert mask.shape == (64, 49, 49) and set(mask.unique().tolist()) == {0.0, module.MASKED}
    inner = [w for w in range(64) if w % 8 != 7 and w // 8 != 7]   # windows away from the bottom and right edges
    assert not mask[inner].any() and mask[7].any() and mask[56].any() and mask[63].any()
    assert torch.equal(mask, mask.transpose(1, 2))
    corner = mask[63].view(7, 7, 7, 7)  # the last window holds four regions: rows < 4 or not, columns < 4 or not
    assert corner[0, 0, 3, 3] == 0 and corner[0, 0, 4, 4] == module.MASKED and corner[5, 5, 6, 6] == 0


def test_swin_tiny_shifts_every_other_block_where_the_map_is_larger_than_a_window():
    real = loaders(SWIN)[1]()
    blocks = [m for m in real.model.modules() if type(m).__name__ == "SwinBlock"]
    assert [b.shift for b in blocks] == [0, 3, 0, 3, 0, 3, 0, 3, 0, 3, 0, 0]
    assert [round(b.drop, 3) for b in blocks][::11] == [0.0, 0.2]
    images, labels = real.make_batch(3, torch.device("meta"))
    assert images.shape == (3, 3, 224, 224) and real.forward(images).shape == (3, 1000)
