"""Issue 39 item 3: every (workload, catalog GPU, supported precision) predicted, the user's workload included, from
the frozen H100 collection (its sensor-cnn is a user workload, `--workload examples/user_workload.py`)."""

from __future__ import annotations

import pytest

from planner.model.memory import fit_memory
from planner.plan.plan import build_plan, plan_to_json
from planner.plan.precisions import by_precision, expected_precisions, supported_precisions
from planner.specs import load_gpu_catalog, match_gpu

CATALOG = load_gpu_catalog()


@pytest.fixture(scope="module")
def plan(h100):
    return build_plan(h100, targets=[g.name for g in CATALOG], rank_defaults=False)


def test_supported_precisions_follow_the_catalog():
    assert supported_precisions(match_gpu("V100")) == ["fp16", "fp32"]
    assert supported_precisions(match_gpu("A100 80GB SXM")) == ["bf16", "fp16", "tf32", "fp32"]
    assert supported_precisions(match_gpu("T4")) == ["fp16", "fp32"]


def test_every_workload_is_predicted_at_every_precision_each_catalog_gpu_supports(plan, h100):
    targets = {t.gpu.name: t for t in plan.targets}
    assert set(targets) == {g.name for g in CATALOG}
    assert any(w.workload == "sensor-cnn" for w in h100.workloads)   # the user workload is among them
    for gpu in CATALOG:
        best = {(b.workload, b.precision) for b in by_precision(targets[gpu.name].predictions)}
        for w in h100.workloads:
            measured = {p.precision for p in w.points if p.status == "ok" and p.step_s}
            for precision in expected_precisions(gpu, measured):
                if (w.workload, precision) in best:
                    continue
                # only a workload whose smallest measured batch does not fit the GPU's memory may go unpredicted
                memory = match_gpu(h100.gpu_name).memory_bytes
                fit = fit_memory(w, precision if precision in measured else "bf16", memory)
                smallest = min(p.batch for p in w.points if p.precision in measured)
                assert fit is not None and fit.max_batch(gpu.memory_bytes) < smallest, (gpu.name, w.workload, precision)


def test_tf32_on_ampere_and_fp32_on_a_v100_are_predicted_for_the_user_workload(plan):
    targets = {t.gpu.name: t for t in plan.targets}
    a100 = {b.precision: b for b in by_precision(targets["A100 80GB SXM"].predictions) if b.workload == "sensor-cnn"}
    v100 = {b.precision: b for b in by_precision(targets["V100 SXM2 16GB"].predictions) if b.workload == "sensor-cnn"}
    assert set(a100) == {"bf16", "fp16", "tf32", "fp32"}
    assert set(v100) == {"fp16", "fp32"} and v100["fp32"].throughput_per_s > 0
    # each figure carries its band; a precision run in its stand-in says which was measured
    assert all(b.throughput_low < b.throughput_per_s < b.throughput_high for b in (*a100.values(), *v100.values()))
    assert {b.measured_precision for b in v100.values()} <= {"bf16", "fp16", "tf32", "fp32"}


def test_the_plan_json_lists_them_per_target(plan):
    doc = plan_to_json(plan)
    v100 = next(t for t in doc["targets"] if t["gpu"] == "V100 SXM2 16GB")
    assert {(b["workload"], b["precision"]) for b in v100["by_precision"]} >= {("resnet50", "fp16"),
                                                                                ("resnet50", "fp32")}
