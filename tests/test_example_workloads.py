"""The three example workloads of examples/ (vit-tiny, dlrm-small, wide-transformer): each loads
through the user-workload interface, trains on the CPU at its tiny size, collects through the
real CLI, and has the property that puts it in its regime, counted here (FLOPs with
FlopCounterMode, ops with a dispatch mode, bytes from the parameters) rather than copied.

The real sizes are built on the `meta` device (no memory, no compute) except vit-tiny's, which is
small enough to build and step on the CPU.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from paths import REPO, load_script
from torch import nn

from collectors.__main__ import main as collect_main
from collectors.core.profiles import QUICK
from collectors.workloads import Workload, load_workload
from collectors.workloads.sweep_plan import build_sweep_plan
from collectors.workloads.training import Variant, build_step, prepare_model
from gpuplan_schema.schema import load_document

CPU, META, CUDA = torch.device("cpu"), torch.device("meta"), torch.device("cuda")
EXAMPLES = {"vit-tiny": "examples/vit_tiny.py", "dlrm-small": "examples/dlrm_small.py",
            "wide-transformer": "examples/wide_transformer.py"}
# H100 figures (DESIGN's ceilings, measured): bf16 dense matmul, copy bandwidth, kernel launch latency.
H100_FLOPS, H100_BYTES, H100_LAUNCH_S = 800e12, 3.0e12, 9e-6
ADAMW_BYTES_PER_PARAM = 28  # fused AdamW, fp32: reads p, g, m, v; writes p, m, v


def _load_regimes():
    return load_script(REPO / "benchmarks" / "example_regimes.py")


regimes = _load_regimes()


pytestmark = pytest.mark.usefixtures("in_repo")  # conftest.py: paths as the docs give them


def tiny(name: str) -> Workload:
    return load_workload(f"{EXAMPLES[name]}:build_tiny")


def real_on_meta(name: str) -> Workload:
    with META:
        return load_workload(f"{EXAMPLES[name]}:build")


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def main_batch(workload: Workload) -> int:
    """The batch gpuplan judges the workload at on a GPU (build_sweep_plan touches no GPU to say it)."""
    return build_sweep_plan(workload.name, workload, QUICK, CUDA).main_batch


# ── the interface and a real training step ─────────────────────────────────────────────────────

@pytest.mark.parametrize("name", EXAMPLES)
def test_real_size_follows_the_interface(name):
    workload = real_on_meta(name)
    assert workload.name == name and workload.source == EXAMPLES[name] and workload.training
    assert workload.unit in ("images", "samples", "sequences") and workload.batch_start > 1
    inputs, targets = workload.make_batch(2, META)
    loss = workload.loss(workload.forward(inputs), targets)
    assert loss.dim() == 0 and loss.device == META


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_tiny_size_trains_on_the_cpu(name, precision):
    """Three real steps of the collector's own step: the loss is finite and every parameter moves."""
    workload = tiny(name)
    model = prepare_model(workload, CPU, Variant())
    before = [p.detach().clone() for p in model.parameters()]
    step = build_step(workload, model, precision, workload.batch_start, CPU, Variant())
    for _ in range(3):
        step.run()
    assert step.optimizer is not None and len(step.optimizer.state) == len(before)
    assert all(not torch.equal(a, p.detach()) for a, p in zip(before, model.parameters(), strict=True))
    inputs, targets = step.inputs, step.targets
    with torch.no_grad():
        assert math.isfinite(workload.loss(workload.forward(inputs), targets).item())


@pytest.mark.parametrize("name", EXAMPLES)
def test_make_batch_is_on_the_device_and_not_zero(name):
    # 64 samples and a fixed seed: dlrm-small's clicks are 0/1 draws, all zero in 1 of 8 batches of 3
    torch.manual_seed(0)
    workload = tiny(name)
    inputs, targets = workload.make_batch(64, CPU)
    leaves = [*(inputs if isinstance(inputs, tuple) else (inputs,)), targets]
    assert all(t.device == CPU and t.shape[0] == 64 for t in leaves)
    assert all(t.float().abs().sum() > 0 for t in leaves)


@pytest.mark.parametrize("name", EXAMPLES)
def test_tiny_keeps_the_real_structure(name):
    """Same layers or tables, hence the same ops per step: what the regime script counts on."""
    def shape(w: Workload) -> list[str]:
        return [type(m).__name__ for m in w.model.modules()]
    assert shape(tiny(name)) == shape(real_on_meta(name))


def test_vit_real_size_builds_and_steps_on_the_cpu():
    workload = load_workload("examples/vit_tiny.py:build")
    assert 5e6 < parameters(workload.model) < 6e6  # ViT-Ti/16's 5.7 M
    model = prepare_model(workload, CPU, Variant())
    step = build_step(workload, model, "bf16", 1, CPU, Variant())
    step.run()
    assert len(step.optimizer.state) == len(list(model.parameters()))


# ── the regimes ────────────────────────────────────────────────────────────────────────────────

def step_kernels(workload: Workload, batch: int) -> int:
    model = prepare_model(workload, CPU, Variant())
    step = build_step(workload, model, "bf16", batch, CPU, Variant())
    step.run()
    counter = regimes.OpCounter()
    with counter:
        step.run()
    return counter.kernels


def test_vit_tiny_is_host_bound():
    """Hundreds of kernels a step, the same number at any batch, each far shorter than its launch."""
    workload = tiny("vit-tiny")
    kernels = step_kernels(workload, 2)
    assert kernels > 500 and step_kernels(workload, 8) == kernels
    real = real_on_meta("vit-tiny")
    batch = main_batch(real)
    gpu_work_s = regimes.flops_per_sample(real) * batch / H100_FLOPS
    optimizer_s = ADAMW_BYTES_PER_PARAM * parameters(real.model) / H100_BYTES
    assert kernels * H100_LAUNCH_S > 5 * (gpu_work_s + optimizer_s)


def test_dlrm_small_is_memory_bound():
    """Parameters are almost all embedding rows; AdamW's pass over them dwarfs the step's FLOPs."""
    real = real_on_meta("dlrm-small")
    assert regimes.embedding_share(real.model) > 0.99
    assert all(not m.sparse for m in real.model.modules() if isinstance(m, nn.EmbeddingBag))  # every row updated
    batch = main_batch(real)
    flops = regimes.flops_per_sample(real) * batch
    optimizer_bytes = ADAMW_BYTES_PER_PARAM * parameters(real.model)
    assert flops / optimizer_bytes < 10  # far under the H100's ridge of ~270 FLOP/B
    assert optimizer_bytes / H100_BYTES > 100 * flops / H100_FLOPS
    assert 5e-3 < optimizer_bytes / H100_BYTES < 0.1  # tens of ms, not a rounding error


def test_wide_transformer_is_math_bound():
    """Its FLOPs per byte moved are above the ridge even counting the saved activations."""
    real = real_on_meta("wide-transformer")
    params = parameters(real.model)
    batch = main_batch(real)
    per_sample = regimes.flops_per_sample(real)
    assert per_sample > 6 * params * real.tokens_per_sample  # matmuls of every token, forward and backward
    step_bytes = 2 * 16 * params + 2 * regimes.saved_bytes_per_sample(real) * batch
    assert per_sample * batch / step_bytes > H100_FLOPS / H100_BYTES
    assert per_sample * batch / H100_FLOPS > 10 * step_kernels(tiny("wide-transformer"), 2) * H100_LAUNCH_S


# ── through the real collector ─────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("examples")
    argv = ["--only", "workloads", "--out", str(out), "--machine", "t", "--profile", "quick"]
    for path in EXAMPLES.values():
        argv += ["--workload", f"{path}:build_tiny"]
    assert collect_main(argv) == 0
    return out / "t"


@pytest.mark.parametrize("name", EXAMPLES)
def test_tiny_size_collects_through_the_cli(collected, name):
    doc = load_document(collected / f"workload-{name}-cpu.json")
    payload = doc.payload
    assert payload.source == EXAMPLES[name] and payload.training and payload.complete
    assert payload.parameters == parameters(tiny(name).model)
    assert payload.points and all(p.status == "ok" for p in payload.points)
    for p in payload.points:
        assert p.step_s.median > 0 and p.flops_per_step > 0 and p.traffic.total_bytes > 0
