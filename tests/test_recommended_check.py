"""benchmarks/recommended_check.py's comparison: which timed figure meets which plan row, and how the rows that
fall outside the plan's range are counted (docs/accuracy.md's "At the settings the plan recommends" reads it)."""

from __future__ import annotations

import json
from pathlib import Path

from paths import REPO, load_script


def _check():  # noqa: ANN202 - the script, loaded from its file as docs/tables.py loads it
    return load_script(REPO / "benchmarks" / "recommended_check.py")


def _row(batch: int, compile_: bool, expected: float, plan_from: str = "a") -> dict:
    return {"plan_from": plan_from, "gpu": "H100 SXM", "how": "measured", "workload": "w", "spec": "w",
            "precision": "bf16", "batch": batch, "compile": compile_, "channels_last": None, "cudnn_benchmark": None,
            "expandable_segments": False, "expected_per_s": expected, "low_per_s": expected * 0.95,
            "high_per_s": expected * 1.05, "unit": "x", "bound": "memory", "basis": ""}


def _timed(tmp: Path, name: str, configs: list[tuple[dict, list[dict]]]) -> Path:
    path = tmp / name
    path.write_text(json.dumps({"configurations": [{**c, "timed": t} for c, t in configs]}))
    return path


def test_a_plan_row_meets_the_timing_of_its_own_configuration_only(tmp_path):
    check = _check()
    eager, compiled = _row(320, False, 1000.0), _row(320, True, 1300.0)
    first = _timed(tmp_path, "one.json", [(eager, [{"status": "ok", "throughput_per_s": 990.0},
                                                   {"status": "ok", "throughput_per_s": 1010.0}]),
                                          (compiled, [{"status": "oom", "reason": "out of memory"}])])
    timed = check.timings([first])
    assert timed == {check._key(eager): 1000.0}   # the median of its passes; an OOM is no figure
    rows = check.compare([eager, compiled, _row(160, True, 1500.0)], timed)
    assert [r["batch"] for r in rows] == [320]    # rows nothing timed are left out, never matched by workload
    second = check.timings([_timed(tmp_path, "two.json", [(compiled, [{"status": "ok", "throughput_per_s": 1000.0}])])])
    both = check.compare([eager, compiled], timed, second)
    text = check.markdown(both, ["first", "second"])
    assert "| 1000 (out) | +30.0% |" in text       # compiled: 1300 expected, 1000 timed, outside ±5 %
    assert "- first: 1 plan rows timed, 1 inside the plan's range" in text
    assert "- second: 1 plan rows timed, 0 inside the plan's range; |expected ÷ timed − 1| median 30.0%" in text
