"""benchmarks/heldout_trace_split.py: a held-out folder's unprofiled workload split by its CPU trace, as the plan
splits it (calibrated) and as the trace predicts it, every measured document kept."""

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
    for calibrated in (True, False):
        out = split.split_by_trace(machine, {"sensor-cnn": trace}, calibrated)
        added = {k: d for k, d in out.documents.items() if k not in machine.documents}
        assert {(d.payload.workload, d.payload.precision) for d in added.values()} == {("sensor-cnn", "bf16"),
                                                                                    ("sensor-cnn", "tf32")}
        assert all(d.collector.name == PREDICTED for d in added.values())
        assert all(out.documents[k] is d for k, d in machine.documents.items())  # every measured document kept
        assert split_point(point, machine_rooflines(out), "sensor-cnn", 0.1, 0.1).basis.startswith("roofline bf16")
