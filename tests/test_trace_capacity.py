"""The allocator replayed at a capacity, with the workspaces cuDNN and cuBLAS allocate (collectors/trace/capacity.py,
workspace.py): the rules, and the H100's conv-rollout boundaries they reproduce (issue 41)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from collectors.trace.allocator import LARGE_BUFFER, Allocator, OutOfMemory, reserved_peak
from collectors.trace.capacity import fits, least_capacity, run
from collectors.trace.collect import aggregate
from collectors.trace.memory import LiveMemory
from collectors.trace.recorder import TraceRecorder
from collectors.trace.step import trace_step
from collectors.trace.workspace import CUBLAS_WORKSPACE
from collectors.workloads import workload_from_dict
from collectors.workloads.models.builtin import conv_rollout
from planner.trace.memory import MemoryLine
from planner.trace.training import pointwise

MIB, GIB = 1 << 20, 1 << 30
H100 = int(84.35e9)   # the H100's 79.18 GiB less its context's 0.62 GiB (CUDA's out-of-memory message)


def recorded(precision: str, make, *shapes: tuple[int, ...], dtype=torch.float32, backward=False) -> LiveMemory:
    memory = LiveMemory()
    tensors = [torch.empty(s, dtype=dtype, device="meta", requires_grad=backward) for s in shapes]
    with TraceRecorder(memory, precision):
        out = make(*tensors)
        if backward:
            out.sum().backward()
    return memory


def workspaces(memory: LiveMemory) -> list[tuple[int, ...]]:
    return [memory.workspaces[k] for k, n in memory.events if k in memory.workspaces and n > 0]


def test_an_nchw_half_convolution_takes_the_nhwc_copies_of_its_images_over_chunks_of_2_31_elements():
    # the conv rollout's 64->64 3x3 convolution at 2,048 realizations: 8 GiB and the weight (the H100 recorded
    # 8,590,008,467 bytes); 4,096 realizations copy the same 2,048 at a time
    weight = (64, 64, 3, 3)
    for batch in (2048, 4096):
        memory = recorded("bf16", lambda x, w: F.conv2d(x, w, padding=1), (batch, 64, 128, 128), weight,
                          dtype=torch.bfloat16)
        assert workspaces(memory) == [(8 * GIB + 64 * 64 * 9 * 2,) * 2]
    # TF32: 16 GiB, then the plan over half as many images (8 GiB: the H100's fallback at 8,723 realizations)
    memory = recorded("tf32", lambda x, w: F.conv2d(x, w, padding=1), (2048, 64, 128, 128), weight)
    assert workspaces(memory) == [(16 * GIB + 64 * 64 * 9 * 4, 8 * GIB + 64 * 64 * 9 * 4)]
    # a small batch: the whole batch's copies
    memory = recorded("fp16", lambda x, w: F.conv2d(x, w, padding=1), (10, 64, 128, 128), weight, dtype=torch.float16)
    assert workspaces(memory)[0][0] == (10 * 2 * 64 * 128 * 128 + 64 * 64 * 9) * 2


def test_no_workspace_where_cudnn_transposes_nothing_or_its_choice_was_not_seen():
    conv = lambda x, w: F.conv2d(x, w, padding=1)  # noqa: E731
    assert not workspaces(recorded("fp32", conv, (64, 64, 32, 32), (64, 64, 3, 3)))       # TF32 off: CUDA cores
    last = recorded("bf16", lambda x, w: F.conv2d(x.to(memory_format=torch.channels_last), w, padding=1),
                    (64, 64, 32, 32), (64, 64, 3, 3), dtype=torch.bfloat16)
    assert not workspaces(last)                                                            # NHWC already
    assert not workspaces(recorded("bf16", conv, (64, 3, 32, 32), (64, 3, 3, 3), dtype=torch.bfloat16))  # 3 channels
    grouped = recorded("bf16", lambda x, w: F.conv2d(x, w, padding=1, groups=2), (64, 64, 32, 32), (64, 32, 3, 3),
                       dtype=torch.bfloat16)
    assert not workspaces(grouped)


def test_a_3d_half_convolution_takes_nhwc_copies_whatever_its_channels():
    # R(2+1)D-18's stem, 3 -> 45 channels and 45 -> 64: the H200 ran nchwToNhwcKernel in and nhwcToNchwKernel out for
    # each of the ten 3-D shapes of its grid (results/h200/diagnostics/newex5-2026-11-28/conv3d-grid.json), where a
    # 2-D convolution of 3 or 45 channels is run without them
    for cin, cout, kernel in ((3, 45, (1, 7, 7)), (45, 64, (3, 1, 1))):
        x, w = (4, cin, 8, 28, 28), (cout, cin, *kernel)
        memory = recorded("bf16", lambda a, b: F.conv3d(a, b), x, w, dtype=torch.bfloat16)
        assert len(workspaces(memory)) == 1
    assert not workspaces(recorded("bf16", lambda a, b: F.conv2d(a, b), (4, 45, 28, 28), (64, 45, 1, 1),
                                   dtype=torch.bfloat16))
    assert not workspaces(recorded("fp32", lambda a, b: F.conv3d(a, b), (4, 45, 8, 28, 28), (64, 45, 3, 1, 1)))


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16),
                                              ("tf32", torch.float32)])
def test_a_workspace_exactly_where_the_planner_times_nhwc_transposes(precision, dtype):
    """An NCHW 1x1 stride-1 convolution is a product on the tensors as they are (planner/trace/training.py
    `pointwise`, no transposes timed): no workspace for NHWC copies, forward or backward; every other convolution
    that `pointwise` leaves to cuDNN's transposes takes one for each of its directions. A Conv1d is given to cuDNN
    as a 2-D one of height 1: its kernel-1 stride-1 one (a Conformer's pointwise layers) is such a product too."""
    cases = [((8, 64, 16, 16), (32, 64, 1, 1), {}, True), ((8, 64, 16, 16), (32, 64, 1, 1), {"stride": 2}, False),
             ((8, 64, 16, 16), (32, 64, 3, 3), {"padding": 1}, False), ((8, 64, 299), (128, 64, 1), {}, True),
             ((8, 64, 299), (128, 64, 1), {"stride": 2}, False), ((8, 64, 299), (64, 64, 3), {"padding": 1}, False)]
    for x, w, options, product in cases:
        memory = LiveMemory()
        with TraceRecorder(memory, precision) as recorder:
            xt, wt = (torch.empty(s, dtype=dtype, device="meta", requires_grad=True) for s in (x, w))
            (F.conv1d if len(x) == 3 else F.conv2d)(xt, wt, **options).sum().backward()
        convs = [op for op in aggregate(recorder.calls) if op.name.startswith("aten::convolution")]
        assert len(convs) == 2
        assert [pointwise(op) for op in convs] == [product, product], (x, w, options)   # forward and backward
        assert len(workspaces(memory)) == (0 if product else 3), (x, w, options)


def test_a_convolutions_backward_takes_one_workspace_for_each_gradient():
    # sensor-cnn's 64->64 1-D convolution, stride 2, at 262,144 windows: 6 GiB forward, 6 GiB for the input's
    # gradient and 6 GiB for the weight's (the H100: 6,442,492,051, 6,442,492,051 and 6,444,360,359 bytes)
    memory = recorded("bf16", lambda x, w: F.conv1d(x, w, stride=2, padding=2), (262144, 64, 128), (64, 64, 5),
                      dtype=torch.bfloat16, backward=True)
    sizes = [plans[0] for plans in workspaces(memory)]
    assert sizes == [6 * GIB + 64 * 64 * 5 * 2] * 3


def test_each_thread_that_runs_a_product_holds_a_cublas_workspace_from_before_the_step():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 16))
        x = torch.empty(8, 16)
    memory = LiveMemory()
    recorder = TraceRecorder(memory, "fp32")
    with recorder:
        out = model(x)
        recorder.phase = "backward"
        out.sum().backward()
    held = [k for k, n in memory.events if n == CUBLAS_WORKSPACE]
    assert len(held) == 2                                         # the forward's thread, the autograd engine's
    assert {k for k, _ in memory.events[:2]} == set(held)          # first in the replay: a step before made them
    assert all(k not in {f for f, n in memory.events if n < 0} for k in held)   # never freed
    assert memory.live["other"] == 2 * CUBLAS_WORKSPACE
    memory = LiveMemory()
    with TraceRecorder(memory, "fp32"), torch.no_grad():
        F.relu(x)
    assert all(n != CUBLAS_WORKSPACE for _, n in memory.events)   # no product, no workspace


def test_of_two_equal_free_blocks_best_fit_takes_the_newer_segments():
    allocator = Allocator()
    allocator.malloc(1, 30 * MIB)
    allocator.malloc(2, 30 * MIB)
    allocator.release(1)
    allocator.release(2)
    allocator.malloc(3, 30 * MIB)
    assert allocator.live[3].segment == 1                         # CUDA gave the newer one the lower address


def test_at_its_limit_the_allocator_returns_its_cached_segments_and_fails_only_then():
    big = 100 * MIB
    # a freed block's segment cached, a small long-lived block carves it, the big one needs a second: kept, the
    # replay needs three segments; at a capacity of two and a bit the allocator returns nothing (none is empty)
    events = [(1, big), (1, -1), (2, 50 * MIB), (3, big), (4, big)]
    assert reserved_peak(events) == 3 * big
    assert not fits(events, {}, 2 * big + 10 * MIB)
    assert fits(events, {}, 3 * big)
    # an empty cached segment is kept while there is room and returned when a new one does not fit
    events = [(1, big), (1, -1), (2, 2 * big)]
    assert run(events, {}, None).reserved == 3 * big
    assert fits(events, {}, 2 * big) and not fits(events, {}, 2 * big - 1)
    with pytest.raises(OutOfMemory):
        run([(1, big)], {}, big - 1)


def test_a_workspace_shrinks_to_what_fits_and_its_cached_segment_holds_the_next_small_blocks():
    big, small = 100 * MIB, 10 * MIB
    plans = (60 * MIB, 30 * MIB)
    # two activations, a workspace, then a small long-lived block and the next activation (the conv rollout's
    # 3-channel outputs, then its next convolution's output)
    events = [(1, big), (2, big), (3, plans[0]), (3, -1), (1, -1), (4, small), (5, big)]
    ws = {3: plans}
    without = [e for e in events if e[0] != 3]
    assert reserved_peak(without) == 3 * big                      # the small block pinned a cached activation segment
    assert least_capacity(events, ws, 2 * big) <= 2 * big + plans[1] + LARGE_BUFFER
    assert fits(events, ws, 2 * big + plans[1])                    # the first plan does not fit: the second does
    assert not fits(events, ws, 2 * big + small - 1)               # none fits: no workspace, the small block pins
    # a plan that fails is not tried first again: the plan that ran is (PyTorch's cache of plans by shapes)
    allocator = run(events + [(6, plans[0]), (6, -1)], {3: plans, 6: plans}, 2 * big + plans[1])
    assert allocator.reserved <= 2 * big + plans[1]


def test_the_capacity_line_is_read_where_the_trace_has_it():
    line = MemoryLine(1e9, 1e6, 2, 0, 0, 3e9, 3e6, 3e9, 3e6, 1e9, 2e6)
    assert line.needed(1000, "capacity") == 3e9 and line.needed(1000, "kept") == 6e9
    old = MemoryLine(1e9, 1e6, 2, 0, 0, 3e9, 3e6, 3e9, 3e6)        # a trace made before the capacity replay
    assert old.needed(1000, "capacity") == 6e9


@pytest.fixture(scope="module")
def rollout():
    with torch.device("meta"):
        return workload_from_dict(conv_rollout(steps=2), "test")   # the boundary probe's run: two steps


@pytest.mark.parametrize("precision,fits_at,fails_at", [("fp16", 17117, 17440), ("tf32", 8723, 8850),
                                                        ("bf16", 6528, 6596), ("fp32", 6548, 6616)])
def test_the_conv_rollouts_h100_boundaries_fall_where_the_capacity_replay_says(rollout, precision, fits_at, fails_at):
    # results/h100-80gb/workload-conv-rollout.json: the largest batch that ran and the first that did not; the
    # replays without workspaces needed 1.45x the live peak in fp16 and TF32 (their boundaries predicted -26 %)
    need = {b: least_capacity(m.events, m.workspaces, m.peak)
            for b in (fits_at, fails_at) for m in [trace_step(rollout, precision, b).memory]}
    assert need[fits_at] <= H100 < need[fails_at]
