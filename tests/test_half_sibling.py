"""fp16 and bf16 are split alike and share a measured torch.compile gain (planner/model/split.py): the rooflines
are profiled at the main precision only, and a ranking at the recommended fp16 must not fall back to the FLOP/byte
counts (4× slower predictions of conv-rollout on an L40S) or lose the compile gain measured at bf16."""

from __future__ import annotations

import pytest

from planner.model.performance import measured_rates, predict_point, target_rates
from planner.model.split import machine_rooflines, sibling_compile_points, split_point
from planner.specs import match_gpu


def conv(machine):  # noqa: ANN001, ANN201
    return next(w for w in machine.workloads if w.workload == "conv-rollout")


def variant(payload, precision: str, name: str):  # noqa: ANN001, ANN201
    return next(p for p in payload.points if p.sweep == "variant" and p.precision == precision and p.variant == name)


def test_an_fp16_point_takes_the_bf16_roofline_with_its_matmuls_at_the_fp16_rate(h100):
    payload, rooflines = conv(h100), machine_rooflines(h100)
    assert not any(r.precision == "fp16" and r.workload == "conv-rollout" for r in rooflines)
    fp16 = variant(payload, "fp16", "no_cudnn_benchmark")
    split = split_point(fp16, rooflines, "conv-rollout", 0.0, 0.0)
    assert "fp16 twin split alike" in split.basis and "roofline bf16" in split.basis
    assert "bf16" not in split.math_roof
    # on an L40S the fp16 step is predicted as its bf16 twin is, in proportion to their measured steps
    rates = measured_rates(h100.ceilings)
    l40s = match_gpu("L40S")
    target = target_rates(rates, match_gpu(h100.gpu_name), l40s)
    bf16 = variant(payload, "bf16", "no_cudnn_benchmark")
    a, b = (predict_point(p, payload, rates, target, False, rooflines, l40s) for p in (fp16, bf16))
    assert a.step_s / fp16.step_s.median == pytest.approx(b.step_s / bf16.step_s.median, rel=0.05)


def test_the_compile_gain_measured_at_bf16_carries_to_fp16_and_nothing_else(h100):
    payload = conv(h100)
    assert not any(p.precision == "fp16" and p.variant == "compile" for p in payload.points)
    (carried,) = sibling_compile_points(payload.points, "fp16")
    compiled = variant(payload, "bf16", "compile")

    def eager(precision: str):  # noqa: ANN202 - the first plain (uncompiled) point at the compiled batch
        return next(p for p in payload.points if p.precision == precision and p.batch == compiled.batch
                    and p.variant in ("default", "no_cudnn_benchmark") and p.step_s and p.seq_len is None)
    bf16, fp16 = eager("bf16"), eager("fp16")
    assert carried.precision == "fp16" and carried.variant == "compile" and carried.batch == compiled.batch
    assert carried.step_s.median == pytest.approx(compiled.step_s.median * fp16.step_s.median / bf16.step_s.median,
                                                  rel=0.01)
    assert carried.host_issue_s is None and carried.gpu_busy_s is None   # not this step's measurements
    assert sibling_compile_points(payload.points, "bf16") == []   # measured there: nothing borrowed
    assert sibling_compile_points(payload.points, "tf32") == []   # no half-precision twin


def test_a_step_with_both_half_dtypes_keeps_all_its_matmul_time_at_the_twin():
    """gnmt under bf16 autocast runs its LSTMs in fp16 (cuDNN) and the rest in bf16: read as its fp16 twin, both
    parts are fp16 matmuls, none dropped."""
    from planner.model.split import as_dtype
    assert as_dtype({"fp16": 0.07, "bf16": 0.21}, "bf16", "fp16") == pytest.approx({"fp16": 0.28})
    assert as_dtype({"bf16": 0.21, "fp16": 0.07}, "bf16", "fp16") == pytest.approx({"fp16": 0.28})
    assert as_dtype({"bf16": 0.3, "fp32": 0.1}, "bf16", "fp16") == {"fp16": 0.3, "fp32": 0.1}
    assert as_dtype({"fp32": 0.1}, "bf16", "fp16") == {"fp32": 0.1}
