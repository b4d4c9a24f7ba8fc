"""examples/nanogpt.py, GPT-2 124M as Any-Winter-4079's comparison script builds and steps it (`nanogpt`), and the
two published tables of that script: the real size has the script's parameter count (its line 493 sums them) with
the head tied, the docstring's FLOPs, the main batch 32; the tiny size trains on the CPU through the collector's own
step and under torch.compile; every transcribed row is self-consistent (its tokens/s is 2**19 over its printed step
time) and names a catalog GPU; and the cross-architecture check starts a table that ran compiled from gpuplan's
torch.compile trial, an eager one from the plain points (a frozen H100 payload stands in for the measurement)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from example_workloads import loaders
from test_ssd300 import one_thread, parameters, step_flops  # noqa: F401  (one_thread: the same autouse fixture)

from collectors.core.profiles import QUICK
from collectors.workloads import Workload
from collectors.workloads.sweep_plan import build_sweep_plan
from collectors.workloads.training import Variant, build_step, prepare_model
from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.results import MachineResults
from planner.check.accuracy_markdown import render_crosscheck
from planner.check.crossarch import build_crosscheck
from planner.model.performance import measured_rates, predict_point, target_rates
from planner.model.split import machine_rooflines
from planner.specs import load_gpu_catalog, match_gpu
from planner.specs.published import PublishedRow, PublishedTable, load_published

PATH = "examples/nanogpt.py"
CPU, META, CUDA = torch.device("cpu"), torch.device("meta"), torch.device("cuda")
# line 493 of the script: 50304*768 + 1024*768 + 12*2*(768+768) + 12*(768*3*768 + 3*768) + 12*(768*768 + 768)
# + 12*(768*4*768 + 4*768) + 12*(768*4*768 + 768) + 768 + 768, the tied head counted once
SCRIPT_PARAMETERS = (50304 * 768 + 1024 * 768 + 12 * 2 * (768 + 768) + 12 * (768 * 3 * 768 + 3 * 768)
                     + 12 * (768 * 768 + 768) + 12 * (768 * 4 * 768 + 4 * 768) + 12 * (768 * 4 * 768 + 768) + 768 + 768)
TRAIN_GFLOP_PER_SEQUENCE = 875.167  # the docstring's count on `meta` at batch 32: forward, loss and backward
URL = ("https://github.com/Any-Winter-4079/GPT-3-Small-Pretraining-Experiments/blob/"
       "a2347e97a994a8f9e6cadaa9474fd648c9c052b5/versions/06-gpt-3-small-cuda-gpu-comparison.py")
TABLES = ("anywinter-gpt2-124m-bf16-bs32", "anywinter-gpt2-124m-bf16-bs64")
# Each row as the script prints it: (table suffix, catalog GPU) -> (line, micro-batch, "t" in ms, micro-steps);
# its tokens/s must be 2**19 tokens over that step time.
PRINTED = {
    ("bs32", "H100 SXM"): (73, 32, 1147.45, 16), ("bs32", "H100 PCIe"): (86, 32, 1837.20, 16),
    ("bs32", "L40S"): (115, 32, 3675.58, 16), ("bs32", "RTX 6000 Ada"): (125, 32, 4892.75, 16),
    ("bs32", "L4"): (160, 16, 12970.13, 32), ("bs32", "A100 80GB PCIe"): (198, 32, 2823.65, 16),
    ("bs32", "A100 80GB SXM"): (211, 32, 2571.18, 16), ("bs32", "RTX A6000"): (237, 32, 5752.56, 16),
    ("bs64", "H100 SXM"): (76, 64, 1124.02, 8), ("bs64", "B200"): (21, 64, 667.35, 8),
    ("bs64", "H200 SXM"): (34, 64, 1058.85, 8), ("bs64", "H100 PCIe"): (89, 64, 1811.34, 8),
    ("bs64", "RTX 6000 Ada"): (128, 64, 5002.63, 8), ("bs64", "A100 80GB PCIe"): (201, 64, 2768.25, 8),
    ("bs64", "A100 80GB SXM"): (214, 64, 2509.02, 8), ("bs64", "RTX A6000"): (240, 64, 5671.41, 8),
}

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them


tiny, real_on_meta, module = loaders(PATH)


# ── the real size ──────────────────────────────────────────────────────────────────────────────

def test_real_size_is_the_scripts_gpt2():
    workload = real_on_meta()
    assert workload.name == "nanogpt" and workload.source == PATH and workload.training
    assert workload.unit == "sequences" and workload.tokens_per_sample == 1024
    model = workload.model
    assert parameters(model) == SCRIPT_PARAMETERS == 124_475_904
    assert model.head.weight is model.tok.weight and model.tok.weight.shape == (50304, 768)
    assert len(model.blocks) == 12 and model.blocks[0].scale == pytest.approx(24 ** -0.5)
    assert model.blocks[0].mlp[1].approximate == "none"  # exact GELU, as nn.GELU() in the script
    assert build_sweep_plan(workload.name, workload, QUICK, CUDA).main_batch == 32  # the H100 SXM's first batch
    (tokens, targets), labels = workload.make_batch(2, META)
    assert tokens.shape == targets.shape == (2, 1024) and labels is targets
    logits, loss = workload.forward((tokens, targets))
    assert logits.shape == (2, 1024, 50304) and workload.loss((logits, loss), labels) is loss and loss.dim() == 0


def test_flops_per_sequence_match_the_docstring():
    assert step_flops(real_on_meta(), 32) / 32 / 1e9 == pytest.approx(TRAIN_GFLOP_PER_SEQUENCE, abs=1e-3)


def test_tokens_are_gpt2_ids_and_targets_are_the_next_token():
    torch.manual_seed(0)
    (tokens, targets), _ = real_on_meta().make_batch(64, CPU)
    assert tokens.device == CPU and int(tokens.max()) < 50257 <= 50304 and int(tokens.min()) >= 0
    assert torch.equal(tokens[:, 1:], targets[:, :-1])


# ── the tiny size, on the CPU ──────────────────────────────────────────────────────────────────

def test_tiny_keeps_the_real_structure():
    def shape(w: Workload) -> list[str]:  # the module types in order, one block of the stack
        return [type(m).__name__ for m in (*w.model.children(), *w.model.blocks[0].modules())]
    assert shape(tiny()) == shape(real_on_meta())
    assert len(tiny().model.blocks) == 2
    model = tiny().model
    assert model.head.weight is model.tok.weight


def test_the_loss_is_the_models_cross_entropy_over_every_token():
    torch.manual_seed(0)
    workload = tiny()
    inputs, targets = workload.make_batch(3, CPU)
    logits, loss = workload.forward(inputs)
    expected = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    assert workload.loss((logits, loss), targets).item() == pytest.approx(expected.item())


def test_each_branch_is_scaled_before_its_residual_add():
    """With both branches' last layer giving a constant c, a block adds 2 · c · (2 · layers)^-1/2 to its input."""
    block = module().Block(8, 2, layers=3)
    with torch.no_grad():
        for last in (block.attn.out, block.mlp[2]):
            last.weight.zero_()
            last.bias.fill_(0.5)
    x = torch.randn(1, 4, 8)
    torch.testing.assert_close(block(x), x + 2 * 0.5 * 6 ** -0.5)


def test_a_position_sees_only_the_tokens_before_it():
    """Causal: changing the last token changes only the last position's logits."""
    torch.manual_seed(0)
    workload = tiny()
    model = workload.model.eval()
    (tokens, targets), _ = workload.make_batch(1, CPU)
    other = tokens.clone()
    other[0, -1] = (other[0, -1] + 1) % 256
    with torch.no_grad():
        a, b = model(tokens, targets)[0], model(other, targets)[0]
    torch.testing.assert_close(a[:, :-1], b[:, :-1])
    assert not torch.allclose(a[:, -1], b[:, -1])


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_the_collectors_step_trains_every_parameter(precision):
    """Steps of the collector's own (fused AdamW; at bf16 under autocast): the tied matrix is one parameter of the
    optimizer, every parameter gets a finite, non-zero gradient, and the loss, about ln(vocabulary) at first, falls."""
    torch.manual_seed(0)
    workload = tiny()
    batch = 2 * workload.batch_start
    model = prepare_model(workload, CPU, Variant())
    step = build_step(workload, model, precision, batch, CPU, Variant())
    (tokens, targets) = step.inputs

    def loss() -> float:
        with torch.no_grad():
            return model(tokens, targets)[1].item()

    first = loss()
    for _ in range(3):
        step.run()
    optimized = [p for group in step.optimizer.param_groups for p in group["params"]]
    assert len(optimized) == len({id(p) for p in optimized}) == len(list(model.parameters()))
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert all(g is not None and bool(torch.isfinite(g).all()) and g.abs().sum() > 0 for g in grads.values())
    assert first == pytest.approx(math.log(256), abs=0.3) and loss() < first


def test_runs_under_torch_compile():
    """The model with its loss, compiled (the eager backend: no C++ compiler needed), gives eager's logits and loss."""
    torch.manual_seed(0)
    workload = tiny()
    model = workload.model.eval()
    inputs, _ = workload.make_batch(2, CPU)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="eager")(*inputs), model(*inputs))


# ── the published tables ───────────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def tables() -> dict[str, PublishedTable]:
    return {t.id: t for t in load_published() if t.id in TABLES}


def test_the_tables_are_the_scripts_compiled_bf16_runs_of_this_workload(tables):
    assert sorted(tables) == sorted(TABLES)
    for table in tables.values():
        assert table.model == real_on_meta().name and table.precision == "bf16" and table.unit == "tokens/s"
        assert table.compiled and table.url == URL and "runpod/pytorch:2.8.0" in table.stack
        ref = table.row("H100 SXM")
        assert ref is not None and ref.same_stack and all(r.same_stack and not r.informed for r in table.rows)
    assert tables[TABLES[0]].row("H100 SXM").batch == 32 and tables[TABLES[1]].row("H100 SXM").batch == 64


def test_every_row_is_a_catalog_gpu_at_a_cited_line_and_its_printed_step(tables):
    catalog = {g.name for g in load_gpu_catalog()}
    seen = set()
    for table_id, table in tables.items():
        for r in table.rows:
            line, batch, t_ms, micro_steps = PRINTED[(table_id.rsplit("-", 1)[1], r.gpu)]
            seen.add((table_id.rsplit("-", 1)[1], r.gpu))
            assert r.gpu in catalog and r.gpu_label.startswith("1 x ") and r.cite == f"{URL}#L{line}"
            assert r.batch == batch and micro_steps * batch * 1024 == 2 ** 19
            assert r.throughput_per_s == pytest.approx(2 ** 19 / (t_ms / 1000), rel=2e-5), (table_id, r.gpu)
    assert seen == set(PRINTED)


def test_the_h100_nvl_row_is_left_out_and_the_notes_say_why(tables):
    for table in tables.values():
        assert table.row("H100 NVL") is None
        assert "H100 NVL" in table.notes and "line 60" in table.notes
    assert match_gpu("H100 NVL") is not None  # in the catalog: left out by choice, not for want of a name


# ── the cross-architecture check from a compiled trial ─────────────────────────────────────────

def as_nanogpt(h100: MachineResults) -> MachineResults:
    """The frozen H100 with its gpt-small documents renamed nanogpt (a stand-in payload of the same shape: plain
    points at 16, 32 and 64, a torch.compile trial at 32) and a second compiled point at 64 made from the first,
    scaled as the plain step grows from 32 to 64."""
    docs = {}
    for stem, doc in h100.documents.items():
        payload = doc.payload
        if getattr(payload, "workload", None) == "gpt-small":
            if isinstance(payload, WorkloadPayload):
                plain = {p.batch: p.step_s.median for p in payload.points if p.sweep == "batch" and p.step_s}
                compiled = next(p for p in payload.points if p.variant == "compile")
                step = compiled.step_s.scaled(plain[64] / plain[32])
                at_64 = replace(compiled, batch=64, step_s=step, throughput_per_s=64 / step.median,
                                flops_per_step=2 * compiled.flops_per_step, sweep="batch")
                payload = replace(payload, points=[*payload.points, at_64])
            doc = replace(doc, payload=replace(payload, workload="nanogpt"))
        docs[stem] = doc
    return replace(h100, documents=docs)


def published(compiled: bool) -> PublishedTable:
    rows = tuple(PublishedRow(gpu, gpu, tok_s, batch, f"{URL}#L1") for gpu, tok_s, batch in (
        ("H100 SXM", 456914.17, 32), ("A100 80GB SXM", 208961.64, 64), ("L4", 40422.74, 16)))
    return PublishedTable("t", "s", URL, "2026-11-27", "stack", "nanogpt", "training", "bf16", "tokens/s", None,
                          "notes", rows, compiled=compiled)


def test_a_compiled_table_starts_from_the_nearest_torch_compile_trial(h100):
    machine = as_nanogpt(h100)
    check = build_crosscheck(machine, [published(compiled=True)])
    rows = {r.gpu: r for r in check.rows}
    assert set(rows) == {"A100 80GB SXM", "L4"} and not check.skipped
    assert {g: (r.variant, r.batch) for g, r in rows.items()} == {"A100 80GB SXM": ("compile", 64),
                                                                   "L4": ("compile", 32)}
    # the ratio is the compiled point's own prediction there, not its eager twin's
    payload = next(w for w in machine.workloads if w.workload == "nanogpt")
    rates, spec = measured_rates(machine.ceilings), match_gpu("H100 SXM")
    for gpu, r in rows.items():
        target = match_gpu(gpu)
        ratios = {}
        for variant in ("compile", "default"):
            point = next(p for p in payload.points if p.batch == r.batch and p.variant == variant
                         and p.precision == "bf16" and p.sweep in ("variant", "batch"))
            p = predict_point(point, payload, rates, target_rates(rates, spec, target), False,
                              machine_rooflines(machine), target)
            ratios[variant] = point.step_s.median / p.step_s
        assert r.predicted_ratio == pytest.approx(ratios["compile"], rel=1e-9)
        assert ratios["compile"] != pytest.approx(ratios["default"], rel=1e-3), gpu
    assert "| bf16 compiled, 64 |" in render_crosscheck(check)


def test_an_eager_table_starts_from_the_plain_points(h100):
    check = build_crosscheck(as_nanogpt(h100), [published(compiled=False)])
    assert {r.gpu: (r.variant, r.batch) for r in check.rows} == {"A100 80GB SXM": ("default", 64),
                                                                  "L4": ("default", 16)}
    assert "compiled" not in render_crosscheck(check)


def test_a_compiled_table_without_a_compiled_trial_is_skipped_not_compared_eager(h100):
    machine = as_nanogpt(h100)
    docs = {stem: replace(doc, payload=replace(doc.payload, points=[p for p in doc.payload.points
                                                                     if p.variant != "compile"]))
            if isinstance(doc.payload, WorkloadPayload) and doc.payload.workload == "nanogpt" else doc
            for stem, doc in machine.documents.items()}
    check = build_crosscheck(replace(machine, documents=docs), [published(compiled=True)])
    assert not check.rows and {g for _, g, _ in check.skipped} == {"A100 80GB SXM", "L4"}
    assert all("torch.compile point" in why for *_, why in check.skipped)
