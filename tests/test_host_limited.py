"""Host-limited steps and the repeatability floor (issue 18): the bound when the host's measured issue time
exceeds the GPU's busy time, the prediction as the slower of the two pipelines, the repeat pairs the
committed results hold, and the bands they widen."""

from __future__ import annotations

import dataclasses

import pytest

from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.stats import summarize
from planner.check.accuracy import WORST_ERROR, iter_accuracy_tables
from planner.check.accuracy_markdown import render_accuracy_markdown
from planner.check.bands import band_table_for
from planner.check.repeatability import (
    ANOTHER_LEND,
    SAME_RUN,
    all_repeat_pairs,
    floor_for,
    repeat_pairs,
    repeat_summaries,
)
from planner.model.bound import HOST_MARGIN, bound_of, host_limited
from planner.model.performance import HostExposure, Rates, scale_factor
from planner.model.split import StepSplit

SOURCE = Rates({"bf16": 1e15}, 1e12, "test", 1e-5, host_kernel_s=50e-6)
FAST_GPU_SLOW_HOST = Rates({"bf16": 2e15}, 2e12, "test", 1e-5, host_kernel_s=60e-6)


def split(host: float, issue: float | None, math: float) -> StepSplit:
    """A measured split: `host` idle, the rest math at its roof; `issue` the host's time to issue, of the step."""
    return StepSplit(host, {"bf16": math}, 0.0, 0.0, 1 - host - math, math, 0.0, "test", host_measured=True,
                     host_issue=issue)


def test_a_host_that_issues_longer_than_the_gpu_is_busy_bounds_the_step():
    # resnet50 bf16 batch 128 on the H100: 40.2 ms step, 40.1 ms to issue, 33.0 ms busy
    s = split(host=1 - 33.0 / 40.2, issue=40.1 / 40.2, math=0.6)
    assert host_limited(s)
    bound = bound_of(s)
    assert bound.name == "host" and bound.share == pytest.approx(40.1 / 40.2)
    assert "issue time sets the step" in bound.basis


def test_a_balanced_step_keeps_its_gpu_bound():
    # conv-rollout compiled: issue and busy both 96 % of the step (the host waits on a full launch queue)
    s = split(host=0.04, issue=0.96, math=0.9)
    assert not host_limited(s)
    assert bound_of(s).name == "math"
    assert not host_limited(split(host=0.3, issue=None, math=0.7))   # no issue time measured: the split decides
    edge = split(host=0.5, issue=HOST_MARGIN * 0.5, math=0.5)
    assert not host_limited(edge)


def test_a_host_limited_step_is_the_slower_pipeline_not_the_sum():
    s = split(host=0.4, issue=0.95, math=0.6)
    # target: GPU twice as fast, host 1.2× slower: max(0.95 × 1.2, 0.6 / 2)
    assert scale_factor(s, SOURCE, FAST_GPU_SLOW_HOST) == pytest.approx(0.95 * 1.2)
    # the sum would have been 0.4 × 1.2 + 0.3
    gpu_bound = split(host=0.1, issue=0.5, math=0.9)
    assert scale_factor(gpu_bound, SOURCE, FAST_GPU_SLOW_HOST) == pytest.approx(0.1 * 1.2 + 0.45)


def test_the_committed_repeats_gpu_bound_within_3_percent_host_bound_steady_in_a_run_not_across_lends(
        results_machines):
    """Within one collection GPU-bound steps repeat within 3 % and host-bound ones, timed steadily in one window
    (collectors/workloads/steady.py), within 15 %; another lend of the same GPU moved some host-bound step by over
    half."""
    pairs = all_repeat_pairs(results_machines)
    same = [p for p in pairs if p.scope == SAME_RUN]
    assert all(p.spread < 0.03 for p in same if p.regime in ("math", "memory")) and len(same) >= 10
    assert all(p.spread < WORST_ERROR for p in same if p.regime == "host")
    lend = {s.regime: s for s in repeat_summaries(pairs) if s.scope == ANOTHER_LEND}
    assert lend["host"].n >= 20 and lend["host"].max_spread > 0.5
    worst = max((p for p in pairs if p.scope == ANOTHER_LEND), key=lambda p: p.spread)
    assert worst.sweeps[1].startswith(worst.sweeps[0] + " (lend-")
    assert worst.spread == pytest.approx(max(worst.steps_s) / min(worst.steps_s) - 1)


def test_a_pair_is_one_configuration_timed_twice(h100):
    payload = next(w for w in h100.workloads if w.workload == "resnet50")
    main = next(p for p in payload.points if p.sweep == "variant" and p.variant == "default" and p.precision == "bf16")
    again = dataclasses.replace(main, sweep="repeat", step_s=summarize([main.step_s.median * 1.25] * 3))
    other = dataclasses.replace(main, batch=main.batch * 2, sweep="repeat")   # another configuration: no pair
    one = WorkloadPayload(**{**payload.__dict__, "points": [main, again, other]})
    machine = dataclasses.replace(h100, documents={k: v for k, v in h100.documents.items()
                                                   if v.kind != "workload"})
    machine.documents["workload-x.json"] = dataclasses.replace(
        next(v for v in h100.documents.values() if v.kind == "workload"), payload=one)
    (pair,) = repeat_pairs(machine)
    assert pair.sweeps == ("variant", "repeat") and pair.spread == pytest.approx(0.25)
    assert floor_for([pair], "resnet50", pair.regime) == pytest.approx(0.25)
    assert floor_for([pair], "gpt-small", pair.regime) == pytest.approx(0.25)   # the regime's, where none own
    assert floor_for([pair], "gpt-small", "latency") is None


def test_a_host_set_step_gets_the_spread_measured_between_two_hosts(results_machines):
    real = band_table_for(results_machines)
    spreads = [p.spread for p in all_repeat_pairs(results_machines) if p.scope == ANOTHER_LEND and p.regime == "host"]
    assert sum(s <= real.host_spread for s in spreads) >= 0.9 * len(spreads) and real.host_spread > 0.10
    host_set = real.band(True, HostExposure(0.2, 1.0, True))
    assert host_set.low >= 1 - 1 / (1 + real.host_spread) and real.band(True).high < real.host_spread


def test_the_accuracy_page_says_which_misses_one_measurement_cannot_check(results_machines):
    text = render_accuracy_markdown(results_machines)
    assert "Repeatability:" in text and "| host |" in text
    missed = sum(1 for t in iter_accuracy_tables(results_machines) for r in t.rows
                 if r.counted and abs(r.error) > 0.15)
    assert f"Of the {missed} counted predictions off by more than 15%" in text


def test_the_bound_on_the_target_is_its_own():
    """A step host-limited on the source is GPU-bound on a GPU four times slower, and stays host-bound on one
    as fast: the plan's target lines say what limits the step there."""
    from planner.model.performance import target_bound
    s = split(host=0.3, issue=0.95, math=0.7)
    slow = Rates({"bf16": 0.25e15}, 0.25e12, "test", 1e-5, host_kernel_s=50e-6)
    on_slow = target_bound(s, SOURCE, slow)
    assert on_slow.name == "math" and on_slow.share == pytest.approx(1.0)   # 0.7 × 4 = 2.8 against 0.95
    same = target_bound(s, SOURCE, SOURCE)
    assert same.name == "host" and same.share == pytest.approx(1.0)
    plain = split(host=0.1, issue=None, math=0.9)
    assert target_bound(plain, SOURCE, slow).name == "math"
    assert target_bound(plain, SOURCE, slow).shares["host"] == pytest.approx(0.1 / (0.1 + 3.6))
