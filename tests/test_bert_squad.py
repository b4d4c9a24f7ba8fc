"""examples/bert_squad.py, the BERT-base SQuAD workload of the cross-architecture check: the real size follows
the user-workload interface (built on the `meta` device: no memory, no compute) with BERT-base's parameter count,
and the tiny size trains on the CPU through the collector's own step and collects through the real CLI."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from collectors.__main__ import main as collect_main
from collectors.core.profiles import QUICK
from collectors.workloads import Workload, load_workload
from collectors.workloads.sweep_plan import build_sweep_plan
from collectors.workloads.training import Variant, build_step, prepare_model
from gpuplan_schema.schema import load_document

PATH = "examples/bert_squad.py"
CPU, META, CUDA = torch.device("cpu"), torch.device("meta"), torch.device("cuda")
# BERT-base without the pooler: embeddings 23,835,648 + 12 layers × 7,087,872 + the span head 1,538
BERT_BASE_SQUAD_PARAMETERS = 108_893_186
# BERT-large without the pooler: embeddings 31,782,912 + 24 layers × 12,596,224 + the span head 2,050
BERT_LARGE_SQUAD_PARAMETERS = 334_094_338

pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them


def tiny() -> Workload:
    return load_workload(f"{PATH}:build_tiny")


def real_on_meta(build: str = "build") -> Workload:
    with META:
        return load_workload(f"{PATH}:{build}")


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_real_size_is_bert_base_at_sequence_384():
    workload = real_on_meta()
    assert workload.name == "bert-base-squad" and workload.source == PATH and workload.training
    assert workload.unit == "sequences" and workload.tokens_per_sample == 384
    assert parameters(workload.model) == BERT_BASE_SQUAD_PARAMETERS
    assert build_sweep_plan(workload.name, workload, QUICK, CUDA).main_batch == 160  # near Lambda's fp32 batch 172
    (ids, types, mask), positions = workload.make_batch(2, META)
    assert ids.shape == types.shape == mask.shape == (2, 384) and positions.shape == (2, 2)
    logits = workload.forward((ids, types, mask))
    assert logits.shape == (2, 384, 2)
    loss = workload.loss(logits, positions)
    assert loss.dim() == 0 and loss.device == META


def test_large_size_is_bert_large_at_sequence_384():
    workload = real_on_meta("build_large")
    assert workload.name == "bert-large-squad" and workload.tokens_per_sample == 384
    assert parameters(workload.model) == BERT_LARGE_SQUAD_PARAMETERS
    assert 31_782_912 + 24 * 12_596_224 + 2_050 == BERT_LARGE_SQUAD_PARAMETERS
    assert build_sweep_plan(workload.name, workload, QUICK, CUDA).main_batch == 64  # Lambda's fp32 batch on 80 GB
    logits = workload.forward(workload.make_batch(2, META)[0])
    assert logits.shape == (2, 384, 2)


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_tiny_size_trains_on_the_cpu(precision):
    """Three real steps of the collector's own step: the loss is finite and every parameter moves."""
    workload = tiny()
    model = prepare_model(workload, CPU, Variant())
    before = [p.detach().clone() for p in model.parameters()]
    step = build_step(workload, model, precision, workload.batch_start, CPU, Variant())
    for _ in range(3):
        step.run()
    assert step.optimizer is not None and len(step.optimizer.state) == len(before)
    assert all(not torch.equal(a, p.detach()) for a, p in zip(before, model.parameters(), strict=True))
    with torch.no_grad():
        assert math.isfinite(workload.loss(workload.forward(step.inputs), step.targets).item())


def test_tiny_keeps_the_real_structure():
    def shape(w: Workload) -> list[str]:
        return [type(m).__name__ for m in w.model.modules()]
    assert shape(tiny()) == shape(real_on_meta())


def test_make_batch_is_on_the_device_and_not_zero():
    torch.manual_seed(0)
    (ids, types, mask), positions = tiny().make_batch(64, CPU)
    assert all(t.device == CPU and t.shape[0] == 64 for t in (ids, types, mask, positions))
    assert bool((ids > 0).all()) and 0 < types.float().mean() < 1 and bool((mask == 1).all())
    start, end = positions.unbind(1)
    assert bool((types.gather(1, start[:, None]) == 1).all()) and bool((start <= end).all())  # in the context
    assert bool((end < ids.shape[1]).all())


def test_untrained_span_loss_is_near_uniform():
    """At BERT's initialisation the span logits are near zero: each cross-entropy is about ln(positions)."""
    torch.manual_seed(0)
    workload = tiny()
    workload.model.eval()
    inputs, positions = workload.make_batch(8, CPU)
    with torch.no_grad():
        loss = workload.loss(workload.forward(inputs), positions).item()
    assert loss == pytest.approx(math.log(inputs[0].shape[1]), rel=0.05)


def test_attention_mask_hides_padded_keys():
    """What a masked position holds changes nothing at the others: the mask reaches the attention."""
    torch.manual_seed(0)
    workload = tiny()
    workload.model.eval()
    (ids, types, mask), _ = workload.make_batch(2, CPU)
    mask[:, -8:] = 0
    other = ids.clone()
    other[:, -8:] = (other[:, -8:] + 7) % 999 + 1
    with torch.no_grad():
        a, b = workload.forward((ids, types, mask)), workload.forward((other, types, mask))
        unmasked = workload.forward((other, types, torch.ones_like(mask)))
    torch.testing.assert_close(a[:, :-8], b[:, :-8])
    assert not torch.allclose(a[:, :-8], unmasked[:, :-8])


def test_tiny_size_collects_through_the_cli(tmp_path):
    assert collect_main(["--only", "workloads", "--out", str(tmp_path), "--machine", "t", "--profile", "quick",
                         "--workload", f"{PATH}:build_tiny"]) == 0
    payload = load_document(tmp_path / "t" / "workload-bert-base-squad-cpu.json").payload
    assert payload.source == PATH and payload.training and payload.complete and payload.unit == "sequences"
    assert payload.parameters == parameters(tiny().model) and payload.tokens_per_sample == 32
    assert payload.points and all(p.status == "ok" for p in payload.points)
    for p in payload.points:
        assert p.step_s.median > 0 and p.flops_per_step > 0 and p.traffic.total_bytes > 0


def test_dles_written_out_attention_is_the_same_function_with_the_same_parameters():
    # DLE's BERT writes attention out (build_large_dle, timed for its rows): the same model, another kernel path
    fused, written = tiny(), load_workload(f"{PATH}:build_tiny_dle")
    assert parameters(written.model) == parameters(fused.model)
    written.model.load_state_dict(fused.model.state_dict())
    fused.model.eval(), written.model.eval()
    (ids, types, mask), _ = fused.make_batch(3, CPU)
    mask[1, 20:] = 0                                          # padded keys: the additive mask must match SDPA's
    assert torch.allclose(fused.model((ids, types, mask)), written.model((ids, types, mask)), atol=1e-5)
    assert parameters(real_on_meta("build_large_dle").model) == BERT_LARGE_SQUAD_PARAMETERS
