"""Every catalog GPU gets an answer: a GPU without bf16 (V100, T4) runs the measured bf16 step in fp16, one
without TF32 in fp32 (planner/model/performance.py STAND_IN), and every predicted row and answer carries its
range, bound and basis. On the frozen H100 collection (real documents) and the ViT-B/16 user workload
collected with the standard profile (its batch sweep in bf16 only)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from paths import FROZEN, REPO

from gpuplan_schema.results import load_machine
from planner.plan.answer import answers_of_target
from planner.plan.plan import build_plan
from planner.specs import load_gpu_catalog as load_gpus
from planner.specs import match_gpu
from planner.units import format_count

H100 = FROZEN / "h100-80gb"
VIT = REPO / "tests" / "fixtures" / "vit-b16" / "h100-80gb"
NO_BF16 = ("V100 SXM2 16GB", "T4")


@pytest.fixture(scope="module")
def h100_plan():
    return build_plan(load_machine(H100), [g.name for g in load_gpus()])


def test_v100_and_t4_answer_every_workload_in_fp16_from_the_bf16_measurements(h100_plan):
    workloads = [w.workload for w in load_machine(H100).workloads]
    for name in NO_BF16:
        assert not match_gpu(name).supports_bf16
        target = next(t for t in h100_plan.targets if t.name == name)
        answers = {a.workload: a for a in answers_of_target(h100_plan, target)}
        assert sorted(answers) == sorted(workloads)
        source = next(t for t in h100_plan.targets if t.is_source)
        for w, a in answers.items():
            measured = source.settings[w].precision
            assert a.settings.precision == {"bf16": "fp16", "tf32": "fp32"}.get(measured, measured)
            e = a.expected
            assert e is not None and e.how == "predicted" and 0 < e.low_per_s <= e.throughput_per_s <= e.high_per_s
        # the sweep is bf16 only: its prediction on this GPU is the bf16 step at the GPU's fp16 tensor rate
        gpt = answers["gpt-small"].expected
        assert "the bf16 step measured, run at this GPU's fp16 rate" in gpt.basis


def test_a_measured_fp16_point_is_used_where_there_is_one_and_the_stand_in_elsewhere(h100_plan):
    v100 = next(t for t in h100_plan.targets if t.name == "V100 SXM2 16GB")
    resnet = [p for p in v100.predictions if p.workload == "resnet50" and p.seq_len is None]
    assert {p.precision for p in resnet} <= {"fp16", "fp32"}  # nothing in a precision the V100 lacks
    payload = next(w for w in load_machine(H100).workloads if w.workload == "resnet50")
    fp16_measured = {(p.batch, p.variant) for p in payload.points if p.precision == "fp16" and p.status == "ok"
                     and p.sweep not in ("probe", "repeat")}  # the timed ones (a probe only asks: does it fit?)
    for p in resnet:
        if p.precision == "fp16":
            assert (p.measured_precision is None) == ((p.batch, p.variant) in fp16_measured)
    keys = [(p.precision, p.batch, p.variant) for p in resnet]
    assert len(keys) == len(set(keys))  # one prediction per configuration on the target


def test_the_stand_in_is_slower_where_the_fp16_rate_is_lower():
    """The same bf16 sweep on three GPUs: the T4's fp16 tensor rate (65 TFLOP/s) and bandwidth (320 GB/s) are
    below the V100's (125, 900), which are below the A100's bf16 (312, 2039): so is the predicted throughput
    of every GPU-bound batch."""
    plan = build_plan(load_machine(VIT), ["A100 80GB SXM", "V100 SXM2 16GB", "T4"])
    by = {t.name: {p.batch: p for p in t.predictions if p.variant in ("default", "no_cudnn_benchmark")
                   and p.seq_len is None and p.precision in ("bf16", "fp16") and p.measured_precision != "fp16"}
          for t in plan.targets}
    batches = [b for b in by["T4"] if b >= 64 and b in by["V100 SXM2 16GB"] and b in by["A100 80GB SXM"]]
    assert batches
    for b in batches:
        t4, v100, a100 = by["T4"][b], by["V100 SXM2 16GB"][b], by["A100 80GB SXM"][b]
        assert (t4.precision, v100.precision, a100.precision) == ("fp16", "fp16", "bf16")
        assert t4.measured_precision == v100.measured_precision == "bf16"
        assert t4.throughput_per_s < v100.throughput_per_s < a100.throughput_per_s


def test_every_predicted_row_and_answer_has_a_range_a_bound_and_a_basis():
    run = subprocess.run([sys.executable, "-m", "planner.cli", "plan", str(H100), "--json",
                          *[a for g in load_gpus() for a in ("--target", g.name)]],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr
    plan = json.loads(run.stdout)
    predicted = [t for t in plan["targets"] if not t["measured"]]
    assert len(predicted) == len(load_gpus()) - 1   # every catalog GPU but the H100 itself
    for t in predicted:
        assert t["answers"], t["name"]
        for row in t["predictions"]:
            for key in ("throughput_per_s", "throughput_low", "throughput_high", "bound", "basis", "band_basis",
                        "rate_basis"):
                assert row[key] is not None, (t["name"], row["workload"], key)
            assert row["throughput_low"] <= row["throughput_per_s"] <= row["throughput_high"]
        for a in t["answers"]:
            e = a["expected"]
            assert e and all(e[k] is not None for k in ("throughput_per_s", "low_per_s", "high_per_s", "basis"))
            assert e["bound"]["bound"] and e["band_basis"]
            wide = max(e["throughput_per_s"] - e["low_per_s"], e["high_per_s"] - e["throughput_per_s"]) \
                / e["throughput_per_s"] > 0.25
            assert bool(e["wide"]) == wide  # a range wider than ±25% carries why


def test_plan_text_shows_why_a_wide_range_is_wide():
    def plan(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "planner.cli", "plan", str(H100), "--target", "T4", "--verbose",
                               *extra],
                              capture_output=True, text=True, cwd=REPO, timeout=300, env={"COLUMNS": "250"})
    text, doc = plan(), plan("--json")
    assert text.returncode == doc.returncode == 0, text.stderr
    t4 = next(t for t in json.loads(doc.stdout)["targets"] if t["name"] == "T4")
    wide = [a for a in t4["answers"] if a["expected"]["wide"]]
    assert wide  # host-bound and compute-bound steps have no cross-architecture residuals yet: ±50%
    for a in t4["answers"]:
        block = text.stdout[text.stdout.index(f"\n{a['workload']} on H100 SXM (measured)"):]  # its block
        line = next(x for x in block.splitlines() if x.strip().startswith("on T4"))
        assert f"batch {format_count(a['settings']['batch'])}" in line
        assert (f"({a['expected']['wide']})" in line) == bool(a["expected"]["wide"])
