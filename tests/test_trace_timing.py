"""How a traced step's time, memory and band are put together (planner/trace/predict.py, bands.py, training.py,
collectors/trace/recorder.py): the phases in order, the host's floor per call, an NHWC batch norm's own kind, an op's
internal temporaries, and bands that weigh each held-out workload alike."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from collectors.trace.memory import LiveMemory
from collectors.trace.recorder import TraceRecorder
from gpuplan_schema.payloads import TracedOp, TraceRun
from planner.trace.bands import TraceBands, sides
from planner.trace.efficiency import Efficiency, Group, KindFit, median_fit
from planner.trace.kinds import Roofs
from planner.trace.model_file import load_learned
from planner.trace.predict import PhaseTime, combine, pipeline
from planner.trace.training import traced_kinds

MS = 1e-3


def test_a_step_whose_gpu_work_comes_last_waits_for_the_hosts_forward_and_backward():
    # dlrm-small on the H100 (bf16, batch 2048): the host issues its forward and backward in 9 ms while the GPU runs
    # them in 3; then the fused AdamW's 12 ms. Measured: 20.9 ms, where the larger of the two totals is 15
    phases = (PhaseTime("forward", 4 * MS, 1.5 * MS, 0.1 * MS), PhaseTime("backward", 5 * MS, 1.5 * MS, 0.1 * MS),
              PhaseTime("optimizer", 0.2 * MS, 12 * MS, 0.0))
    assert pipeline(phases, 12.0) == pytest.approx(21.2 * MS, rel=0.01)
    # the same GPU work first: the host's issue hides behind it
    first = (PhaseTime("forward", 0.2 * MS, 12 * MS, 0.0), *phases[:2])
    assert pipeline(first, 12.0) == pytest.approx(15 * MS, rel=0.01)


def test_one_phase_is_the_p_norm_of_the_gpus_and_the_hosts_time():
    for gpu, host in ((10 * MS, 3 * MS), (3 * MS, 10 * MS), (5 * MS, 5 * MS)):
        assert pipeline((PhaseTime("forward", host, gpu, 0.0),), 2.5) == pytest.approx(combine(gpu, host, 2.5))


def test_the_learned_host_costs_every_aten_call_at_least_the_measured_dispatch():
    for model in load_learned().models.values():
        assert model.host.op_issue_s > 0
        for phase in ("forward", "backward", "optimizer"):
            assert model.host.per_call_s[phase] >= model.host.op_issue_s * (1 - 1e-9)


def _run(layout: str | None) -> TraceRun:
    conv = TracedOp("aten::convolution", "forward", 1, 1e6, 1e6, 1, "bf16", [[8, 64, 56, 56], [64, 64, 1, 1]],
                    1e9, layout)
    norm = TracedOp("aten::native_batch_norm", "forward", 1, 1e6, 1e6, 1, "bf16", [[8, 64, 56, 56]])
    return TraceRun("bf16", 8, "ok", ops=[conv, norm])


def test_a_batch_norm_of_an_nhwc_network_is_a_kind_of_its_own_never_timed_as_the_nchw_one():
    roofs = Roofs({"bf16": 7e14}, 3e12)
    assert ("batch_norm_nhwc", "any") in traced_kinds(_run("channels_last"), roofs)
    assert ("batch_norm", "any") in traced_kinds(_run(None), roofs)
    fit = KindFit(1e-6, 1.5, 3)
    nchw_only = Efficiency(132, {}, {"batch_norm": fit, "convolution/half": fit}, KindFit(5e-6, 2.0, 0))
    assert nchw_only.key("batch_norm_nhwc", "any") is None          # unlearned: the pooled figures, in the unknown
    assert nchw_only.key("convolution", "half") == "convolution/half"  # an NHWC convolution is still a convolution
    both = Efficiency(132, {}, {**nchw_only.kinds, "batch_norm_nhwc": fit}, KindFit(5e-6, 2.0, 0))
    assert both.key("batch_norm_nhwc", "any") == "batch_norm_nhwc"


def test_a_kind_no_profile_showed_is_timed_with_its_familys_figures_else_the_pooled_ones():
    pooled = KindFit(5e-6, 1.5, 0)
    kinds = {"_fused_rms_norm": KindFit(2e-6, 2.0, 9), "native_group_norm_backward": KindFit(4e-6, 4.0, 9),
             "gelu": KindFit(1e-6, 1.1, 9), "mm/half": KindFit(0.0, 9.0, 9)}
    efficiency = Efficiency(132, {}, kinds, pooled)
    norm = efficiency.unlearned("native_group_norm")   # the learned normalisations' medians
    assert (norm.per_call_s, norm.slowdown) == (pytest.approx(2e-6), pytest.approx(2.0))
    # cuDNN's NCHW batch norm is timed by its per-channel roof (training.CUDNN_NCHW_BYTES): no member of the family
    with_cudnn = Efficiency(132, {}, {**kinds, "batch_norm": KindFit(4e-6, 1.2, 9)}, pooled)
    assert with_cudnn.unlearned("native_group_norm").slowdown == pytest.approx(2.0)
    # a family none of whose kinds was learned takes its other pass's figures, before the pooled ones
    backwards_only = Efficiency(132, {}, {k: f for k, f in kinds.items() if k != "_fused_rms_norm"}, pooled)
    assert backwards_only.unlearned("native_group_norm").slowdown == pytest.approx(4.0)
    assert efficiency.unlearned("silu").slowdown == pytest.approx(1.1)      # an activation, as GELU
    assert efficiency.unlearned("silu_backward").slowdown == pytest.approx(1.1)   # no activation's backward: GELU's
    assert efficiency.unlearned("pow") == pooled               # no family
    group = Group(calls=2, math_s=0.0, memory_s=1e-3)
    seconds, learned = efficiency.time_s("native_group_norm", "any", [group])
    assert (seconds, learned) == (pytest.approx(2 * 2e-6 + 2.0 * 2e-3), False)   # still in the unknown share
    # each kind weighs by the profile rows that taught it: one workload's rare kind does not move the pool much
    rare = {"add": KindFit(1e-6, 1.2, 40), "mul": KindFit(1e-6, 1.3, 30), "bag": KindFit(1e-6, 3.0, 2),
            "bag_backward": KindFit(1e-6, 3.5, 2)}
    assert median_fit(list(rare.values())).slowdown == pytest.approx(1.2)


def test_a_band_weighs_each_held_out_workload_alike_not_each_step():
    # a workload measured at 100 batches, all predicted right, and one measured twice, predicted twice too slow
    errors, groups = [0.0] * 100 + [1.0, 1.0], ["many"] * 100 + ["few"] * 2
    assert sides(errors) == (0.0, 0.0)                     # by step: the well-measured workload sets the band
    low, high = sides(errors, groups)
    assert low == pytest.approx(0.5) and high == 0.0       # by workload: the measurement at half the prediction


def test_a_band_across_architectures_keeps_each_residuals_workload():
    bands = TraceBands(eager=[0.1, -0.2], eager_workloads=["a", "b"], cross=[0.05, -0.05, 0.0])
    errors, groups = bands.errors(same_architecture=False, compiled=False)
    assert len(errors) == 6 and groups == ["a"] * 3 + ["b"] * 3
    assert bands.errors(same_architecture=True, compiled=True) == ([0.1, -0.2], ["a", "b"])  # no compiled: eager


def test_a_bands_sides_are_those_of_its_residuals_for_each_kind_of_prediction():
    # worked out once per (architecture, compile) and reused: each kind still reads its own residuals
    bands = TraceBands(eager=[0.1, -0.2, 0.3], eager_workloads=["a", "b", "b"], compiled=[0.5, -0.4],
                       compiled_workloads=["a", "b"], cross=[0.05, -0.3])
    for same in (True, False):
        for compiled in (True, False):
            errors, groups = bands.errors(same_architecture=same, compiled=compiled)
            low, high, count, workloads = bands.residual_sides(same, compiled)
            assert (low, high) == sides(errors, groups) and count == len(errors) and workloads == 2
    assert bands.residual_sides(True, True)[:2] != bands.residual_sides(True, False)[:2]
    assert bands.residual_sides(False, False)[:2] != bands.residual_sides(True, False)[:2]


def test_a_reduced_mse_loss_holds_its_unreduced_loss_while_it_runs_as_cudas_kernel_does():
    def peak(reduction: str) -> int:
        memory = LiveMemory()
        x, y = torch.empty(4096, 3000, device="meta"), torch.empty(4096, 3000, device="meta")
        memory.adopt((x, y), "inputs")
        memory.reset_peak()
        with TraceRecorder(memory):
            F.mse_loss(x, y, reduction=reduction)
        return memory.peak - memory.total
    assert peak("mean") >= 4096 * 3000 * 4          # the unreduced loss, freed before the op returns
    assert peak("none") == 4096 * 3000 * 4          # unreduced, the result is that tensor: nothing more
