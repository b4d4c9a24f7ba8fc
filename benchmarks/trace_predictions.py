"""A trace-only plan's predictions written down before a GPU measures the model, and later checked against that
measurement: what a check of models the predictor never learned from needs, so that no prediction is made (or
remade) after its measurement is known.

    PYTHONPATH=$PWD python benchmarks/trace_predictions.py TRACE_DIR --json FILE      # before the GPU run
    PYTHONPATH=$PWD python benchmarks/trace_predictions.py --against MEASURED_DIR FILE  # after it

The first writes, for each GPU type the trace model was learned on (planner/trace/learned.json: the H100 and the
H200), every traced configuration's predicted step with the band's sides on measured / predicted (what
benchmarks/trace_compare.py then checks, with the model of its day), the largest batch per precision, the ops that
take most of the main step and its unknown share; and what `gpuplan plan TRACE_DIR --json --target H100 --target
H200` answers (the H200 carried from the H100 by the cross-architecture model). With the commit and learned.json's
sha256 it was made with. The second prints each frozen prediction beside the measured step and largest batch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.trace_compare import band_sides, measured_points, predicted_on  # noqa: E402
from gpuplan_schema.results import load_machine  # noqa: E402
from planner.plan.plan import build_plan, plan_to_json  # noqa: E402
from planner.specs import match_gpu  # noqa: E402
from planner.trace.machine import planned_machine  # noqa: E402
from planner.trace.model_file import LEARNED, Learned, load_learned  # noqa: E402
from planner.trace.summary import trace_summaries  # noqa: E402

PLAN_TARGETS = ("H100", "H200")


def on_machine(trace_dir: Path, learned: Learned, machine: str) -> dict:
    """Every traced configuration predicted with the model learned on `machine`, with its band; the boundaries; the
    main step's ops."""
    predicted = predicted_on(trace_dir, learned, machine)
    steps, batches = [], []
    for w in predicted.workloads:
        for p in w.points:
            low, high = band_sides(learned.residuals, p.variant == "compile", w.workload)
            steps.append({"workload": w.workload, "precision": p.precision, "batch": p.batch, "variant": p.variant,
                          "predicted_s": p.step_s.median, "measured_over_predicted": [1 - low, 1 + high]})
        batches += [{"workload": w.workload, "precision": b.precision, "predicted": b.max_batch}
                    for b in w.boundaries if b.max_batch]
    summaries = trace_summaries(load_machine(trace_dir), learned.models[machine])
    return {"gpu": learned.models[machine].gpu, "steps": steps, "max_batch": batches,
            "main_step": [s.to_dict() for s in summaries]}


def plan_answer(trace_dir: Path) -> list[dict]:
    """`gpuplan plan TRACE_DIR --json --target H100 --target H200`: each target's predictions and capacity."""
    machine = planned_machine(load_machine(trace_dir))
    plan = plan_to_json(build_plan(machine, list(PLAN_TARGETS), None, [machine]))  # no ranking: the targets alone
    keep = ("workload", "precision", "batch", "variant", "step_s", "throughput_per_s", "throughput_low",
            "throughput_high", "bound")
    return [{"target": t["name"], "predictions": [{k: p[k] for k in keep} for p in t["predictions"]],
             "capacity": t["capacity"]} for t in plan["targets"]]


def record(trace_dir: Path) -> dict:
    learned = load_learned()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    return {"trace_dir": str(trace_dir), "commit": commit.strip(),
            "learned_sha256": hashlib.sha256(LEARNED.read_bytes()).hexdigest(),
            "machines": {m: on_machine(trace_dir, learned, m) for m in learned.models},
            "plan": plan_answer(trace_dir)}


def against(frozen: dict, measured_dir: Path) -> list[str]:
    """Each frozen prediction for the measured GPU beside its measurement: one line a step, a boundary, a summary."""
    measured = load_machine(measured_dir)
    gpu = match_gpu(measured.gpu_name or "")
    side = next((v for v in frozen["machines"].values() if gpu and v["gpu"] == gpu.name), None)
    if side is None:
        raise SystemExit(f"{measured_dir}: its GPU ({measured.gpu_name}) has no frozen predictions")
    lines, errors = [], []
    for s in side["steps"]:
        mine = next((w for w in measured.workloads if w.workload == s["workload"]), None)
        for m in measured_points(mine, s["precision"], s["batch"], s["variant"]) if mine else []:
            ratio, (low, high) = m.step_s.median / s["predicted_s"], s["measured_over_predicted"]
            errors.append(abs(1 / ratio - 1))
            lines.append(f"{s['workload']:20s} {s['precision']} {s['batch']:5d} {s['variant']:18s} measured "
                         f"{m.step_s.median * 1e3:8.2f} ms  predicted {s['predicted_s'] * 1e3:8.2f} ms  "
                         f"{1 / ratio - 1:+7.1%}  {'inside' if low <= ratio <= high else 'OUTSIDE'} the band")
    for b in side["max_batch"]:
        real = next((w.boundary(b["precision"]) for w in measured.workloads if w.workload == b["workload"]), None)
        if real and real.status == "ok" and real.max_batch and not real.capped:
            lines.append(f"{b['workload']:20s} {b['precision']} max batch measured {real.max_batch} predicted "
                         f"{b['predicted']} {b['predicted'] / real.max_batch - 1:+.1%}")
    if errors:
        lines.append(f"{len(errors)} steps: median |error| {statistics.median(errors):.1%}, largest {max(errors):.1%}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a trace folder (gpuplan trace), or with --against the frozen JSON")
    parser.add_argument("--json", type=Path, help="write the predictions here")
    parser.add_argument("--against", type=Path, metavar="MEASURED_DIR", help="a measured machine folder (H100 or "
                        "H200) to print the frozen predictions of SOURCE beside")
    args = parser.parse_args(argv)
    if args.against:
        print("\n".join(against(json.loads(args.source.read_text()), args.against)))
        return 0
    frozen = record(args.source)
    for machine, side in frozen["machines"].items():
        for s in side["main_step"]:
            print(f"{machine}: {s['workload']} {s['precision']} {s['batch']}: step {s['step_s'] * 1e3:.1f} ms (GPU "
                  f"{s['gpu_s'] * 1e3:.1f}, host {s['host_s'] * 1e3:.1f}); unknown {s['unknown_share']:.1%} "
                  f"{', '.join(s['unknown'])}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(frozen, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
