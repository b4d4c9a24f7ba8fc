"""benchmarks/heldout_trace_split.py: a folder's unprofiled workload split by its CPU trace's predicted ops."""

from __future__ import annotations

from paths import FROZEN, REPO, load_script

from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import load_document
from planner.model.split import machine_rooflines, split_point
from planner.trace.machine import PREDICTED

split = load_script(REPO / "benchmarks" / "heldout_trace_split.py")


def test_an_unprofiled_workload_is_split_by_its_trace_and_every_measured_document_is_kept():
    machine = load_machine(FROZEN / "h100-80gb")
    trace = load_document(REPO / "tests" / "fixtures" / "trace" / "trace-sensor-cnn" / "trace-sensor-cnn.json").payload
    point = next(p for w in machine.workloads if w.workload == "sensor-cnn" for p in w.points
                 if p.precision == "bf16" and p.step_s and p.variant == "default" and p.batch >= trace.main_batch)
    assert split_point(point, machine_rooflines(machine), "sensor-cnn", 0.1, 0.1).basis == "FLOP/byte counts"

    out = split.with_trace_split(machine, {"sensor-cnn": trace}, "h100-80gb")
    added = {k: d for k, d in out.documents.items() if k not in machine.documents}
    assert set(added) == {"roofline-sensor-cnn", "roofline-sensor-cnn-tf32"}
    assert all(d.collector.name == PREDICTED for d in added.values())
    assert all(out.documents[k] is d for k, d in machine.documents.items())  # every measured document kept
    basis = split_point(point, machine_rooflines(out), "sensor-cnn", 0.1, 0.1).basis
    assert basis.startswith("roofline bf16")
    assert split.model_key(machine) == "h100-80gb"
