"""examples/gnmt.py, DLE's GNMT v2 as Lambda ran it (`gnmt`): the real size has Lambda's logged parameter count and
module tree and the docstring's FLOPs (built on the `meta` device: no memory, no compute), its sentences are the
docstring's average bucketed batch and carry DLE's 48 tokens a pair, the loss is DLE's label smoothing, the FLOP
formulas for the fused LSTM kernels agree with torch's own decomposition, and the tiny size trains on the CPU
through the collector's own step."""

from __future__ import annotations

import math
import sys
from types import ModuleType

import pytest
import torch
from test_ssd300 import one_thread, parameters, step_flops  # noqa: F401  (one_thread: the same autouse one-thread fixture)

from collectors.core.profiles import QUICK
from collectors.workloads import Workload, load_workload
from collectors.workloads.accounting import count_flops
from collectors.workloads.sweep_plan import build_sweep_plan
from collectors.workloads.training import Variant, build_step, prepare_model
from planner.specs.published import load_published

PATH = "examples/gnmt.py"
CPU, META, CUDA = torch.device("cpu"), torch.device("meta"), torch.device("cuda")
LAMBDA_PARAMETERS = 159_605_817       # the fp16 logs' "Number of parameters" (vocabulary 31,800)
LAMBDA_FP32_PARAMETERS = 159_593_523  # the fp32 logs' (vocabulary 31,794: DLE pads it to 8 for fp16 and tf32 only)
TRAIN_GFLOP_PER_SENTENCE = 22.415     # the docstring's count at batch 1024: FlopCounterMode, forward + backward
DLE_TOKENS_PER_PAIR = 48              # source tokens with <s> and </s>, target tokens but one
# The leaf modules of DLE's GNMT as Lambda's logs print them (…/PyTorch_gnmt_FP16/14-02-2023_05-44-32.txt, the
# model's repr), in order; the shared embedding under the encoder and again under the decoder.
LAMBDA_LEAVES = [
    "LSTM(1024, 1024, bidirectional=True)", "LSTM(2048, 1024)", "LSTM(1024, 1024)", "LSTM(1024, 1024)",
    "Dropout(p=0.2, inplace=False)", "Embedding(31800, 1024, padding_idx=0)",
    "LSTM(1024, 1024)", "Linear(in_features=1024, out_features=1024, bias=False)",
    "Linear(in_features=1024, out_features=1024, bias=False)", "Dropout(p=0.2, inplace=False)",
    "LSTM(2048, 1024)", "LSTM(2048, 1024)", "LSTM(2048, 1024)", "Embedding(31800, 1024, padding_idx=0)",
    "Linear(in_features=1024, out_features=31800, bias=True)", "Dropout(p=0.2, inplace=False)",
]

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them


def tiny(device: torch.device = CPU) -> Workload:
    """build_tiny(), its weights made on `device`."""
    with device:
        return load_workload(f"{PATH}:build_tiny")


def real_on_meta() -> Workload:
    with META:
        return load_workload(f"{PATH}:build")


def module() -> ModuleType:
    """examples/gnmt.py itself, as load_workload last imported it (it keeps the module in sys.modules)."""
    return sys.modules[type(tiny(META).model).__module__]


def leaves(model: torch.nn.Module) -> list[str]:
    return [repr(m) for _, m in model.named_modules(remove_duplicate=False) if not list(m.children())]


# ── the real size ──────────────────────────────────────────────────────────────────────────────

def test_real_size_is_lambdas_gnmt():
    workload = real_on_meta()
    assert workload.name == "gnmt" and workload.training and workload.unit == "sentences"
    assert workload.tokens_per_sample == DLE_TOKENS_PER_PAIR
    model = workload.model
    assert parameters(model) == LAMBDA_PARAMETERS and leaves(model) == LAMBDA_LEAVES
    assert model.encoder.embedder is model.decoder.embedder  # share_embedding=True
    assert build_sweep_plan(workload.name, workload, QUICK, CUDA).main_batch == 1024  # Lambda's fp32 batch
    (src, lengths, tgt), labels = workload.make_batch(2, META)
    assert src.shape == (31, 2) and tgt.shape == labels.shape == (30, 2)
    assert lengths.device == CPU and lengths.tolist() == [31, 18]
    logits = workload.forward((src, lengths, tgt))
    assert logits.shape == (30, 2, 31800) and workload.loss(logits, labels).dim() == 0


def test_the_fp32_vocabulary_gives_the_fp32_logs_count():
    with META:
        assert parameters(module().GNMT(31794)) == LAMBDA_FP32_PARAMETERS


def test_flops_per_sentence_match_the_docstring():
    assert step_flops(real_on_meta(), 1024) / 1024 / 1e9 == pytest.approx(TRAIN_GFLOP_PER_SENTENCE, abs=1e-3)


def test_the_published_tables_name_this_workload():
    """Lambda's `gnmt` column, tokens/s, H100 SXM5 rows of the table's own stack at Lambda's 80 GB batches."""
    tables = {t.id: t for t in load_published()}
    for table_id, published, batch in (("lambda-v1-gnmt-fp16", 467071, 1520), ("lambda-v1-gnmt-fp32", 220229, 1024)):
        table = tables[table_id]
        assert table.model == "gnmt" and table.unit == "tokens/s" and len(table.rows) == 12
        ref = table.row("H100 SXM")
        assert ref.same_stack and ref.throughput_per_s == published and ref.batch == batch


# ── the sentences and DLE's token count ────────────────────────────────────────────────────────

def test_lengths_are_the_average_bucketed_batch():
    """31 … 18 tokens a sentence, longest first, 24.5 on average: the docstring's stand-in for Lambda's buckets
    (padded to 30.8 tokens a side, 48.4 DLE tokens a pair)."""
    lengths = module().sentence_lengths(1024, 31, 7)
    assert lengths.tolist() == sorted(lengths.tolist(), reverse=True)
    assert lengths.max() == 31 and lengths.min() == 18 and set(lengths.tolist()) == set(range(18, 32))
    assert lengths.sum() == 1024 * 24.5
    odd = module().sentence_lengths(1023, 31, 7)
    assert abs(odd.float().mean() - 24.5) < 7 / 1023


def test_a_batch_holds_dle_tokens_per_sample():
    """DLE counts the source with <s> and </s> and the target but one (its decoder inputs): tokens_per_sample of
    them a sentence; <s> … </s> then padding on both sides, the decoder fed the target but its last token."""
    torch.manual_seed(0)
    workload = real_on_meta()
    (src, lengths, tgt_in), labels = workload.make_batch(64, CPU)
    assert src.device == tgt_in.device == labels.device == CPU
    for tokens, n in zip(src.t(), lengths.tolist(), strict=True):
        assert tokens[0] == 2 and tokens[n - 1] == 3 and (tokens[n:] == 0).all() and (tokens[1:n - 1] >= 4).all()
    assert torch.equal(src.t() == 0, torch.arange(31) >= lengths.unsqueeze(1))   # DLE's attention mask
    assert torch.equal(tgt_in[1:], labels[:-1]) and (labels != 0).sum(0).tolist() == (lengths - 1).tolist()
    target_tokens = int((labels != 0).sum())            # DLE's sum(tgt_length - 1)
    assert int(lengths.sum()) + target_tokens == 64 * workload.tokens_per_sample


# ── the loss ───────────────────────────────────────────────────────────────────────────────────

def test_loss_is_dle_label_smoothing_over_the_target_tokens_per_sentence():
    loss = module().label_smoothed_loss
    labels = torch.tensor([[5, 7], [3, 3], [0, 0]])       # (T, B): 2 tokens each, then padding
    logits = torch.zeros(3, 2, 10)                         # uniform: every -log p is ln 10
    assert loss(logits, labels).item() == pytest.approx(2 * 2 * math.log(10) / 2)
    logits[0, 0, 5] = 4.0                                  # one confident, right prediction
    logits[2, 1, 1] = 99.0                                 # a padded position: ignored
    logp = torch.log_softmax(torch.tensor([4.0] + [0.0] * 9), 0)
    token = 0.9 * -logp[0] - 0.1 * logp.mean()
    assert loss(logits, labels).item() == pytest.approx((token.item() + 3 * math.log(10)) / 2, rel=1e-6)


# ── the LSTMs' FLOPs ───────────────────────────────────────────────────────────────────────────

def test_fused_lstm_flops_are_torch_decomposition_plus_the_initial_state_gradient():
    """The collector's count on the CPU, where oneDNN runs the unpacked LSTMs fused (the registered formulas count
    them), against torch's per-step decomposition on `meta`: the same products, but the fused backward also takes
    the gradient of each LSTM's zero initial state, one recurrent product of batch × 4·hidden × hidden more for each
    of the 7 unpacked LSTMs (the packed first layer runs decomposed on the CPU as well)."""
    batch, hidden = 4, 32
    decomposed = step_flops(tiny(META), batch)
    workload = tiny()
    fused = count_flops(build_step(workload, workload.model, "fp32", batch, CPU, Variant()))
    assert fused - decomposed == 7 * 2 * batch * 4 * hidden * hidden


# ── the tiny size, on the CPU ──────────────────────────────────────────────────────────────────

def test_tiny_keeps_the_real_structure():
    def shape(w: Workload) -> list[str]:
        return [type(m).__name__ for m in w.model.modules()]
    assert shape(tiny()) == shape(real_on_meta())


def test_a_sentence_reads_the_same_alone_or_padded_in_a_batch():
    """The first layer skips the padding (packed: its backward direction starts at each sentence's end), the later
    LSTMs run forward in time and the attention masks the padding: the shortest sentence's logits are those it gets
    alone, unpadded; another word changes them."""
    torch.manual_seed(0)
    workload = tiny()
    model = workload.model.eval()
    (src, lengths, tgt), _ = workload.make_batch(4, CPU)
    n = int(lengths[-1])
    assert n < src.shape[0]
    with torch.no_grad():
        batched = model((src, lengths, tgt))[: n - 1, -1:]
        alone = model((src[:n, -1:], lengths[-1:], tgt[: n - 1, -1:]))
        torch.testing.assert_close(alone, batched)
        other = src[:n, -1:].clone()
        other[1] = 7 if other[1] != 7 else 8
        assert not torch.allclose(model((other, lengths[-1:], tgt[: n - 1, -1:])), alone)


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_the_collectors_step_trains_every_parameter(precision):
    """Steps of the collector's own (AdamW; at bf16 under autocast, which oneDNN runs in bf16 on a CPU): every
    parameter gets a finite, non-zero gradient, and the loss on the step's batch, about ln(vocabulary) a target
    token at first (an untrained model), falls."""
    torch.manual_seed(0)
    workload = tiny()
    batch = 2 * workload.batch_start
    model = prepare_model(workload, CPU, Variant())
    step = build_step(workload, model, precision, batch, CPU, Variant())

    def per_token() -> float:  # without dropout
        with torch.no_grad():
            value = workload.loss(model.eval()(step.inputs), step.targets).item()
        model.train()
        return value * batch / int((step.targets != 0).sum())

    first = per_token()
    for _ in range(3):
        step.run()
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert all(g is not None and bool(torch.isfinite(g).all()) and g.abs().sum() > 0 for g in grads.values()), [
        name for name, g in grads.items() if g is None or not g.abs().sum() > 0]
    assert first == pytest.approx(math.log(1000), abs=0.3) and per_token() < first


def test_runs_under_torch_compile():
    """Dynamo leaves the LSTMs to eager between its graphs (the eager backend: no C++ compiler needed) and gives
    eager's logits."""
    torch.manual_seed(0)
    workload = tiny()
    model = workload.model.eval()
    inputs, _ = workload.make_batch(2, CPU)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="eager")(inputs), model(inputs))
