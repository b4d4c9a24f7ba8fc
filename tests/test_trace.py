"""The trace stage (collectors/trace): a workload's step on the meta device, op by op, as a GPU runs it.

The reference check reads the frozen H100 profile (tests/fixtures/frozen): the same step traced on a CPU has the
same ops, calls, FLOPs and bytes as the H100's profiler recorded, and its peak memory the measured one's less the
allocator's own bytes."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from paths import FROZEN, REPO
from torch import nn

from collectors import __main__ as collect_cli
from collectors.roofline.op_accounting import TEMPLATES
from collectors.trace import __main__ as trace_cli
from collectors.trace.collect import load_on_meta, trace_configs, trace_run, trace_workload
from collectors.workloads import workload_from_dict
from gpuplan_schema.schema import load_document


def example_builds() -> list[str]:
    """Every examples/*.py function a user passes to `gpuplan collect --workload` (build, build_large, …: the CPU
    tests' build_tiny left out), found in the files, so that an example added later is traced too."""
    import ast

    out = []
    for path in sorted((REPO / "examples").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out += [f"{path.name}:{f.name}" for f in tree.body if isinstance(f, ast.FunctionDef)
                and f.name.startswith("build") and f.name != "build_model" and not f.name.endswith("_tiny")]
    return out


EXAMPLES = example_builds()


def by_name(run) -> dict[str, list[float]]:  # noqa: ANN001 - a TraceRun
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for op in run.ops:
        row = out[op.name]
        row[0] += op.calls
        row[1] += op.flops or 0.0
        row[2] += op.bytes
    return out


@pytest.fixture(scope="module")
def gpt_small_32():
    return trace_run(load_on_meta("gpt-small"), "bf16", 32)


def test_a_traced_gpt_small_step_is_the_h100_profile_op_for_op(gpt_small_32):
    profile = json.loads((FROZEN / "h100-80gb" / "roofline-gpt-small.json").read_text())["payload"]
    traced = by_name(gpt_small_32)
    assert profile["batch"] == 32 and profile["precision"] == "bf16"
    for op in profile["ops"]:
        calls, flops, moved = traced[op["name"]]
        # gpt-small's attention is causal: the trace counts the half of the score matrix the kernel computes
        causal = 0.5 if "attention" in op["name"] else 1.0
        assert calls == op["calls"], op["name"]
        assert flops == pytest.approx((op["flops"] or 0.0) * causal, rel=1e-9), op["name"]
        # a factory of another tensor's shape (ones_like: the loss's gradient) reads nothing; the committed profile
        # was counted when its template was counted as read (op_accounting.TEMPLATES): its written bytes alone
        template = op["name"].split("::")[-1] in TEMPLATES
        assert moved == pytest.approx(op["written_bytes"] + (0 if template else op["read_bytes"]), rel=1e-9), \
            op["name"]


def test_the_traced_peak_is_the_measured_one_less_the_allocators_own_bytes(gpt_small_32):
    points = json.loads((FROZEN / "h100-80gb" / "workload-gpt-small.json").read_text())["payload"]["points"]
    measured = max(p["memory"]["peak_allocated_bytes"] for p in points if p["precision"] == "bf16"
                   and p["batch"] == 32 and p["variant"] == "default" and p["memory"] and p["seq_len"] is None)
    traced = gpt_small_32.memory.peak_bytes
    assert 0 < measured - traced < 0.01 * measured   # cuBLAS's workspace and the context: ~0.1 GB of 33
    parts = gpt_small_32.memory
    assert parts.parameters_bytes == pytest.approx(163_037_184 * 4, rel=0.01)   # fp32 weights
    assert parts.optimizer_bytes >= 2 * parts.parameters_bytes                   # AdamW's two moments


def test_the_replayed_allocator_reserves_what_the_h100_reserved(gpt_small_32):
    """The caching allocator replayed over the trace's allocations (collectors/trace/allocator.py) reserves what
    the H100's allocator reserved for the same step: live blocks and the holes between them (~6 % here)."""
    points = json.loads((FROZEN / "h100-80gb" / "workload-gpt-small.json").read_text())["payload"]["points"]
    measured = [p["memory"]["peak_reserved_bytes"] for p in points if p["precision"] == "bf16" and p["batch"] == 32
                and p["variant"] == "default" and p["memory"] and p["seq_len"] is None]
    reserved = gpt_small_32.memory.reserved_bytes
    assert reserved > gpt_small_32.memory.peak_bytes * 1.03           # the holes: more than the live peak
    assert all(abs(reserved / m - 1) < 0.01 for m in measured)        # within 1 % of every measurement


def test_the_allocator_splits_best_fits_merges_and_needs_a_segment_where_no_hole_holds_a_block():
    from collectors.trace.allocator import LARGE_BUFFER, SMALL_BUFFER, Allocator, reserved_peak

    mib = 1 << 20
    allocator = Allocator()
    allocator.malloc(1, 100)                     # small pool: one 2 MiB segment, the block rounded to 512
    allocator.malloc(2, 3 * mib)                 # large pool: a 20 MiB segment, split
    allocator.malloc(3, 4 * mib)                 # fits the same segment's rest
    assert allocator.segments == [SMALL_BUFFER, LARGE_BUFFER] and allocator.live[1].size == 512
    allocator.release(2)
    allocator.malloc(4, 2 * mib)                 # best fit: the 3 MiB hole, not the 13 MiB tail
    assert allocator.live[4].offset == 0 and len(allocator.segments) == 2
    allocator.release(4)
    allocator.release(3)                         # the whole segment free again: one block, merged
    assert allocator.held == SMALL_BUFFER and len(allocator.large.free) == 1
    # 8 MiB blocks in 20 MiB segments, one freed: 12 MiB holes in each segment, 16 MiB live; a 13 MiB block fits
    # neither hole and needs a segment of its own (rounded to 2 MiB): 54 MiB for 29 MiB live
    events = [(1, 8 * mib), (2, 8 * mib), (3, 8 * mib), (2, -1), (4, 13 * mib)]
    assert reserved_peak(events) == 2 * LARGE_BUFFER + 14 * mib
    assert reserved_peak(events[:4] + [(4, 12 * mib)]) == 2 * LARGE_BUFFER   # a 12 MiB one fits the first hole


def tiny_workload(model: nn.Module, make_batch, loss=F.cross_entropy) -> object:  # noqa: ANN001
    with torch.device("meta"):
        return workload_from_dict({"name": "tiny", "model": model, "make_batch": make_batch, "loss": loss}, "test")


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.norm, self.head = nn.Linear(64, 64), nn.LayerNorm(256), nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:   # x: batch, 4 positions, 64 features
        q = self.fc(x).view(x.shape[0], 4, 4, 16).transpose(1, 2)   # batch, 4 heads, 4 positions, 16
        attended = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(x.shape[0], 256)
        return self.head(self.norm(attended))


def _tiny_batch(batch: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, 4, 64, device=device), torch.randint(0, 10, (batch,), device=device)


def dtypes(run, name: str) -> set:  # noqa: ANN001
    return {op.dtype for op in run.ops if op.name == name}


def test_autocast_on_meta_casts_as_cuda_autocast_does():
    with torch.device("meta"):
        model = Tiny()
    run = trace_run(tiny_workload(model, _tiny_batch), "bf16", 8)
    assert run.status == "ok", run.reason
    assert dtypes(run, "aten::addmm") == {"bf16"}                    # matmuls in the autocast dtype
    assert dtypes(run, "aten::native_layer_norm") == {"fp32"}        # the float32 list
    assert dtypes(run, "aten::_log_softmax") == {"bf16"}             # cross_entropy: its dtype is given
    assert dtypes(run, "aten::nll_loss_forward") == {"fp32"}         # nll_loss is on the float32 list
    assert {op.name for op in run.ops if op.phase == "optimizer"} >= {"aten::_fused_adamw_", "aten::_foreach_add_"}


def test_attention_is_the_fused_kernel_a_gpu_picks_with_causal_flops_halved():
    with torch.device("meta"):
        model = Tiny()
    half = trace_run(tiny_workload(model, _tiny_batch), "bf16", 8)
    full = trace_run(tiny_workload(model, _tiny_batch), "fp32", 8)
    cudnn = [op for op in half.ops if op.name == "aten::_scaled_dot_product_cudnn_attention"]
    efficient = [op for op in full.ops if op.name == "aten::_scaled_dot_product_efficient_attention"]
    assert cudnn and efficient and all(op.variant == "causal" for op in cudnn + efficient)
    # torch's formula counts the whole score matrix: 2 products of 8 x 4 heads x 4 x 4 x 16, halved when causal
    assert cudnn[0].flops == pytest.approx(2 * 2 * 8 * 4 * 4 * 4 * 16 / 2)
    assert not any("bmm" in op.name for op in half.ops)   # no math path: no score matrix in memory


class LearnedBias(nn.Module):
    """Window attention with a learned position bias as its float mask (timm's Swin on the fused path)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(32, 96)
        self.bias = nn.Parameter(torch.zeros(4, 49, 49))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).view(x.shape[0], 49, 3, 4, 8).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias.to(q.dtype)).sum()


def test_a_half_attention_whose_float_mask_needs_a_gradient_traces_on_the_memory_efficient_kernel():
    with torch.device("meta"):
        model = LearnedBias()
    workload = tiny_workload(model, lambda n, device: (torch.randn(n, 49, 32, device=device), None), lambda out, _: out)
    run = trace_run(workload, "bf16", 8)
    assert run.status == "ok", run.reason   # cuDNN's kernel gives no bias gradient: it failed here before
    names = {op.name for op in run.ops}
    assert {"aten::_scaled_dot_product_efficient_attention",
            "aten::_scaled_dot_product_efficient_attention_backward"} <= names
    assert "aten::_scaled_dot_product_cudnn_attention" not in names
    assert all(op.variant == "masked" for op in run.ops if "attention" in op.name)


class Recurrent(nn.Module):
    """A GRU and PyTorch's own multi-head attention: a GPU runs one cuDNN call and the fused attention for them."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(64, 64, batch_first=True)
        self.mha = nn.MultiheadAttention(64, 4, batch_first=True)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(x)
        h, _ = self.mha(h, h, h, need_weights=False)
        return self.head(h.mean(1))


def test_a_gru_and_multi_head_attention_are_the_kernels_a_gpu_runs():
    with torch.device("meta"):
        model = Recurrent()
    run = trace_run(tiny_workload(model, _tiny_batch), "bf16", 8)
    assert run.status == "ok", run.reason
    names = {op.name for op in run.ops}
    assert {"aten::_cudnn_rnn", "aten::_cudnn_rnn_backward", "aten::_scaled_dot_product_cudnn_attention"} <= names
    assert dtypes(run, "aten::_cudnn_rnn") == {"fp16"}            # cuDNN's RNNs run fp16 under any autocast
    assert not names & {"aten::_safe_softmax", "aten::sigmoid_backward"}   # no math path, no per-step gates
    assert not torch.is_autocast_enabled("cpu")   # the emulation's autocast regions all closed (MHA re-enters it)


class Bottleneck(nn.Module):
    """ResNet's block: 1×1, 3×3, 1×1 convolutions with batch norms, stored channels_last."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(64, 16, 1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                                  nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 64, 1), nn.BatchNorm2d(64))
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head((x + self.body(x)).mean((2, 3)))


def test_a_channels_last_network_has_every_convolution_nhwc_its_1x1_ones_too():
    """A 1×1 kernel is contiguous in both formats; its strides say channels_last (cuDNN runs it NHWC, no
    transposes), and meta's batch norm hands the next convolution a contiguous input."""
    with torch.device("meta"):
        model = Bottleneck().to(memory_format=torch.channels_last)
    images = lambda b, d: (torch.randn(b, 64, 8, 8, device=d).to(memory_format=torch.channels_last),  # noqa: E731
                           torch.randint(0, 10, (b,), device=d))
    run = trace_run(tiny_workload(model, images), "bf16", 4)
    convs = [op for op in run.ops if op.name in ("aten::convolution", "aten::convolution_backward")]
    assert run.status == "ok" and sum(op.calls for op in convs) == 6
    assert {op.variant for op in convs} == {"channels_last"}
    with torch.device("meta"):
        plain = Bottleneck()
    nchw = trace_run(tiny_workload(plain, lambda b, d: (torch.randn(b, 64, 8, 8, device=d),
                                                        torch.randint(0, 10, (b,), device=d))), "bf16", 4)
    assert {op.variant for op in nchw.ops if op.name == "aten::convolution"} == {None}


class NeedsValues(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * float(x.abs().max().item())   # data-dependent: no value on meta


def test_a_model_the_meta_device_cannot_run_is_reported_not_raised():
    with torch.device("meta"):
        model = NeedsValues()
    run = trace_run(tiny_workload(model, lambda b, d: (torch.randn(b, 8, device=d), torch.randn(b, 8, device=d)),
                                  F.mse_loss), "bf16", 4)
    assert run.status == "error"
    assert run.reason.startswith(("RuntimeError", "NotImplementedError")) and len(run.reason.splitlines()) == 1


def test_gpuplan_trace_writes_documents_every_stage_reads(tmp_path, in_repo, capsys):
    assert trace_cli.main(["examples/user_workload.py:build", "--out", str(tmp_path), "--machine", "laptop"]) == 0
    doc = load_document(tmp_path / "laptop" / "trace-sensor-cnn.json")
    assert doc.kind == "trace" and doc.machine == "laptop"
    runs = {(r.precision, r.batch) for r in doc.payload.runs}
    main = doc.payload.main_batch
    assert {(p, main) for p in ("bf16", "fp16", "fp32", "tf32")} <= runs
    assert len({b for p, b in runs if p == "bf16"}) >= 4        # the bf16 batch sweep
    assert all(r.status == "ok" and r.memory.peak_bytes > 0 for r in doc.payload.runs)
    err = capsys.readouterr().err
    assert f"{len(runs)} of {len(runs)} steps traced" in err
    uncounted = [op.name for op in doc.payload.run("bf16", main).ops if op.flops is None and op.launches]
    assert uncounted and "moved by ops with no FLOP formula, timed by their bytes: " in err   # listed, never zero
    assert uncounted[0].split("::")[-1] in err or " more" in err


def test_a_trace_goes_to_the_working_folder_by_default_not_the_committed_results():
    args = trace_cli.build_parser().parse_args(["examples/user_workload.py:build"])
    assert args.out == Path("runs") and args.out == collect_cli.DEFAULT_OUT    # as `gpuplan collect` writes


def test_a_bad_workload_spec_is_one_line_and_exit_2(tmp_path, capsys):
    assert trace_cli.main(["no_such_file.py:build", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no_such_file.py" in err[0]
    assert not any(tmp_path.iterdir())   # nothing written


def test_a_trace_goes_into_a_measured_folder_only_beside_a_workload_it_measured(tmp_path, in_repo, capsys):
    measured = tmp_path / "h100"
    measured.mkdir()
    (measured / "ceilings.json").write_text("{}")
    assert trace_cli.main(["examples/user_workload.py:build", "--out", str(tmp_path), "--machine", "h100"]) == 2
    assert "holds measured results (ceilings.json) and no measurement of sensor-cnn" in capsys.readouterr().err
    assert sorted(p.name for p in measured.iterdir()) == ["ceilings.json"]
    # beside its measured workload the trace splits the steps the folder did not profile (planner/trace/hybrid.py)
    (measured / "workload-sensor-cnn.json").write_text("{}")
    assert trace_cli.main(["examples/user_workload.py:build", "--out", str(tmp_path), "--machine", "h100"]) == 0
    assert sorted(p.name for p in measured.iterdir()) == ["ceilings.json", "trace-sensor-cnn.json",
                                                          "workload-sensor-cnn.json"]
    assert (measured / "ceilings.json").read_text() == "{}"   # nothing measured touched


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_that_runs_under_collect_traces_without_change(example, in_repo):
    spec = f"examples/{example}"
    workload = load_on_meta(spec)
    main = next(b for p, b in trace_configs(spec, workload) if p == "bf16")
    run = trace_run(workload, "bf16", main)
    assert run.status == "ok", run.reason
    assert run.flops > 0 and run.memory.peak_bytes > 0 and run.launches > 0


def test_a_whole_trace_of_the_standard_profile_stops_at_no_catalog_gpu(in_repo):
    payload = trace_workload("examples/user_workload.py:build")
    assert payload.workload == "sensor-cnn" and payload.ok_runs()
    assert max(r.memory.peak_bytes for r in payload.ok_runs()) < 300 << 30


def test_the_committed_trace_fixture_is_what_gpuplan_trace_writes():
    doc = load_document(REPO / "tests" / "fixtures" / "trace" / "trace-sensor-cnn" / "trace-sensor-cnn.json")
    assert doc.collector.name == "trace" and doc.payload.ok_runs()
    assert Path(doc.payload.source).name == "user_workload.py"
