"""A step split from its FLOP and byte counts, where the point also measured its GPU's busy time (issue 39): the
host's idle comes out of the time below the roofs, never out of the counted FLOPs and bytes, whose time at a rate
does not depend on how long the GPU also waits on the host."""

from __future__ import annotations

from dataclasses import replace

import pytest
from paths import FROZEN, RESULTS

from gpuplan_schema.results import load_machine
from planner.check.dle_points import load_dle_points
from planner.model.performance import count_fractions, measured_rates, predict_point, target_rates
from planner.model.split import split_point
from planner.specs import match_gpu


@pytest.fixture(scope="module")
def h100_point():
    """A real tf32 point of the frozen H100 with its FLOP and byte counts (resnet50, the largest batch)."""
    h100 = load_machine(FROZEN / "h100-80gb")
    payload = next(w for w in h100.workloads if w.workload == "resnet50")
    point = max((p for p in payload.points if p.precision == "tf32" and p.step_s and p.flops_per_step
                 and p.traffic and p.status == "ok" and p.seq_len is None), key=lambda p: p.batch)
    return h100, payload, point


def test_a_measured_idle_leaves_the_counted_roofs_as_they_are(h100_point):
    h100, payload, point = h100_point
    source = measured_rates(h100.ceilings)
    f, b = count_fractions(point, payload, source)
    step = point.step_s.median
    idle = replace(point, gpu_busy_s=0.7 * step, host_issue_s=None)   # the same step, 30 % of it the GPU idle
    s = split_point(idle, [], payload.workload, f, b)
    assert s.basis == "FLOP/byte counts"
    assert s.host == pytest.approx(0.3)
    assert s.math_roof[point.precision] == pytest.approx(f)   # the FLOPs at the measured rate, not 0.7 of them
    assert s.memory_roof == pytest.approx(b)
    assert s.below_roof == pytest.approx(0.7 - f - b)
    assert s.host + s.math_class + s.memory_class + s.below_roof == pytest.approx(1.0)


def test_roofs_larger_than_the_gpus_busy_time_are_held_to_it(h100_point):
    h100, payload, point = h100_point
    f, b = count_fractions(point, payload, measured_rates(h100.ceilings))
    busy = 0.8 * (f + b)   # the byte model is an estimate: counted roofs may exceed what the GPU was busy for
    s = split_point(replace(point, gpu_busy_s=busy * point.step_s.median), [], payload.workload, f, b)
    assert s.math_roof[point.precision] + s.memory_roof == pytest.approx(busy)
    assert s.math_roof[point.precision] / s.memory_roof == pytest.approx(f / b)
    assert s.below_roof == pytest.approx(0.0, abs=1e-12)


def test_committed_results_a_v100_fp32_step_carries_every_counted_flop_of_a_host_set_tf32_point():
    """DLE's BERT-large V100 FP32 row starts from the H200's TF32 point at batch 8 (DLE's attention, 29 % of its step
    the GPU idle): run at the V100's fp32 rate, its counted FLOPs alone take longer than the whole step predicted
    when the split scaled them by the busy share (438 ms; DLE's row: 667 ms)."""
    h200 = load_machine(RESULTS / "h200")
    dle, _ = load_dle_points(h200)
    point, payload, profiles = dle.point("bert-large-squad", "tf32", 8, "n/a")
    assert point.gpu_busy_s < 0.8 * point.step_s.median          # host-set: the premise of the test
    source, spec, v100 = measured_rates(h200.ceilings), match_gpu(h200.gpu_name), match_gpu("V100 SXM2 32GB")
    target = target_rates(source, spec, v100)
    p = predict_point(point, payload, source, target, False, profiles, v100)
    assert p.precision == "fp32" and p.split.basis == "FLOP/byte counts"
    assert p.step_s >= point.flops_per_step / target.flops_per_s["fp32"]
