"""A convolution's bias add (planner/trace/efficiency.py BIAS_ADD_OPS): ATen adds cuDNN's bias apart, in a kernel
bound by each element's index arithmetic, so it is timed by elements at the FP32 roof whatever the dtype, outside the
convolution's learned slowdown, and the fit learns the convolution from what is left."""

from __future__ import annotations

import pytest

from gpuplan_schema.payloads import TracedOp
from planner.trace.efficiency import BIAS_ADD_OPS, Efficiency, KindFit, Row, Shape, fit_kind
from planner.trace.kinds import Roofs
from planner.trace.training import group_of

ROOFS = Roofs({"fp32": 5e13, "bf16": 8e14, "tf32": 4e14}, 3e12)
OUT = 40 * 64 * 128 * 128   # conv-rollout's 64-channel 128 x 128 maps at 40


def _conv(dtype: str, bias: bool) -> TracedOp:
    size = 2 if dtype == "bf16" else 4
    shapes = [[40, 64, 128, 128], [64, 64, 3, 3], *([[64]] if bias else [])]
    return TracedOp("aten::convolution", "forward", 3, 3 * OUT * size, 3 * OUT * size, 3, dtype, shapes,
                    3 * 2 * OUT * 64 * 9)


def test_a_bias_add_takes_its_elements_at_the_fp32_roof_in_every_dtype_and_none_without_a_bias():
    bf16, fp32 = group_of(_conv("bf16", True), ROOFS, "bf16"), group_of(_conv("fp32", True), ROOFS, "tf32")
    assert bf16.bias_s == pytest.approx(OUT * BIAS_ADD_OPS / 5e13)
    assert fp32.bias_s == pytest.approx(bf16.bias_s)          # the same kernel time, half the bytes
    assert group_of(_conv("bf16", False), ROOFS, "bf16").bias_s == 0.0
    backward = TracedOp("aten::convolution_backward", "backward", 1, 1e6, 1e6, 1, "bf16",
                        [[40, 64, 128, 128], [40, 64, 128, 128], [64, 64, 3, 3], [64]], 1e9)
    assert group_of(backward, ROOFS, "bf16").bias_s == 0.0    # its bias gradient is a reduction of its own


def test_the_bias_add_is_timed_outside_the_slowdown_and_the_fit_learns_the_rest():
    group = group_of(_conv("bf16", True), ROOFS, "bf16")
    fit = KindFit(1e-5, 2.0, 3)
    efficiency = Efficiency(132, {}, {"convolution/half": fit}, fit)
    seconds, learned = efficiency.time_s("convolution", "half", [group])
    without = efficiency.time_s("convolution", "half", [group_of(_conv("bf16", False), ROOFS, "bf16")])[0]
    assert learned and seconds - without == pytest.approx(3 * group.bias_s)
    # rows measured as the model says: the fit finds the slowdown whatever the bias add took
    slower = Roofs({"fp32": 2e13, "bf16": 4e14}, 2e12)
    groups = (group, group_of(_conv("bf16", True), slower, "bf16"), group_of(_conv("bf16", False), slower, "bf16"))
    rows = [Row("convolution", "half", (g,), 1e-5 * g.calls + 2.0 * g.roof_s(132, Shape()) + g.outright_s, 1.0, "w")
            for g in groups]
    found = fit_kind(rows, 132, Shape())
    assert (found.per_call_s, found.slowdown) == pytest.approx((1e-5, 2.0), rel=1e-6)


def test_a_compiled_step_drops_the_bias_adds_inductor_fuses_into_the_next_pointwise_kernel():
    """Inductor peels the bias off a convolution (torch/_inductor/kernel/conv.py) and adds it in a pointwise kernel it
    fuses: the compiled step keeps the convolution's own time, not its bias add."""
    from gpuplan_schema.payloads import TraceRun
    from planner.trace.learn import CompileModel
    from planner.trace.predict import HostModel, predict_step
    fit = KindFit(1e-5, 2.0, 3)
    efficiency = Efficiency(132, {}, {"convolution/half": fit}, fit)
    host = HostModel({"forward": 0.0}, 0.0)
    steps = {bias: predict_step(TraceRun("bf16", 40, "ok", ops=[_conv("bf16", bias)]), efficiency, ROOFS, host)
             for bias in (True, False)}
    (phase,) = [p for p in steps[True].phases if p.gpu_s]
    assert phase.bias_s > 0 and phase.bias_s == pytest.approx(3 * group_of(_conv("bf16", True), ROOFS, "bf16").bias_s)
    assert steps[True].gpu_s - steps[False].gpu_s == pytest.approx(phase.bias_s)   # eager: the add is paid
    compiled = CompileModel(0.5, 1.0)
    assert compiled.step_s(steps[True], 4.0) == pytest.approx(compiled.step_s(steps[False], 4.0))
