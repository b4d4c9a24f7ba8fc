"""The kernels a traced cuDNN RNN call launches (collectors/trace/rnn.py): small nn.LSTMs and nn.GRUs traced on the
meta device as a training step, their `_cudnn_rnn` and `_cudnn_rnn_backward` rows counted by the rule, and the
planner paying its fixed and host costs per launch (planner/trace/efficiency.py, predict.py)."""

from __future__ import annotations

import pytest
import torch
from grid_runs import small_grid
from torch import nn

from collectors.trace.collect import trace_run
from collectors.trace.rnn import FORWARD_PER_LAYER, PER_CELL_STEP, PERSISTENT, SPLIT_MAX_BATCH
from collectors.workloads import Workload
from gpuplan_schema.payloads import TracedOp, TraceRun
from planner.trace.efficiency import Efficiency, Group, KindFit
from planner.trace.kinds import Roofs
from planner.trace.predict import LIBRARY_LAUNCH, HostModel, extra_launches, step_phases

META = torch.device("meta")
FORWARD, BACKWARD = "aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"


class Recurrent(nn.Module):
    def __init__(self, rnn: nn.RNNBase, packed: bool = False) -> None:
        super().__init__()
        self.rnn, self.packed = rnn, packed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed:   # every sequence of the batch a step shorter than the one before, as a sorted batch
            lengths = torch.arange(x.shape[0], x.shape[0] - x.shape[1], -1).clamp(min=1)
            out, _ = self.rnn(nn.utils.rnn.pack_padded_sequence(x, lengths))
            return out.data
        return self.rnn(x)[0]


def traced(rnn: nn.RNNBase, steps: int, batch: int, precision: str = "fp32", packed: bool = False) -> TraceRun:
    """One training step of `rnn` over `steps` time steps traced on meta (batch first where the RNN is)."""
    first = rnn.batch_first

    def make_batch(b: int, device: torch.device) -> tuple[torch.Tensor, None]:
        return torch.randn((b, steps, rnn.input_size) if first else (steps, b, rnn.input_size), device=device), None
    workload = Workload("rnn", Recurrent(rnn, packed), make_batch, lambda out, _: out.float().square().mean())
    run = trace_run(workload, precision, batch)
    assert run.status == "ok", run.reason
    return run


def rnn_op(run: TraceRun, name: str) -> TracedOp:
    (op,) = [o for o in run.ops if o.name == name]
    return op


def standard(steps: int, layers: int, directions: int) -> int:
    """What the rule counts for the standard algorithm's forward: two kernels a cell step, three a layer and
    direction."""
    return PER_CELL_STEP * steps * layers * directions + FORWARD_PER_LAYER * layers * directions


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_standard_rnns_forward_launches_two_kernels_a_time_step_layer_and_direction(cls, layers, bidirectional):
    """Hidden 256 in fp32: cuDNN's standard algorithm (no persistent kernel takes fp32 at that width); one call each
    way whatever the layers and directions."""
    with META:
        rnn = cls(256, 256, layers, bidirectional=bidirectional)
    run = traced(rnn, steps=10, batch=4)
    for name in (FORWARD, BACKWARD):
        assert rnn_op(run, name).calls == 1 and rnn_op(run, name).variant is None
    assert rnn_op(run, FORWARD).launches == standard(10, layers, 2 if bidirectional else 1)


# The backward's launches, counted by hand from the grid's families (rnn.py's docstring) for 10 steps of hidden 256 in
# fp32 at batch 4: the fills (an LSTM 3, a GRU 2) and fp32's copy; 5 a layer and direction; 3 a bidirectional layer;
# a stack's input-gradient products chunked (5 in all for 10 steps: 3 more than one a layer); per cell step the
# product and the elementwise kernel, and an LSTM's memset (its depth 4 × 256 = 1024 splits; a GRU's 768 does not)
BACKWARD_LAUNCHES = {
    (nn.LSTM, 1, False): 4 + 5 + 10 * 3, (nn.LSTM, 1, True): 4 + 10 + 3 + 20 * 3,
    (nn.LSTM, 2, False): 4 + 10 + 3 + 20 * 3, (nn.LSTM, 2, True): 4 + 20 + 6 + 40 * 3,
    (nn.GRU, 1, False): 3 + 5 + 10 * 2, (nn.GRU, 2, True): 3 + 20 + 6 + 40 * 2,
}


@pytest.mark.parametrize(("cls", "layers", "bidirectional"), list(BACKWARD_LAUNCHES))
def test_a_standard_rnns_backward_launches_what_cudnn_launched_on_the_grid(cls, layers, bidirectional):
    with META:
        rnn = cls(256, 256, layers, bidirectional=bidirectional)
    assert rnn_op(traced(rnn, steps=10, batch=4), BACKWARD).launches == BACKWARD_LAUNCHES[cls, layers, bidirectional]


def test_the_launches_grow_with_the_sequence_and_the_split_goes_at_large_batches():
    """Two cell kernels a step forward, three backward while cuBLAS splits the LSTM's recurrent product (its batch up
    to SPLIT_MAX_BATCH), two past it; the forward's launches do not depend on the batch."""
    with META:
        rnn = nn.LSTM(256, 256, 2, batch_first=True)   # batch first: the time steps are the second dimension
    short, long, wide = traced(rnn, 10, 4), traced(rnn, 30, 4), traced(rnn, 10, SPLIT_MAX_BATCH + 8)
    assert rnn_op(long, FORWARD).launches - rnn_op(short, FORWARD).launches == PER_CELL_STEP * 20 * 2
    assert rnn_op(long, BACKWARD).launches - rnn_op(short, BACKWARD).launches == 3 * 20 * 2 + 10  # + 10 chunks
    assert rnn_op(wide, FORWARD).launches == rnn_op(short, FORWARD).launches
    assert rnn_op(short, BACKWARD).launches - rnn_op(wide, BACKWARD).launches == 10 * 2   # no split, a cell step


def test_an_fp16_one_layer_lstm_of_a_small_batch_runs_one_persistent_kernel():
    """PyTorch picks CUDNN_RNN_ALGO_PERSIST_STATIC on an A100/H100/H200 for an fp16 (here under bf16 autocast, which
    runs LSTMs in fp16) one-layer, one-direction LSTM whose batch is a multiple of 8 up to 128; not for 12, 136, a
    second layer or direction, or a GRU. Forward 3 kernels (the input product, an initialisation, the persistent
    kernel), backward 13 (its 10 and the 3 fills), as the grid's at batches 8 and 64 and hidden 1024."""
    with META:
        lstm = nn.LSTM(256, 256)
    run = traced(lstm, 20, 8, "bf16")
    for name, launches in ((FORWARD, 3), (BACKWARD, 13)):
        op = rnn_op(run, name)
        assert op.dtype == "fp16" and op.variant == PERSISTENT and op.launches == launches
    for batch in (12, 136):
        assert rnn_op(traced(lstm, 20, batch, "bf16"), FORWARD).launches == standard(20, 1, 1)
    assert rnn_op(traced(lstm, 20, 8, "fp32"), FORWARD).variant is None   # fp32 is not cuDNN's HALF
    with META:
        others = [nn.LSTM(256, 256, 2), nn.LSTM(256, 256, bidirectional=True), nn.GRU(256, 256)]
    for rnn in others:
        assert rnn_op(traced(rnn, 20, 8, "bf16"), FORWARD).variant is None


def test_a_small_hidden_size_runs_persistent_kernels_unless_the_input_is_packed():
    """PERSIST_STATIC_SMALL_H: hidden ≤ 192 forward and ≤ 128 backward for an LSTM, any layers, directions and dtype
    but double (2 kernels a layer and direction forward); never for a packed batch (its sequences may differ in
    length), whose reverse direction copies its state each time the batch size changes (twice), and whose backward
    makes a weight-gradient product a cell step and copies the state 2 + 3 times a change."""
    with META:
        lstm = nn.LSTM(64, 160, 2, bidirectional=True)
    run = traced(lstm, 10, 4)
    assert rnn_op(run, FORWARD).variant == PERSISTENT and rnn_op(run, FORWARD).launches == 4 * 2
    assert rnn_op(run, BACKWARD).variant is None   # 160 is past the backward's 128; depth 640: no split
    assert rnn_op(run, BACKWARD).launches == 4 + 4 * 5 + 2 * 3 + 40 * 2
    packed = traced(lstm, 10, 4, packed=True)   # 10 time steps, batch sizes 4, 4, ..., 3, 2, 1: 3 changes
    assert rnn_op(packed, FORWARD).variant is None
    assert rnn_op(packed, FORWARD).launches == standard(10, 2, 2) + 2 * 3 * 2
    assert rnn_op(packed, BACKWARD).launches == 4 + 4 * 5 + 2 * 3 + 40 * 3 + 2 * 3 * (2 + 3)


def test_the_planner_pays_an_rnns_fixed_and_host_costs_per_launch():
    """The learned fixed cost is paid per kernel launched (efficiency.py), and the host issues each kernel beyond
    one a call at LIBRARY_LAUNCH times the measured cost of issuing one op (predict.py), in the phase that launched
    it."""
    with META:
        run = traced(nn.LSTM(256, 256, 2), 10, 4)
    fwd, bwd = rnn_op(run, FORWARD), rnn_op(run, BACKWARD)
    assert extra_launches(run) == {"forward": fwd.launches - 1, "backward": bwd.launches - 1}
    assert Group(calls=1, math_s=0.0, memory_s=1e-6, launches=fwd.launches).kernels == fwd.launches
    assert Group(calls=3, math_s=0.0, memory_s=1e-6).kernels == 3
    idle = HostModel({"forward": 1e-5, "backward": 1e-5, "optimizer": 1e-5}, 0.0)
    busy = HostModel({"forward": 1e-5, "backward": 1e-5, "optimizer": 1e-5}, 0.0, op_issue_s=2e-5)
    efficiency = Efficiency(132, {}, {}, KindFit(0.0, 1.0, 0))
    roofs = Roofs({"fp32": 5e13}, 3e12, 132, 1.98e9)
    before = {p.name: p.host_s for p in step_phases(run, efficiency, roofs, idle)}
    after = {p.name: p.host_s for p in step_phases(run, efficiency, roofs, busy)}
    per_launch = LIBRARY_LAUNCH * 2e-5   # a library's launch, over one op's issue
    assert busy.launch_s == pytest.approx(per_launch)
    assert after["forward"] - before["forward"] == pytest.approx(per_launch * (fwd.launches - 1))
    assert after["backward"] - before["backward"] == pytest.approx(per_launch * (bwd.launches - 1))
    assert after["optimizer"] == before["optimizer"]


def test_the_gpu_rnn_benchmark_counts_what_the_trace_counts_and_writes_one_json_on_the_cpu(tmp_path, capsys):
    """benchmarks/gpu_rnn_kernels.py --small: each point's rule is what the trace records for the same module (the
    GPU run sets the kernels cuDNN launched beside it; the CPU runs no cuDNN, so none is counted here)."""
    bench, doc = small_grid("gpu_rnn_kernels.py", tmp_path)
    assert len(doc["points"]) == len(bench.grid(True))
    for p in doc["points"]:
        with META:
            rnn = bench.MODES[p["mode"]][0](p["hidden"], p["hidden"], p["layers"], bidirectional=p["bidirectional"])
        run = traced(rnn, p["steps"], p["batch"], p["dtype"], p["packed"])
        for name in (FORWARD, BACKWARD):
            assert p["rule"][name]["launches"] == rnn_op(run, name).launches
            assert (p["rule"][name]["algorithm"] == PERSISTENT) == (rnn_op(run, name).variant == PERSISTENT)
        assert p["issue_s"]["forward"]["n"] == bench.REPEATS and p["launches"] == {FORWARD: 0, BACKWARD: 0}
    assert "rule" in capsys.readouterr().out
