"""A measured machine's unprofiled steps split by the model's trace (planner/trace/hybrid.py): the calibrated profile
adds up to the measured GPU time with every op's roof kept, only unprofiled (workload, precision)s get one, a trace of
another model is not used, and the plan's predictions of such a workload say they were split so."""

from __future__ import annotations

import json
import shutil

import pytest
from paths import FROZEN, REPO

from gpuplan_schema.payloads.workloads import PLAIN_VARIANTS
from gpuplan_schema.results import load_machine
from planner.model.split import machine_rooflines, split_point
from planner.plan.plan import build_plan
from planner.plan.source import load_source
from planner.trace.hybrid import TraceRoofline, measured_busy, trace_rooflines

TRACE = REPO / "tests" / "fixtures" / "trace" / "trace-sensor-cnn" / "trace-sensor-cnn.json"


@pytest.fixture
def folder(tmp_path):
    """A copy of the frozen H100 folder (sensor-cnn measured, not profiled) with sensor-cnn's CPU trace beside it."""
    out = tmp_path / "h100-80gb"
    shutil.copytree(FROZEN / "h100-80gb", out, ignore=shutil.ignore_patterns("diagnostics"))
    doc = json.loads(TRACE.read_text())
    doc["machine"] = json.loads((out / "ceilings.json").read_text())["machine"]  # as `gpuplan trace --machine` writes
    (out / TRACE.name).write_text(json.dumps(doc))
    return out


def roof(op) -> float:
    return min(op.time_s.median, max(op.math_s or 0.0, op.memory_s or 0.0))


def test_the_trace_profile_adds_up_to_the_measured_gpu_time_and_keeps_each_ops_roof(folder):
    machine = load_machine(folder)
    profiles = trace_rooflines(machine)
    assert {(r.workload, r.precision) for r in profiles} == {("sensor-cnn", "bf16"), ("sensor-cnn", "tf32")}
    sensor = next(w for w in machine.workloads if w.workload == "sensor-cnn")
    bf16 = next(r for r in profiles if r.precision == "bf16")
    busy = measured_busy(sensor, "bf16")
    for at in bf16.profiled():
        assert sum(op.time_s.median for op in at.ops) == pytest.approx(busy[at.batch][0], rel=1e-9)
        assert at.step_s.median == pytest.approx(busy[at.batch][1])
        # the roofs are the ops' FLOPs and bytes at this machine's measured rates: a calibration never moves them
        assert all(op.time_s.median >= roof(op) * (1 - 1e-9) for op in at.ops)
    assert len(bf16.profiled()) == len(busy)   # every traced batch that was measured, no other


def test_a_measured_profile_is_never_replaced_and_another_models_trace_is_not_used(folder):
    trace = (folder / TRACE.name).read_text()
    other = json.loads(trace)
    gpt = next(w for w in load_machine(folder).workloads if w.workload == "gpt-small")
    other["payload"].update(workload="gpt-small", parameters=gpt.parameters)
    (folder / "trace-gpt-small.json").write_text(json.dumps(other))
    made = {(r.workload, r.precision) for r in trace_rooflines(load_machine(folder))}
    assert ("sensor-cnn", "bf16") in made and ("gpt-small", "bf16") not in made   # gpt-small's bf16 is profiled
    doc = json.loads(trace)
    doc["payload"]["parameters"] += 1
    (folder / TRACE.name).write_text(json.dumps(doc))
    assert trace_rooflines(load_machine(folder)) == []   # a model of another size under the same name


def test_the_plan_splits_an_unprofiled_step_by_the_trace_and_says_so(folder):
    machine = load_machine(folder)
    source = load_source(machine)
    assert source.rooflines == machine_rooflines(machine)   # the measured GPU's own verdicts: measured profiles
    assert source.trace_rooflines and all(isinstance(r, TraceRoofline) for r in source.trace_rooflines)
    point = next(p for w in machine.workloads if w.workload == "sensor-cnn" for p in w.points
                 if p.precision == "bf16" and p.batch == 8192 and p.step_s and p.variant in PLAIN_VARIANTS)
    counts = split_point(point, source.rooflines, "sensor-cnn", 0.1, 0.1)
    traced = split_point(point, source.split_rooflines, "sensor-cnn", 0.1, 0.1)
    assert counts.basis == "FLOP/byte counts"
    assert traced.basis == "roofline bf16 batch 8192 (the trace's ops, calibrated to the measured step)"
    assert traced.ops and traced.memory_roof != counts.memory_roof


def test_other_gpus_figures_say_what_split_them_and_how_to_split_them_by_the_trace(folder, tmp_path):
    traced = build_plan(load_machine(folder), targets=["H200 SXM"])
    h200 = next(t for t in traced.targets if t.gpu.name == "H200 SXM")
    sensor = [p for p in h200.predictions if p.workload == "sensor-cnn" and p.precision == "bf16"]
    assert sensor and all("the trace's ops" in p.split.basis for p in sensor if p.variant in PLAIN_VARIANTS)
    (folder / TRACE.name).unlink()
    counted = build_plan(load_machine(folder), targets=["H200 SXM"])
    h200 = next(t for t in counted.targets if t.gpu.name == "H200 SXM")
    assert all(p.split.basis.startswith("FLOP/byte counts") for p in h200.predictions
               if p.workload == "sensor-cnn" and p.variant in PLAIN_VARIANTS)
