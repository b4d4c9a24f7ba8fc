"""A compiled step's unaligned matrix products: torch.compile's pad_mm pass pads a compute-bound mm, addmm or bmm off
its alignment, so the compiled step does not pay the alignment factors (planner/trace/efficiency.py PADDED_KINDS,
learn.py CompileModel); an unaligned product too small to be compute-bound keeps them, as Inductor leaves it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from collectors.trace.collect import trace_run
from collectors.workloads import Workload
from planner.trace.efficiency import Efficiency, KindFit, Shape
from planner.trace.kinds import Roofs
from planner.trace.learn import CompileModel
from planner.trace.predict import HostModel, predict_step

ROOFS = Roofs({"fp32": 50e12, "tf32": 400e12, "bf16": 800e12}, 3e12, 132, 1.98e9)
ODD = Shape(odd=0.25, even=0.5)   # an odd product at a quarter of an aligned one's rate


def head(vocab: int, width: int = 768) -> Workload:
    """An LM head: a token's features to the vocabulary's logits (gpt-small's 768 -> 50,257)."""
    with torch.device("meta"):
        model = nn.Linear(width, vocab, bias=False)

    def make_batch(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(n, width, device=device), torch.randint(0, vocab, (n,), device=device)
    return Workload(f"head-{vocab}", model, make_batch, nn.functional.cross_entropy)


def efficiency() -> Efficiency:
    return Efficiency(ROOFS.sms, {"gemm": ODD}, {"mm/half": KindFit(0.0, 1.0, 1)}, KindFit(0.0, 1.0, 0))


def products(vocab: int, batch: int, precision: str = "bf16") -> tuple[float, float]:
    """(the products' eager seconds, what the compiled step does not pay of them)."""
    run = trace_run(head(vocab), precision, batch)
    assert run.status == "ok", run.reason
    step = predict_step(run, efficiency(), ROOFS, _host())
    ops = [o for o in step.ops if o.kind == "mm"]
    return sum(o.seconds for o in ops), sum(o.padded_s for o in ops)


def _host() -> HostModel:
    return HostModel({}, 0.0)   # no host time: the GPU's alone


def test_a_compute_bound_odd_product_is_padded_in_a_compiled_step():
    eager, padded = products(50257, 8192)
    aligned, none = products(50304, 8192)
    assert none == 0.0                            # aligned: nothing to pad
    assert padded > 0.5 * eager                   # a quarter of the rate: three quarters of the time is alignment
    assert eager - padded == pytest.approx(aligned * 50257 / 50304, rel=0.02)   # the aligned product's time


def test_an_odd_product_too_small_to_be_compute_bound_is_not_padded():
    eager, padded = products(50257, 2, "bf16")    # two tokens: a matrix-vector product, bound by the weight's bytes
    assert eager > 0 and padded == 0.0


def test_plain_fp32_products_have_nothing_to_pad():
    assert products(50257, 8192, "fp32")[1] == 0.0   # cuBLAS's SIMT kernels take any shape


def test_the_compiled_step_leaves_out_what_padding_removes():
    run = trace_run(head(50257), "bf16", 8192)
    step = predict_step(run, efficiency(), ROOFS, _host())
    padded = sum(p.padded_s for p in step.phases)
    assert padded > 0
    compiled = CompileModel(fused=1.0, host=1.0).step_s(step, 4.0)
    assert compiled == pytest.approx(step.step_s - padded, rel=0.02)
