"""docs/accuracy.md's generated block on trace-only plans: the steps over 25 % and the floor a host-set step is
measured to (docs/trace_tables.py), on the frozen H100 folder and a leave-one-out document written here."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

from paths import REPO, load_script

from gpuplan_schema.results import load_machine

FROZEN = REPO / "tests" / "fixtures" / "frozen" / "h100-80gb"
TABLES = load_script(REPO / "docs" / "trace_tables.py")   # a docs script, loaded as the other docs tests do


def step(workload: str, measured: float, predicted: float, host: bool, variant: str = "eager") -> dict:
    return {"machine": "h100-80gb", "workload": workload, "precision": "bf16", "batch": 8, "variant": variant,
            "measured_s": measured, "predicted_s": predicted, "host_bound": host, "unknown_share": 0.0,
            "error": predicted / measured - 1}


def test_the_block_lists_every_step_over_25_percent_and_the_host_set_floor(tmp_path: Path):
    folder = tmp_path / "h100-80gb"
    shutil.copytree(FROZEN, folder)
    steps = [step("vit-tiny", 0.0268, 0.0352, True), step("ssd300", 0.224, 0.2946, False),
             step("bert-base-squad", 0.100, 0.110, False), step("vit-tiny", 0.010, 0.020, True),   # under 20 ms
             step("vit-tiny", 0.030, 0.050, False, "compile")]
    summary = {"machine": "h100-80gb", "steps": 3, "median_abs_error": 0.1, "max_abs_error": 0.31, "over_25": 2,
               "compiled_median_abs_error": 0.1, "batches_within_5": 0, "batches": 0, "inside_band": 3, "banded": 3,
               "workloads": {}}
    (folder / "diagnostics").mkdir(exist_ok=True)
    document = {"summary": summary, "steps": steps, "batches": []}
    (folder / "diagnostics" / TABLES.OUT_NAME).write_text(json.dumps(document))
    text = TABLES.trace_leave_one_out([load_machine(folder)])
    over = text.split("The steps over 25 %")[1].split("A host-set step")[0]
    rows = [line for line in over.splitlines() if line.startswith("| h100-80gb")]
    assert rows == ["| h100-80gb | vit-tiny | bf16 | 8 | 26.8 | 35.2 | +31.3% | host |",
                    "| h100-80gb | ssd300 | bf16 | 8 | 224.0 | 294.6 | +31.5% | GPU |"]
    floor = [line for line in text.split("A host-set step")[1].splitlines() if line.startswith("| h100-80gb")]
    ratios = [p["step_s"]["median"] / p["quick_step_s"]["median"]   # the frozen documents read as plain JSON
              for f in FROZEN.glob("workload-*.json") for d in [json.loads(f.read_text())["payload"]] if d["training"]
              for p in d["points"] if p["status"] == "ok" and p.get("quick_step_s") and p.get("host_issue_s")
              and p.get("gpu_busy_s") and p["step_s"]["median"] >= 0.02
              and 2 * p["gpu_busy_s"] < p["host_issue_s"]["median"]]
    assert ratios
    off = sorted(abs(r - 1) for r in ratios)
    assert floor == [f"| h100-80gb | {len(ratios)} | {statistics.median(off):.1%} | {sum(o > 0.25 for o in off)} | "
                     f"{min(ratios):.2f}-{max(ratios):.2f} |"]
