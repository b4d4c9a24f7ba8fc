"""Workload collectors on the CPU: the reference models as DESIGN.md defines them, FLOP and byte
accounting against hand counts, user workload files through the real CLI (good and bad), the
out-of-memory boundary search, and the standard profile with its tidy export.

Each real collection runs once per module (module-scoped fixtures); the bad-file subprocesses
run in parallel, since each one imports torch.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from paths import REPO
from torch import nn

from collectors.__main__ import main as collect_main
from collectors.core.profiles import PROFILES
from collectors.workloads import Workload, WorkloadError, load_workload, workload_from_dict
from collectors.workloads.accounting import count_flops, estimate_traffic
from collectors.workloads.collect import collect_workload
from collectors.workloads.models import builtin
from collectors.workloads.models.small import ConvOperator, rollout
from collectors.workloads.sweep import Context
from collectors.workloads.training import Variant, build_step, prepare_model
from gpuplan_schema.progress import Progress
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import load_document
from planner.export.tidy import iter_tidy_rows

EXAMPLE = "examples/user_workload.py:build"
CPU = torch.device("cpu")
STATUSES = {"ok", "oom", "skipped", "error"}




def quiet_progress() -> Progress:
    return Progress("test", total=1, stream=io.StringIO())


def write_user_file(folder: Path, stem: str, text: str) -> Path:
    path = folder / f"{stem}.py"
    path.write_text(text, encoding="utf-8")
    return path


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ── the reference workloads (DESIGN.md "Reference workloads") ──────────────────────────────────

def gpt_parameters(vocab: int, seq: int, d: int, layers: int) -> int:
    """Token and position embeddings, per block two LayerNorms (weight + bias), qkv and output
    projections and the ×4 GELU MLP (Linear with bias), a final LayerNorm, an untied head without bias."""
    block = 2 * (2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    return vocab * d + seq * d + layers * block + 2 * d + d * vocab


def test_resnet50_has_torchvisions_parameter_count():
    with torch.device("meta"):
        spec = builtin.resnet50()
    assert parameters(spec["model"]) == 25_557_032
    assert spec["loss"] is F.cross_entropy and spec["unit"] == "images"


def test_gpt_small_parameter_count_is_the_design_definition():
    with torch.device("meta"):
        model = builtin.gpt_small()["model"]
    assert parameters(model) == gpt_parameters(vocab=50257, seq=1024, d=768, layers=12)
    assert len(model.blocks) == 12 and all(b.n_heads == 12 for b in model.blocks)
    assert model.head.bias is None and model.head.weight is not model.tok.weight  # untied, no bias
    assert all(m.bias is not None for m in model.modules() if isinstance(m, (nn.LayerNorm, nn.Linear))
               and m is not model.head)


def test_tiny_gpt_runs_and_follows_the_same_formula():
    spec = builtin.TINY["gpt-small"]()
    model = spec["model"]
    assert parameters(model) == gpt_parameters(vocab=50257, seq=64, d=128, layers=2)
    inputs, targets = spec["make_batch"](2, CPU)
    assert inputs.shape == targets.shape == (2, 64)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])  # next-token targets
    with torch.no_grad():
        logits = model(inputs)
    assert logits.shape == (2, 64, 50257)
    assert spec["loss"](logits.bfloat16(), targets).dtype == torch.float32  # cross-entropy on fp32 logits


def test_mlp_stgan_layer_widths():
    model = builtin.mlp_stgan()["model"]
    linears = [m for m in model if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [
        (3000, 700), (700, 100), (100, 50), (50, 100), (100, 700), (700, 3000)]
    kinds = [type(m).__name__ for m in model]
    assert kinds == ["Linear", "BatchNorm1d", "ReLU"] + ["Linear", "ReLU"] * 4 + ["Linear"]
    assert model[1].num_features == 700
    assert model(torch.randn(4, 3000)).shape == (4, 3000)


def test_conv_rollout_operator_structure():
    spec = builtin.conv_rollout()
    assert spec["loss"] is None and spec["unit"] == "realizations"
    layers = list(spec["model"].net)
    assert len(layers) == 13
    for i in range(4):
        conv, norm, act = layers[3 * i: 3 * i + 3]
        assert isinstance(conv, nn.Conv2d) and conv.kernel_size == (3, 3) and conv.out_channels == 64
        assert conv.in_channels == (3 if i == 0 else 64)
        assert isinstance(norm, nn.InstanceNorm2d) and norm.num_features == 64
        assert isinstance(act, nn.GELU)
    last = layers[-1]
    assert isinstance(last, nn.Conv2d) and last.kernel_size == (1, 1) and (last.in_channels, last.out_channels) == (
        64, 3)
    state, targets = spec["make_batch"](2, CPU)
    assert state.shape == (2, 3, 128, 128) and targets is None


def test_conv_rollout_is_residual():
    model = ConvOperator()
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    x = torch.randn(2, 3, 16, 16)
    assert torch.equal(model(x), x)
    out = rollout(model, x, steps=3)
    assert torch.equal(out, x) and not out.requires_grad  # no_grad rollout


# ── FLOP and byte accounting ───────────────────────────────────────────────────────────────────

B, IN, OUT = 8, 32, 16


def linear_workload(inputs_need_grad: bool = False, training: bool = True) -> Workload:
    """A single Linear layer as a user would write it (the dict of the workload interface)."""

    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(batch_size, IN, device=device, requires_grad=inputs_need_grad)
        return x, torch.randn(batch_size, OUT, device=device)

    return workload_from_dict({"name": "linear", "model": nn.Linear(IN, OUT), "make_batch": make_batch,
                               "loss": F.mse_loss if training else None}, "test")


def ready_step(workload: Workload, batch: int = B):
    model = prepare_model(workload, CPU, Variant())
    step = build_step(workload, model, "fp32", batch, CPU, Variant())
    step.run()  # as measure_point does: the first step creates the optimizer state
    return model, step


def test_linear_flops_training_with_data_inputs():
    # Forward 2·B·in·out; backward only the weight gradient (2·B·in·out), since the input is
    # data and needs no gradient. The bias and the loss count no FLOPs.
    _, step = ready_step(linear_workload())
    forward = 2 * B * IN * OUT
    assert count_flops(step) == forward + forward


def test_linear_flops_training_with_input_gradient():
    # When the input needs a gradient too, backward is 2× forward (grad input + grad weight).
    _, step = ready_step(linear_workload(inputs_need_grad=True))
    forward = 2 * B * IN * OUT
    assert count_flops(step) == forward + 2 * forward


def test_linear_flops_inference():
    _, step = ready_step(linear_workload(training=False))
    assert step.optimizer is None
    assert count_flops(step) == 2 * B * IN * OUT


def test_traffic_of_fp32_adamw_training_follows_the_documented_model():
    model, step = ready_step(linear_workload())
    assert isinstance(step.optimizer, torch.optim.AdamW)
    param_bytes = (IN * OUT + OUT) * 4
    traffic = estimate_traffic(step, model)
    assert traffic.params_bytes == 2 * param_bytes     # read in forward, written by the update
    assert traffic.grads_bytes == 2 * param_bytes      # written in backward, read by the optimizer
    assert traffic.optimizer_bytes == 2 * 2 * param_bytes  # two moments, each read and written
    # Saved for backward, counted twice: at least the input (for the weight gradient).
    assert traffic.activations_bytes >= 2 * B * IN * 4 and traffic.activations_bytes % 2 == 0
    assert traffic.total_bytes == sum((traffic.params_bytes, traffic.grads_bytes, traffic.optimizer_bytes,
                                       traffic.activations_bytes))


def test_traffic_of_inference_counts_parameters_once_per_forward_pass():
    model, step = ready_step(linear_workload(training=False))
    traffic = estimate_traffic(step, model)
    assert traffic.params_bytes == (IN * OUT + OUT) * 4
    assert traffic.grads_bytes == traffic.optimizer_bytes == 0
    assert traffic.activations_bytes >= 2 * B * OUT * 4  # the output, written and read once
    assert estimate_traffic(step, model, forward_passes=5).params_bytes == 5 * (IN * OUT + OUT) * 4


# ── the example user workload through the real CLI ─────────────────────────────────────────────

@pytest.fixture(scope="module")
def example_run(in_repo, tmp_path_factory) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("example")
    rc = collect_main(["--only", "workloads", "--workload", EXAMPLE, "--out", str(out), "--machine", "t"])
    return rc, out / "t"


def test_example_user_workload_collects_end_to_end(example_run):
    rc, folder = example_run
    assert rc == 0
    paths = sorted(folder.glob("*.json"))
    assert [p.name for p in paths] == ["workload-sensor-cnn.json"]
    doc = load_document(paths[0])
    payload = doc.payload
    assert doc.kind == "workload" and doc.machine == "t"
    assert payload.source == "examples/user_workload.py" and payload.unit == "windows" and payload.training
    assert payload.device == "cpu" and payload.scale == "tiny" and payload.profile == "quick"
    assert payload.parameters == parameters(load_workload(EXAMPLE).model)
    assert payload.points and all(p.status == "ok" for p in payload.points)
    for p in payload.points:
        assert p.throughput_per_s > 0 and p.flops_per_step > 0
        assert p.step_s.median > 0 and p.traffic.total_bytes > 0


def test_example_user_workload_follows_the_interface(in_repo):
    workload = load_workload(EXAMPLE)
    inputs, targets = workload.make_batch(4, CPU)
    loss = workload.loss(workload.forward(inputs), targets)
    assert loss.dim() == 0 and workload.batch_start > 1


# ── bad user workloads: exit 2, one line naming the file and the key, nothing written ────────

BAD_CLI = {
    "raises-on-import": ("broken.py:build", "broken.py: importing it raised RuntimeError: no such dataset"),
    "no-such-file": ("missing.py:build", "missing.py: no such workload file"),
    "no-function": ("broken.py", "broken.py: not a built-in workload"),
}


@pytest.fixture(scope="module")
def bad_cli_runs(tmp_path_factory) -> tuple[Path, dict[str, tuple[int, list[str], Path]]]:
    """Each bad case through `python -m collectors`, all started at once (each imports torch)."""
    tmp = tmp_path_factory.mktemp("bad")
    write_user_file(tmp, "broken", 'raise RuntimeError("no such dataset")\n')
    procs = {}
    for case, (spec, _) in BAD_CLI.items():
        out = tmp / f"out-{case}"
        cmd = [sys.executable, "-m", "collectors", "--only", "workloads", "--workload", str(tmp / spec),
               "--out", str(out), "--machine", "t"]
        procs[case] = (subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
                       out)
    runs = {}
    for case, (proc, out) in procs.items():
        _, err = proc.communicate(timeout=120)
        runs[case] = (proc.returncode, err.splitlines(), out)
    return tmp, runs


@pytest.mark.parametrize("case", list(BAD_CLI))
def test_bad_user_workload_on_the_cli(bad_cli_runs, case):
    tmp, runs = bad_cli_runs
    rc, err, out = runs[case]
    errors = [line for line in err if line.startswith("error:")]
    assert rc == 2
    assert len(errors) == 1 and errors[0].startswith(f"error: {tmp / BAD_CLI[case][1]}")
    assert not any("Traceback" in line for line in err)
    assert not out.exists()  # nothing written, not even the machine folder


def test_bad_user_workload_stderr_is_only_the_error_line(bad_cli_runs):
    _, runs = bad_cli_runs
    _, err, _ = runs["no-such-file"]
    assert len(err) == 1 and err[0].startswith("error:")


def test_bad_user_workload_fails_before_any_collector_writes(tmp_path):
    spec = f"{tmp_path / 'missing.py'}:build"
    rc = collect_main(["--only", "environment", "workloads", "--workload", spec, "--out", str(tmp_path / "out"),
                       "--machine", "t"])
    assert rc == 2
    assert not (tmp_path / "out").exists()


GOOD_BODY = (
    "import torch\n"
    "import torch.nn.functional as F\n\n"
    "def make_batch(batch_size, device):\n"
    "    return torch.randn(batch_size, 4, device=device), torch.randn(batch_size, 2, device=device)\n\n"
)


def spec_file(entries: str) -> str:
    return GOOD_BODY + "def build():\n    return {" + entries + "}\n"


BASE = '"name": "w", "model": torch.nn.Linear(4, 2), "loss": F.mse_loss'
BAD_FILES = {
    "syntax-error": ("def build(:\n", "build", "importing it raised SyntaxError"),
    "function-raises": ("def build():\n    raise KeyError('weights.pt')\n", "build",
                        "build() raised KeyError: 'weights.pt'"),
    "no-such-function": (spec_file(BASE + ', "make_batch": make_batch'), "make", "make: no such function"),
    "not-a-dict": ("def build():\n    return [1, 2]\n", "build", "must return a dict, got list"),
    "missing-make_batch": (spec_file(BASE), "build", "make_batch: missing from the workload dict"),
    "missing-loss": (spec_file('"name": "w", "model": torch.nn.Linear(4, 2), "make_batch": make_batch'), "build",
                     "loss: missing from the workload dict"),
    "model-not-a-module": (spec_file('"name": "w", "model": "resnet50", "make_batch": make_batch, "loss": None'),
                           "build", "model: invalid value 'resnet50'"),
    "unknown-key": (spec_file(BASE + ', "make_batch": make_batch, "batch_size": 64'), "build",
                    "batch_size: unknown key"),
    "batch_start-zero": (spec_file(BASE + ', "make_batch": make_batch, "batch_start": 0'), "build",
                         "batch_start: invalid value 0"),
    "make_batch-not-callable": (spec_file(BASE + ', "make_batch": 3'), "build", "make_batch: invalid value 3"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_user_workload_file_is_one_line_naming_file_and_key(tmp_path, case):
    text, fn, expected = BAD_FILES[case]
    path = write_user_file(tmp_path, case.replace("-", "_"), text)
    with pytest.raises(WorkloadError) as info:
        load_workload(f"{path}:{fn}")
    message = str(info.value)
    assert message.startswith(f"{path}: ") and expected in message
    assert "\n" not in message


@pytest.mark.parametrize(("spec", "expected"), [
    ("no/such/dir/w.py:build", "no/such/dir/w.py: no such workload file"),
    ("examples/user_workload.py", "examples/user_workload.py: not a built-in workload"),
    ("gpt-large", "gpt-large: not a built-in workload (gpt-small, resnet50, mlp-stgan, conv-rollout)"),
    ("w.py:1build", "w.py:1build: not a built-in workload"),
])
def test_bad_workload_spec(in_repo, spec, expected):
    with pytest.raises(WorkloadError, match="^" + expected.replace("(", r"\(").replace(")", r"\)")):
        load_workload(spec)


def test_user_file_with_a_dataclass_config_loads(tmp_path):
    text = ("from __future__ import annotations\n"
            "from dataclasses import dataclass\n" + GOOD_BODY +
            "@dataclass\nclass Config:\n    width: int = 4\n\n"
            "def build():\n"
            "    return {\"name\": \"w\", \"model\": torch.nn.Linear(Config().width, 2), "
            "\"make_batch\": make_batch, \"loss\": F.mse_loss}\n")
    path = write_user_file(tmp_path, "with_config", text)
    assert load_workload(f"{path}:build").name == "w"


# ── errors inside a user's step ────────────────────────────────────────────────────────────────

ERROR_FILE = '''\
import torch
import torch.nn.functional as F


def make_batch(batch_size, device):
    return torch.randn(batch_size, 8, device=device), torch.randn(batch_size, 2, device=device)


def loss(outputs, targets):
    if outputs.shape[0] >= {first_bad}:
        raise {error}
    return F.mse_loss(outputs, targets)


def build():
    return {{"name": "fails", "model": torch.nn.Linear(8, 2), "make_batch": make_batch, "loss": loss,
            "batch_start": 4}}
'''


def error_spec(folder: Path, error: str, first_bad: int = 0) -> str:
    path = write_user_file(folder, "fails", ERROR_FILE.format(error=error, first_bad=first_bad))
    return f"{path}:build"


def run_failing_collection(spec: str):
    return collect_workload(spec, PROFILES["standard"], Context(CPU), quiet_progress())


def test_runtime_error_is_recorded_and_the_collection_goes_on(tmp_path):
    payload = run_failing_collection(error_spec(tmp_path, 'RuntimeError("CUDA error: device-side assert")'))
    assert payload.points and {p.status for p in payload.points} == {"error"}
    assert {p.precision for p in payload.points} == {"fp32", "bf16"}  # the next precision still ran
    assert {b.status for b in payload.boundaries} == {"error"}
    assert all(p.reason == "RuntimeError: CUDA error: device-side assert" for p in payload.points)


def test_value_error_in_the_step_is_recorded_as_error(tmp_path):
    payload = run_failing_collection(error_spec(tmp_path, 'ValueError("Expected input batch_size (4)")'))
    assert {p.status for p in payload.points} == {"error"}


def test_error_with_an_empty_message_is_recorded_as_error(tmp_path):
    payload = run_failing_collection(error_spec(tmp_path, "RuntimeError()"))
    assert {p.status for p in payload.points} == {"error"}
    assert {p.reason for p in payload.points} == {"RuntimeError"}


# ── the standard profile on the CPU, and its tidy export ───────────────────────────────────────

@pytest.fixture(scope="module")
def standard_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("standard")
    rc = collect_main(["--only", "workloads", "--workload", "mlp-stgan", "--profile", "standard",
                       "--out", str(out), "--machine", "cpu-standard"])
    assert rc == 0
    return out / "cpu-standard"


def test_standard_profile_on_cpu(standard_run):
    payload = load_document(standard_run / "workload-mlp-stgan.json").payload
    assert payload.scale == "tiny" and payload.profile == "standard" and payload.device == "cpu"
    assert payload.complete
    # the trials again at the sweep's knee where it is another batch than the main one (tests/test_knee_trials.py)
    knee = {"knee"} if payload.sweep_knee("bf16") != 256 else set()
    assert {p.sweep for p in payload.points} == {"batch", "variant", "repeat"} | knee
    assert all(p.status == "ok" and p.throughput_per_s > 0 and p.flops_per_step > 0 for p in payload.points)
    # the timed sweep and the boundary at the main precision; fp32 gets its main-batch point
    batch_points = {(p.precision, p.batch) for p in payload.points if p.sweep == "batch"}
    assert batch_points == {("bf16", 256), ("bf16", 512)}
    assert {(p.precision, p.batch) for p in payload.points if p.sweep == "variant"} == {("bf16", 256), ("fp32", 256)}
    assert {b.precision for b in payload.boundaries} == {"bf16"}
    for b in payload.boundaries:  # a CPU never runs out of memory: the sweep stops at the cap
        assert (b.status, b.capped, b.max_batch, b.first_oom_batch) == ("ok", True, 512, None)
        assert b.reason == "no OOM up to the search cap of 512"


def test_export_of_a_cpu_collection(standard_run):
    rows = list(iter_tidy_rows(load_machine(standard_run)))
    metrics = {r.metric for r in rows}
    assert {"step_s", "throughput_per_s", "flops_per_step", "bytes_per_step_est", "max_batch"} <= metrics
    assert {r.status for r in rows} <= STATUSES
    assert all(r.workload == "mlp-stgan" and r.machine == "cpu-standard" and r.gpu is None for r in rows)
    max_batch = [r for r in rows if r.metric == "max_batch"]
    assert len(max_batch) == 1
    assert all(r.batch is None and r.value == 512 and (r.allocator, r.capped) == ("default", True) for r in max_batch)
    assert all(r.value > 0 for r in rows if r.metric in ("step_s", "throughput_per_s", "bytes_per_step_est"))


def test_user_workloads_doc_shows_the_example_verbatim():
    """docs/user-workloads.md's copy of the example is the file the tests run, to the character."""
    root = REPO
    readme = (root / "docs" / "user-workloads.md").read_text(encoding="utf-8")
    example = (root / "examples" / "user_workload.py").read_text(encoding="utf-8")
    assert f"```python\n{example}```" in readme
