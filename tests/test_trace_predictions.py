"""benchmarks/trace_predictions.py: a trace-only plan's predictions frozen before a GPU measures the model, and later
printed beside the measurement. The frozen figures are the ones benchmarks/trace_compare.py compares (the same
steps, the same predicted and measured times), each with the band it would be judged by."""

from __future__ import annotations

import json

from paths import FROZEN, REPO, load_script

PREDICT = load_script(REPO / "benchmarks" / "trace_predictions.py")
COMPARE = load_script(REPO / "benchmarks" / "trace_compare.py")
TRACE = REPO / "tests" / "fixtures" / "trace" / "trace-sensor-cnn"   # gpuplan trace of examples/user_workload.py


def test_frozen_predictions_are_what_trace_compare_later_compares(tmp_path, capsys):
    out = tmp_path / "frozen" / "predictions.json"
    assert PREDICT.main([str(TRACE), "--json", str(out)]) == 0
    frozen = json.loads(out.read_text())
    assert set(frozen["machines"]) == {"h100-80gb", "h200"}
    assert len(frozen["commit"]) == 40 and len(frozen["learned_sha256"]) == 64
    for machine, side in frozen["machines"].items():
        assert side["steps"] and all(lo < 1 < hi for lo, hi in (s["measured_over_predicted"] for s in side["steps"]))
        assert [s["workload"] for s in side["main_step"]] == ["sensor-cnn"] and side["max_batch"]
        assert f"{machine}: sensor-cnn bf16" in capsys.readouterr().out or machine != "h100-80gb"
    assert {t["target"] for t in frozen["plan"]} == {"H100 SXM", "H200 SXM"}
    steps, batches = COMPARE.compare(TRACE, FROZEN / "h100-80gb")
    lines = PREDICT.against(frozen, FROZEN / "h100-80gb")
    timed = [line for line in lines if " ms " in line]
    assert steps and len(timed) == len(steps)
    for step, line in zip(steps, timed, strict=True):
        assert f"measured {step['measured_s'] * 1e3:8.2f} ms  predicted {step['predicted_s'] * 1e3:8.2f} ms" in line
        assert ("inside the band" if step["inside_band"] else "OUTSIDE the band") in line
    assert len([line for line in lines if "max batch" in line]) == len(batches)
    assert lines[-1].startswith(f"{len(steps)} steps: median |error|")
