"""examples/transformer_xl.py, DLE's Transformer-XL base as Lambda ran it (`transformerxlbase`: full softmax over
WikiText-103's 267,735 words): the real size has Lambda's logged parameter count and the docstring's FLOPs (built
on the `meta` device: no memory, no compute), rel_shift and the memory give each query DLE's 384 keys, and the
tiny size trains on the CPU through the collector's own step, across a change of batch size and under
torch.compile."""

from __future__ import annotations

import math

import pytest
import torch
from example_workloads import loaders
from test_ssd300 import one_thread, parameters, step_flops  # noqa: F401  (one_thread: the same autouse one-thread fixture)

from collectors.core.profiles import QUICK
from collectors.workloads import Workload
from collectors.workloads.sweep_plan import build_sweep_plan
from collectors.workloads.training import Variant, build_step, prepare_model

PATH = "examples/transformer_xl.py"
CPU, META, CUDA = torch.device("cpu"), torch.device("meta"), torch.device("cuda")
LAMBDA_PARAMETERS = 191_948_759      # the run logs' "#params", and "#non emb params" below
LAMBDA_LAYER_PARAMETERS = 54_599_680
TRAIN_GFLOP_PER_TOKEN = 1.2573       # the docstring's count at batch 48: FlopCounterMode, forward + backward

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them


tiny, real_on_meta, module = loaders(PATH)


# ── the real size ──────────────────────────────────────────────────────────────────────────────

def test_real_size_is_lambdas_transformer_xl_base():
    workload = real_on_meta()
    assert workload.name == "transformer-xl-base" and workload.training
    assert workload.unit == "segments" and workload.tokens_per_sample == 192   # Lambda counts target tokens
    model = workload.model
    assert parameters(model) == LAMBDA_PARAMETERS and parameters(model.layers) == LAMBDA_LAYER_PARAMETERS
    assert model.word_emb.weight.shape == (267735, 512) and len(model.layers) == 16
    assert build_sweep_plan(workload.name, workload, QUICK, CUDA).main_batch == 48  # under Lambda's fp32 52
    (tokens, targets), same = workload.make_batch(2, META)
    assert tokens.shape == targets.shape == (192, 2) and same is targets
    nll = workload.forward((tokens, targets))
    assert nll.shape == (192, 2) and workload.loss(nll, targets).dim() == 0
    assert model.mems.shape == (16, 192, 2, 512)


def test_flops_per_token_match_the_docstring():
    assert step_flops(real_on_meta(), 48) / (48 * 192) / 1e9 == pytest.approx(TRAIN_GFLOP_PER_TOKEN, abs=1e-4)


# ── relative positions and the memory ──────────────────────────────────────────────────────────

def test_rel_shift_aligns_each_query_with_its_distances():
    """Column c of the input is distance klen − 1 − c; after the shift, (i, j) holds distance mem + i − j."""
    qlen, klen = 3, 5
    mem = klen - qlen
    x = torch.arange(qlen * klen, dtype=torch.float32).view(1, 1, qlen, klen)
    shifted = module().rel_shift(x)
    for i in range(qlen):
        for j in range(mem + i + 1):          # the keys query i may see
            assert shifted[0, 0, i, j] == x[0, 0, i, j + qlen - 1 - i]
    # the last query reads its row unshifted; the first is moved left by qlen − 1
    assert shifted[0, 0, -1].tolist() == x[0, 0, -1].tolist()
    assert shifted[0, 0, 0, : mem + 1].tolist() == x[0, 0, 0, qlen - 1:].tolist()


def test_attention_spans_memory_and_segment():
    """Every layer's scores cover tgt_len + mem_len keys; query i sees keys 0 … mem_len + i; the memory is the
    last step's layer inputs, detached."""
    workload = tiny()
    model = workload.model
    (tokens, targets), _ = workload.make_batch(3, CPU)
    seen: list[torch.Size] = []
    masks: list[torch.Tensor] = []
    originals = []
    for layer in model.layers:
        attention = layer.dec_attn
        original = attention.forward
        originals.append((attention, original))

        def spy(x, pos, r_w_bias, r_r_bias, mask, memory, original=original):
            seen.append(torch.Size((x.shape[0], memory.shape[0] + x.shape[0], pos.shape[0])))
            masks.append(mask)
            return original(x, pos, r_w_bias, r_r_bias, mask, memory)
        attention.forward = spy
    try:
        model((tokens, targets))
        first = model.mems.clone()
        model((tokens, targets))
    finally:
        for attention, original in originals:
            attention.forward = original
    assert all(s == (8, 16, 16) for s in seen)                  # qlen 8, klen 8 + 8, 16 position vectors
    visible = (~masks[0]).sum(dim=1).tolist()
    assert visible == [8 + i + 1 for i in range(8)]
    assert model.mems.shape == (2, 8, 3, 32) and not model.mems.requires_grad
    assert not torch.equal(first, torch.zeros_like(first))   # the second step read the first one's states


def test_batch_size_can_change_between_steps():
    workload = tiny()
    model = workload.model
    for batch in (2, 5, 2):
        inputs, targets = workload.make_batch(batch, CPU)
        loss = workload.loss(model(inputs), targets)
        loss.backward()
        assert math.isfinite(loss.item()) and model.mems.shape == (2, 8, batch, 32)


# ── the tiny size, on the CPU ──────────────────────────────────────────────────────────────────

def test_tiny_keeps_the_real_structure():
    """The same modules in the same order, layer for layer (the tiny size has 2 layers of the real 16)."""
    def shape(w: Workload) -> list[str]:
        return [type(m).__name__ for m in w.model.layers[0].modules()] + [n for n, _ in w.model.named_children()]
    assert shape(tiny()) == shape(real_on_meta())


def test_tiny_size_trains_and_every_parameter_gets_a_gradient():
    torch.manual_seed(0)
    workload = tiny()
    model = workload.model
    inputs, targets = workload.make_batch(4, CPU)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(4):
        optimizer.zero_grad(set_to_none=True)
        loss = workload.loss(model(inputs), targets)
        loss.backward()
        losses.append(loss.item())
        for name, p in model.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name
        optimizer.step()
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0] - 0.5
    assert losses[0] == pytest.approx(math.log(1000), abs=0.3)  # an untrained model: about ln(vocabulary)


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_collector_step_runs(precision):
    torch.manual_seed(0)
    workload = tiny()
    model = prepare_model(workload, CPU, Variant())
    before = [p.detach().clone() for p in model.parameters()]
    step = build_step(workload, model, precision, workload.batch_start, CPU, Variant())
    for _ in range(2):
        step.run()
    assert all(not torch.equal(a, p.detach()) for a, p in zip(before, model.parameters(), strict=True))


def test_memory_works_under_torch_compile():
    """Dynamo traces the memory's read and replacement (aot_eager: no C++ compiler needed) and gives eager's NLLs."""
    torch.manual_seed(0)
    workload = tiny()
    model = workload.model.eval()
    inputs, targets = workload.make_batch(2, CPU)
    compiled = torch.compile(model, backend="aot_eager")
    with torch.no_grad():
        eager = [model(inputs) for _ in range(2)]
        model.mems = None
        traced = [compiled(inputs) for _ in range(2)]
    for a, b in zip(eager, traced, strict=True):
        torch.testing.assert_close(a, b)
    assert model.mems.shape == (2, 8, 2, 32)
