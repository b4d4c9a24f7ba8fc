"""The trace-only bands calibrated on the held-out models beside the references (planner/trace/references.py
HELD_OUT_SPECS): benchmarks/trace_leave_one_out.py's pool and benchmarks/trace_compare.py's band, each made without
the checked workload's own residuals."""

from __future__ import annotations

import json

from paths import REPO, RESULTS, load_script

from gpuplan_schema.results import load_machine
from planner.trace.loo import StepResidual
from planner.trace.model_file import Residuals
from planner.trace.references import HELD_OUT_MEASURED, HELD_OUT_SPECS, REFERENCE_SPECS

LOO = load_script(REPO / "benchmarks" / "trace_leave_one_out.py")
COMPARE = load_script(REPO / "benchmarks" / "trace_compare.py")


def residual(workload: str, error: float, variant: str = "eager") -> StepResidual:
    return StepResidual("h100-80gb", workload, "bf16", 64, variant, 0.1, 0.1 * (1 + error), False, 0.0)


def test_a_models_own_residuals_never_make_the_band_it_is_checked_against():
    spread = [residual(f"w{i}", e) for i, e in enumerate((-0.1, -0.05, 0.0, 0.05, 0.1))]
    wild = [residual("wild", 0.9)] * 20
    # the wild workload's step is outside a band made of the others, though its own residuals would have widened it
    assert not LOO.in_band(spread + wild, 0.9, "wild")
    assert LOO.in_band(spread + wild, 0.05, "w0")
    residuals = Residuals([r.error for r in spread + wild], [], [], 0.0, [r.workload for r in spread + wild], [])
    assert not COMPARE.inside_band(residuals, False, 1 / 1.9, "wild")
    assert COMPARE.inside_band(residuals, False, 1 / 1.9, "w0")    # the wild model's misses widen the others' band


def test_the_summary_bands_the_references_with_the_held_out_models_and_reports_them_apart():
    references = [residual(f"r{i}", e) for i, e in enumerate((-0.1, -0.05, 0.0, 0.05, 0.1))]
    held = [residual("model-a", 0.3), residual("model-a", 0.32), residual("model-b", -0.2)]
    summary = LOO.summarise("h100-80gb", references, [], held)
    assert summary["steps"] == 5 and summary["held_out_models"]["steps"] == 3
    assert summary["held_out_models"]["models"] == 2 and summary["held_out_models"]["banded"] == 3
    without = LOO.summarise("h100-80gb", references, [])
    # the held-out models' larger misses widen the references' bands: as many references inside, or more
    assert summary["inside_band"] >= without["inside_band"]


def test_committed_results_every_held_out_folder_holds_a_held_out_model_on_a_reference_gpu():
    for folder in HELD_OUT_MEASURED:
        machine = load_machine(RESULTS / folder)
        names = {w.workload for w in machine.workloads}
        assert names and names <= set(HELD_OUT_SPECS), folder
        assert machine.gpu_name and ("H100" in machine.gpu_name or "H200" in machine.gpu_name), folder
    assert not set(HELD_OUT_SPECS) & set(REFERENCE_SPECS)   # a held-out model is never learned from


def test_committed_results_the_leave_one_out_files_report_the_held_out_models():
    for machine in ("h100-80gb", "h200"):
        doc = json.loads((RESULTS / machine / "diagnostics" / "trace-leave-one-out.json").read_text())
        held = doc["summary"]["held_out_models"]
        assert held["steps"] > 100 and held["banded"] >= held["steps"] and doc["held_out_models"]
        assert {r["workload"] for r in doc["held_out_models"]} <= set(HELD_OUT_SPECS)
