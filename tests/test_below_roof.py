"""The below-roof part of a step scales with the SMs' cycles per second (SM count × boost clock) on another GPU
(planner/model/performance.py, docs/prediction-model.md § 1a): synthetic splits, the catalog's clocks, the
H100 ↔ H200 pair it must leave alone, and the published cross-architecture check on the committed results."""

from __future__ import annotations

import dataclasses
import statistics

import pytest
from paths import REPO, load_script

from planner.check.crossarch import MEDIAN_TARGET, build_crosscheck
from planner.model.performance import Rates, measured_rates, scale_factor, sm_time_ratio, target_rates
from planner.model.split import StepSplit
from planner.specs import match_gpu

SOURCE = Rates({"bf16": 1e15}, 1e12, "test", 1e-5)
H100 = match_gpu("H100 SXM")


def split(math=0.0, memory=0.0, below=0.0, host=0.0) -> StepSplit:
    return StepSplit(host, {"bf16": math}, memory, 0.0, below, math, memory, "test")


def with_clock(spec, sm_count, mhz):
    return dataclasses.replace(spec, name=f"{spec.name} (test)", sm_count=sm_count, boost_clock_mhz=mhz,
                               boost_clock_source="test")


def test_half_the_sm_cycles_doubles_the_below_roof_time_and_nothing_else():
    half = with_clock(H100, 66, 1980)          # same datasheet rates, half the SMs
    rates = target_rates(SOURCE, H100, half)
    assert rates.sm_time_ratio == pytest.approx(2.0)
    assert scale_factor(split(below=1.0), SOURCE, rates) == pytest.approx(2.0)
    assert scale_factor(split(math=0.5, memory=0.5), SOURCE, rates) == pytest.approx(1.0)
    assert scale_factor(split(host=0.2, math=0.3, memory=0.3, below=0.2), SOURCE, rates) == pytest.approx(1.2)


def test_clock_and_sm_count_count_alike():
    slower_clock = with_clock(H100, 132, 990)
    fewer_sms_faster_clock = with_clock(H100, 99, 2640)   # 99 × 2640 = 132 × 1980
    assert sm_time_ratio(H100, slower_clock) == pytest.approx(2.0)
    assert sm_time_ratio(H100, fewer_sms_faster_clock) == pytest.approx(1.0)
    assert sm_time_ratio(slower_clock, H100) == pytest.approx(0.5)


def test_a_gpu_without_a_clock_or_not_cuda_keeps_the_source_speed():
    b200, mi300x = match_gpu("B200"), match_gpu("MI300X")
    assert b200.boost_clock_mhz is None and b200.sm_cycles_per_s is None
    assert mi300x.boost_clock_mhz and mi300x.sm_cycles_per_s is None   # an AMD CU is not an SM
    for target in (b200, mi300x):
        assert sm_time_ratio(H100, target) == 1.0
        assert scale_factor(split(below=1.0), SOURCE, target_rates(SOURCE, H100, target)) == pytest.approx(1.0)


def test_h100_and_h200_have_the_same_sm_cycles():
    assert sm_time_ratio(H100, match_gpu("H200 SXM")) == 1.0


def test_the_measured_pair_scales_its_below_roof_part_by_exactly_one(h100, h200):
    """Same GH100 SMs and clock: the H100 ↔ H200 predictions, both ways, are the clock-less model's (the
    candidates test below compares their errors)."""
    for s, t in ((h100, h200), (h200, h100)):
        rates = target_rates(measured_rates(s.ceilings), match_gpu(s.gpu_name), match_gpu(t.gpu_name))
        assert rates.sm_time_ratio == 1.0


def test_slower_gpus_are_no_longer_over_predicted(h100):
    """The published rows from the H100 (28 GPU × table pairs, the V100's and Quadro RTX 8000's fp32 rows through
    their stand-in; the 10 rows of the A100 40GB PCIe, RTX A6000, RTX 6000 Ada, Quadro RTX 8000 and GH200 only
    checked): within the 15 % goal, and not one-sided (the held below-roof part over-predicted nearly every slower
    GPU by 17–23 %). The RTX 3090's bf16 row is within 15 %: since issue 39 no op runs faster than its roofs at the
    target's datasheet, and ResNet-50's convolutions, memory-bound on the H100, are math-bound at the 3090's
    fp32-accumulate tensor rate (+5 % before, −15 % now; docs/prediction-model.md § 4)."""
    check = build_crosscheck(h100)
    errors = [r.error for r in check.rows]
    assert len(errors) == 28
    assert check.median_abs_error() <= 0.15
    assert abs(statistics.mean(errors)) < 0.05
    by = {(r.gpu, r.precision): r.error for r in check.rows}
    for gpu in ("A100 80GB PCIe", "A100 80GB SXM", "A10"):
        assert abs(by[(gpu, "bf16")]) < 0.10, gpu
    assert abs(by[("RTX 3090", "bf16")]) < 0.15


def _candidates():
    return load_script(REPO / "benchmarks" / "below_roof_candidates.py")


def test_the_chosen_candidate_is_the_model_and_the_best_on_the_published_rows(results_machines, h100):
    results = {r.key: r for r in _candidates().evaluate(results_machines)}
    assert results["c"].cross_median == pytest.approx(build_crosscheck(h100).median_abs_error())
    assert results["c"].cross_median == min(r.cross_median for r in results.values())
    assert results["c"].pair == results["a"].pair   # the H100 ↔ H200 pair unchanged
    assert results["a"].cross_median > MEDIAN_TARGET  # the model before: over the goal
    assert results["a"].cross_median > 1.5 * results["c"].cross_median
