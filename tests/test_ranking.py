"""planner/rank/ranking.py and planner/scaling/scaling.py: hours, dollars, Pareto front, instances that cannot run."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from paths import FROZEN

from gpuplan_schema.results import load_machine, load_results_root
from planner.rank.jobs import parse_job
from planner.rank.ranking import (
    DOES_NOT_FIT,
    NO_PREDICTION,
    OK,
    UNSUPPORTED_PRECISION,
    Estimate,
    RankedInstance,
    pareto_front,
    rank_instances,
    ranking_to_json,
)
from planner.scaling.assumed_scaling import Scaling, SyncLoad, assumed_scaling
from planner.scaling.scaling import ScalingProvider, build_scaling, gather_efficiencies, load_scaling
from planner.specs import GpuSpec, InstanceSpec, match_instance

IMAGENET_100 = parse_job("resnet50 bf16 epochs=100 dataset=imagenet")
H100_IMAGES_PER_S = 2616.0       # ResNet-50 AMP on an H100 SXM (gpu-facts.md, Lambda)
BYTES_FIXED, BYTES_PER_SAMPLE = 2e9, 0.1e9


def by_bf16(gpu: GpuSpec) -> Estimate | None:
    """A simple, real predictor: throughput in proportion to dense bf16, memory = fixed + per sample; none on a GPU
    without bf16 (it is asked there too: fp16 stands in for bf16)."""
    if "bf16" not in gpu.flops_per_s:
        return None
    max_batch = max(0, int((gpu.memory_bytes - BYTES_FIXED) // BYTES_PER_SAMPLE))
    return Estimate(samples_per_s=H100_IMAGES_PER_S * gpu.flops_per_s["bf16"] / 989e12,
                    batch=max(1, min(256, max_batch)), max_batch=max_batch, note="dense-bf16 ratio to H100")


def instance(name, gpu, count=1, link=None, price=1.0, provider="aws"):
    return InstanceSpec(name=name, provider=provider, gpu=gpu, gpu_count=count, gpu_interconnect=link, vcpus=8,
                        memory_bytes=64 * 2**30, price_usd_per_hour=price, region="test-1", price_date="2026-01-01",
                        source_url="https://example.org/prices", spec_source="test", price_note=None)


def no_scaling_loss(_: InstanceSpec, __: SyncLoad | None = None) -> Scaling:
    return Scaling(1.0, "perfect scaling (test)", measured=True)


# ── arithmetic ──────────────────────────────────────────────────────────────────────────────

def test_hours_are_samples_over_throughput_and_cost_is_hours_times_price():
    one = instance("one-h100", "H100 SXM", price=6.88)
    (r,) = rank_instances(IMAGENET_100, by_bf16, instances=[one])
    assert r.status == OK and r.samples_per_s == pytest.approx(H100_IMAGES_PER_S)
    assert r.hours == pytest.approx(128116700 / 2616 / 3600)          # 13.6 h
    assert r.cost_usd == pytest.approx(r.hours * 6.88)
    assert r.batch_per_gpu == 256 and r.max_batch_per_gpu == 780 and r.scaling_efficiency == 1.0


def test_multi_gpu_throughput_is_gpus_times_efficiency():
    eight = instance("eight-h100", "H100 SXM", count=8, link="nvlink", price=55.04)
    (r,) = rank_instances(IMAGENET_100, by_bf16, instances=[eight])
    assert r.scaling_efficiency == pytest.approx(0.95 ** 3) and r.scaling_measured is False
    assert r.samples_per_s == pytest.approx(8 * H100_IMAGES_PER_S * 0.95 ** 3)
    assert r.hours == pytest.approx(IMAGENET_100.samples / r.samples_per_s / 3600)
    assert "assumed, not measured" in r.reason and "dense-bf16 ratio to H100" in r.reason


def test_a_measured_efficiency_replaces_the_assumed_one():
    eight = instance("eight-h100", "H100 SXM", count=8, link="nvlink")
    (r,) = rank_instances(IMAGENET_100, by_bf16, instances=[eight], scaling=no_scaling_loss)
    assert r.scaling_measured is True and r.samples_per_s == pytest.approx(8 * H100_IMAGES_PER_S)
    assert "perfect scaling (test)" in r.reason


def test_token_jobs_count_sequences():
    job = parse_job("gpt-small bf16 tokens=1B")
    (r,) = rank_instances(job, lambda gpu: Estimate(100.0, 8, 64, "test"),
                          instances=[instance("x", "H100 SXM")])
    assert r.hours == pytest.approx(1e9 / 1024 / 100 / 3600)


# ── assumed scaling ────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize(("count", "link", "efficiency"), [
    (1, None, 1.0), (2, "nvlink", 0.95), (8, "nvlink", 0.95 ** 3), (8, "infinity-fabric", 0.95 ** 3),
    (4, "pcie", 0.85 ** 2), (8, "pcie", 0.85 ** 3), (2, "nvlink-bridge", 0.95), (4, "nvlink-bridge", 0.95 * 0.85),
])
def test_assumed_scaling(count, link, efficiency):
    s = assumed_scaling(instance("x", "H100 NVL", count=count, link=link))
    assert s.efficiency == pytest.approx(efficiency) and s.measured is False
    assert s.note.startswith("one GPU") if count == 1 else s.note.startswith("assumed, not measured")


def test_pcie_scales_worse_than_nvlink_at_every_size():
    for n in (2, 4, 8):
        nvlink = assumed_scaling(instance("a", "A100 80GB SXM", n, "nvlink")).efficiency
        pcie = assumed_scaling(instance("b", "A100 80GB PCIe", n, "pcie")).efficiency
        assert pcie < nvlink < 1


# ── measured scaling (the committed 2 × and 4 × H200 results) ─────────────────────────────────

def lowest_measured(gpus: int, *machines: str) -> float:
    """The lowest DDP efficiency on `gpus` GPUs among the workloads of the named machines' documents."""
    return min(w.points[gpus].efficiency for m in machines
               for w in load_scaling(load_machine(FROZEN / m)).workloads.values() if gpus in w.points)


def h200s(count: int) -> InstanceSpec:
    """The catalog's 8 × H200 instance with `count` GPUs: the catalog sells no 2- or 4-GPU H200 shape."""
    return dataclasses.replace(match_instance("p5en.48xlarge"), gpu_count=count)


def test_an_instance_measured_at_its_gpu_count_cites_that_measurement():
    scaling = measured_under(FROZEN)
    four, two = scaling(h200s(4)), scaling(h200s(2))
    assert four.measured and four.efficiency == lowest_measured(4, "h200-x4")
    assert four.note.startswith(f"measured DDP efficiency on h200-x4 ({four.efficiency:.3f} on 4 GPUs, ")
    # h200-x2 and h200-x4 both measured 2 GPUs: the lower figure, and the note names its machine.
    assert two.measured and two.efficiency == lowest_measured(2, "h200-x2", "h200-x4")
    assert two.note.startswith(f"measured DDP efficiency on h200-x2 ({two.efficiency:.3f} on 2 GPUs, ")
    assert "on h200-x2 and h200-x4" in two.note


def test_beyond_the_largest_measured_count_the_efficiency_compounds_per_doubling():
    eight = measured_under(FROZEN)(h200s(8))
    at_four = lowest_measured(4, "h200-x4")
    assert eight.measured and eight.efficiency == pytest.approx(at_four ** 1.5)  # 4 → 8: half of 4's two doublings
    assert eight.note.startswith("extrapolated per doubling from the measured 4-GPU DDP efficiency on h200-x4 "
                                 f"({at_four:.3f} on 4 GPUs") and eight.note.endswith(f"→ {eight.efficiency:.2f} on 8")


def measured_under(root: Path) -> ScalingProvider:
    return build_scaling(gather_efficiencies(load_results_root(root)))


def test_with_only_two_gpus_measured_four_are_extrapolated(tmp_path):
    shutil.copytree(FROZEN / "h200-x2", tmp_path / "h200-x2")
    four = measured_under(tmp_path)(h200s(4))
    assert four.efficiency == pytest.approx(lowest_measured(2, "h200-x2") ** 2)
    assert four.note.startswith("extrapolated per doubling from the measured 2-GPU DDP efficiency on h200-x2")


def test_without_a_measurement_of_the_gpu_model_the_assumption_stands():
    scaling = measured_under(FROZEN)
    h100s = match_instance("p5.48xlarge")
    assert scaling(h100s) == assumed_scaling(h100s) and scaling(h200s(1)) == assumed_scaling(h200s(1))
    assert build_scaling([])(h200s(8)) == assumed_scaling(h200s(8))


# ── instances that cannot run the job ──────────────────────────────────────────────────────

def test_instances_that_cannot_hold_the_minimum_batch_are_listed_with_the_reason():
    job = parse_job("resnet50 bf16 samples=1e6 min_batch=300")
    ranked = rank_instances(job, by_bf16, instances=[
        instance("l4", "L4"),                    # 24 GB: max batch 220 < 300
        instance("h200", "H200 SXM"),            # 141 GB: fits
    ])
    fits, too_small = ranked
    assert (fits.instance, fits.status) == ("h200", OK)
    assert (too_small.instance, too_small.status) == ("l4", DOES_NOT_FIT)
    assert too_small.max_batch_per_gpu == 220 and too_small.hours is None and too_small.cost_usd is None
    assert "largest batch that fits in L4's 24 GB is 220 per GPU, below the job's minimum of 300" in too_small.reason


def test_a_model_that_does_not_fit_at_all():
    (r,) = rank_instances(IMAGENET_100, lambda gpu: Estimate(10.0, 1, 0, "test"), instances=[instance("a", "L4")])
    assert r.status == DOES_NOT_FIT and "does not fit in L4's 24 GB even at batch 1" in r.reason


def test_precisions_a_gpu_lacks_and_missing_predictions_are_listed_not_dropped():
    calls = []

    def predict(gpu):
        calls.append(gpu.name)
        return None if gpu.name == "A10G" else by_bf16(gpu)

    ranked = rank_instances(IMAGENET_100, predict, instances=[
        instance("t4", "T4"), instance("a10g", "A10G"), instance("h100", "H100 SXM")])
    assert [(r.instance, r.status) for r in ranked] == [
        ("h100", OK), ("t4", UNSUPPORTED_PRECISION), ("a10g", NO_PREDICTION)]
    assert ranked[1].reason == ("T4 has no bf16 tensor cores (GPU catalog); it would run fp16 instead, but nothing "
                                "predicts this job in fp16 there")
    assert "T4" in calls and ranked[1].precision is None  # asked (fp16 stands in for bf16), but no estimate came


def test_a_gpu_without_the_jobs_precision_is_ranked_only_where_the_estimate_runs_its_stand_in():
    """A bf16 job on a T4 runs fp16 autocast with loss scaling: ranked where the predictor says so (the plan's answer
    there), its row naming the precision it runs; an estimate that claims the job's own precision, or another
    precision than the stand-in, does not rank a GPU that lacks it. fp8 has no stand-in: no GPU without it is asked."""
    def predict(precision):
        return lambda gpu: Estimate(500.0, 32, 64, "the plan's answer on T4", precision=precision)

    t4, a100 = instance("t4", "T4"), instance("a100", "A100 80GB SXM")
    (row,) = rank_instances(IMAGENET_100, predict("fp16"), instances=[t4])
    assert row.status == OK and row.samples_per_s == 500.0 and row.batch_per_gpu == 32
    assert (row.precision, row.stand_in_for) == ("fp16", "bf16")
    assert row.reason.startswith("no bf16 on T4: runs fp16 autocast with loss scaling (GradScaler); the plan's answer")
    assert row.to_dict()["precision"] == "fp16" and row.to_dict()["stand_in_for"] == "bf16"
    for claimed in (None, "bf16", "fp32"):
        (row,) = rank_instances(IMAGENET_100, predict(claimed), instances=[t4])
        assert row.status == UNSUPPORTED_PRECISION and row.precision is None and row.stand_in_for is None
    (h100,) = rank_instances(IMAGENET_100, by_bf16, instances=[instance("h100", "H100 SXM")])
    assert (h100.status, h100.precision, h100.stand_in_for) == (OK, "bf16", None)
    calls = []
    fp8 = parse_job("resnet50 fp8 samples=1e6")
    (row,) = rank_instances(fp8, lambda gpu: calls.append(gpu.name), instances=[a100])
    assert calls == [] and row.status == UNSUPPORTED_PRECISION
    assert row.reason == "A100 80GB SXM has no fp8 tensor cores (GPU catalog), and no precision stands in for fp8"


def test_fp16_and_fp32_run_on_every_gpu():
    for precision in ("fp16", "fp32"):
        job = parse_job(f"resnet50 {precision} samples=1e6")
        ranked = rank_instances(job, lambda gpu: Estimate(100.0, 32, 64, "t"),
                                instances=[instance("t4", "T4"), instance("v100", "V100")])
        assert {r.status for r in ranked} == {OK}


def test_each_gpu_model_is_predicted_once():
    calls = []

    def predict(gpu):
        calls.append(gpu.name)
        return by_bf16(gpu)

    rank_instances(IMAGENET_100, predict)
    assert len(calls) == len(set(calls))


# ── Pareto front ───────────────────────────────────────────────────────────────────────────

def test_pareto_front_on_a_hand_made_case():
    cheap_slow = instance("cheap-slow", "L4", price=0.8)             # 2616×121/989 = 320 img/s
    fast_dear = instance("fast-dear", "H100 SXM", 8, "nvlink", 98.32)
    dominated = instance("dominated", "L4", price=2.0)               # as slow as cheap-slow, dearer
    middle = instance("middle", "H100 SXM", price=6.88)
    ranked = {r.instance: r for r in rank_instances(IMAGENET_100, by_bf16,
                                                     instances=[cheap_slow, fast_dear, dominated, middle])}
    assert {n for n, r in ranked.items() if r.pareto} == {"cheap-slow", "fast-dear", "middle"}
    assert [r.instance for r in pareto_front(ranked.values())] == ["fast-dear", "middle", "cheap-slow"]


def _ranked(hours, cost, status=OK):
    return RankedInstance(instance=f"{hours}-{cost}", provider="aws", region="r", gpu="H100 SXM", gpu_count=1,
                          status=status, reason="", price_usd_per_hour=1.0, price_date="2026", price_note=None,
                          hours=hours, cost_usd=cost)


@given(st.lists(st.tuples(st.integers(1, 20), st.integers(1, 20)), min_size=1, max_size=25))
def test_pareto_front_matches_brute_force(points):
    items = [_ranked(float(h), float(c)) for h, c in points]
    front = pareto_front(items)
    for item in items:
        beaten = any(o.hours <= item.hours and o.cost_usd <= item.cost_usd
                     and (o.hours, o.cost_usd) != (item.hours, item.cost_usd) for o in items)
        assert (item in front) == (not beaten)
    # Along the front, time goes up as cost goes down.
    for a, b in itertools.pairwise(front):
        assert a.hours <= b.hours and a.cost_usd >= b.cost_usd


def test_instances_that_cannot_run_are_never_on_the_front():
    assert pareto_front([_ranked(None, None, DOES_NOT_FIT), _ranked(1.0, 1.0)]) == [_ranked(1.0, 1.0)]


# ── order and JSON ─────────────────────────────────────────────────────────────────────────

def test_cheapest_first_or_fastest_first():
    instances = [instance("l4", "L4", price=0.8), instance("h100x8", "H100 SXM", 8, "nvlink", 98.32)]
    by_cost = rank_instances(IMAGENET_100, by_bf16, instances=instances)
    by_time = rank_instances(IMAGENET_100, by_bf16, instances=instances, sort_by="hours")
    assert [r.instance for r in by_cost] == ["l4", "h100x8"] and [r.instance for r in by_time] == ["h100x8", "l4"]
    with pytest.raises(ValueError, match="sort_by"):
        rank_instances(IMAGENET_100, by_bf16, instances=instances, sort_by="speed")


def test_the_ranking_is_json_ready():
    ranked = rank_instances(IMAGENET_100, by_bf16)
    rows = json.loads(json.dumps(ranking_to_json(ranked)))
    assert [r["instance"] for r in rows] == [r.instance for r in ranked]
    assert set(rows[0]) == {f.name for f in dataclasses.fields(RankedInstance)} | {"unchecked"}


def test_imagenet_100_epochs_on_the_catalog():
    """The issue's acceptance job: time and cost on at least 15 instances, each from its catalog price."""
    ranked = rank_instances(IMAGENET_100, by_bf16)
    ok = [r for r in ranked if r.status == OK]
    assert len(ok) >= 15
    for r in ok:
        spec = match_instance(f"{r.provider}:{r.instance}")
        assert r.cost_usd == pytest.approx(r.hours * spec.price_usd_per_hour)
        assert math.isfinite(r.hours) and r.hours > 0
    assert {r.status for r in ranked} >= {OK, UNSUPPORTED_PRECISION}  # T4/V100 have no bf16
    assert any(r.pareto for r in ok)


def test_a_bad_estimate_is_a_bug_not_a_ranking():
    with pytest.raises(ValueError, match="samples_per_s"):
        Estimate(0.0, 1, 1, "broken")
    with pytest.raises(ValueError, match="batch"):
        Estimate(1.0, 0, 1, "broken")
    with pytest.raises(ValueError, match="batch 64 / max_batch 32"):
        Estimate(1.0, 64, 32, "throughput at a batch that does not fit")
    assert Estimate(1.0, 1, 0, "does not fit at all").max_batch == 0
