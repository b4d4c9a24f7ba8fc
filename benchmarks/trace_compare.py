"""A trace-only plan against a GPU measurement of the same model: every configuration both have, predicted from the
trace folder (gpuplan trace) with the model learned on that GPU type (planner/trace/learned.json), beside the step
the measured machine folder (gpuplan collect) timed, and the largest batch against the measured boundary.

    PYTHONPATH=$PWD python benchmarks/trace_compare.py TRACE_DIR MEASURED_DIR [--min-step-s 0.02] [--json FILE]

For a model no reference workload is (benchmarks/trace_decoder.py, or any user file), this is the check of a
trace-only plan on a model the predictor never learned from. The measured GPU must be one the model was learned
on (an H100 or an H200: learned.json's machines); a step below --min-step-s is listed, not counted. Each step says
whether the measurement lay inside the band a trace-only plan gives on that GPU type (planner/trace/bands.py: the
held-out residuals' sides, eager or compiled, each reference workload weighing alike).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint  # noqa: E402
from gpuplan_schema.results import MachineResults, load_machine  # noqa: E402
from planner.specs import match_gpu  # noqa: E402
from planner.trace.bands import sides  # noqa: E402
from planner.trace.machine import trace_machine  # noqa: E402
from planner.trace.model_file import Learned, Residuals, load_learned  # noqa: E402

PLAIN = ("default", "no_cudnn_benchmark")


def compare(trace_dir: Path, measured_dir: Path) -> tuple[list[dict], list[dict]]:
    measured = load_machine(measured_dir)
    learned = load_learned()
    gpu = match_gpu(measured.gpu_name or "")
    machine = next((m for m, model in learned.models.items() if gpu and model.gpu == gpu.name), None)
    if machine is None:
        raise SystemExit(f"{measured_dir}: its GPU ({measured.gpu_name}) is none the trace model was learned on "
                         f"({', '.join(m.gpu for m in learned.models.values())})")
    predicted = predicted_on(trace_dir, learned, machine)
    steps, batches = [], []
    for w in predicted.workloads:
        mine = next((x for x in measured.workloads if x.workload == w.workload), None)
        if mine is None:
            continue
        for p in w.points:
            for m in measured_points(mine, p.precision, p.batch, p.variant):
                steps.append({"workload": w.workload, "precision": p.precision, "batch": p.batch,
                              "variant": p.variant, "measured_s": m.step_s.median, "predicted_s": p.step_s.median,
                              "error": p.step_s.median / m.step_s.median - 1,
                              "inside_band": inside_band(learned.residuals, p.variant == "compile",
                                                         m.step_s.median / p.step_s.median, w.workload)})
        for b in w.boundaries:
            real = mine.boundary(b.precision)
            if real and real.status == "ok" and real.max_batch and b.max_batch and not real.capped:
                batches.append({"workload": w.workload, "precision": b.precision, "measured": real.max_batch,
                                "predicted": b.max_batch, "error": b.max_batch / real.max_batch - 1})
    return steps, batches


def measured_points(measured: WorkloadPayload, precision: str, batch: int, variant: str) -> list[WorkloadPoint]:
    """The measured steps a predicted configuration is compared with: the same precision and batch at the full
    sequence, eager beside eager (cuDNN autotuned or not) or compiled beside compiled, timed (not a boundary probe)."""
    def plain(m: WorkloadPoint) -> bool:
        return variant in PLAIN and m.variant in PLAIN or variant == m.variant == "compile"
    return [m for m in measured.points if plain(m) and (m.precision, m.batch, m.seq_len) == (precision, batch, None)
            and m.status == "ok" and m.step_s and m.sweep != "probe"]


def predicted_on(trace_dir: Path, learned: Learned, machine: str) -> MachineResults:
    """The trace folder's workloads predicted with the model learned on `machine` (a learned.json machine)."""
    return trace_machine(load_machine(trace_dir), replace(learned, reference=machine)).machine


def inside_band(residuals: Residuals, compiled: bool, measured_over_predicted: float, workload: str = "") -> bool:
    """Whether the measurement lay inside the trace-only band on a GPU of the reference's architecture."""
    low, high = band_sides(residuals, compiled, workload)
    return 1 - low <= measured_over_predicted <= 1 + high


def band_sides(residuals: Residuals, compiled: bool, workload: str = "") -> tuple[float, float]:
    """The trace-only band's (low, high) sides of measured / predicted on a GPU of the reference's architecture, made
    without the workload's own residuals where learned.json holds them (a held-out model calibrates the bands too:
    planner/trace/references.py HELD_OUT_SPECS)."""
    errors, groups = (residuals.compiled, residuals.compiled_workloads) if compiled and residuals.compiled else \
        (residuals.eager, residuals.eager_workloads)
    if len(groups) == len(errors) and workload in groups:
        keep = [(e, g) for e, g in zip(errors, groups, strict=True) if g != workload]
        errors, groups = [e for e, _ in keep], [g for _, g in keep]
    return sides(list(errors), list(groups) if len(groups) == len(errors) else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace_dir", type=Path)
    parser.add_argument("measured_dir", type=Path)
    parser.add_argument("--min-step-s", type=float, default=0.02)
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    steps, batches = compare(args.trace_dir, args.measured_dir)
    for s in steps:
        mark = "" if s["measured_s"] >= args.min_step_s else "  (short: not counted)"
        print(f"{s['workload']:18s} {s['precision']} {s['batch']:7d} {s['variant']:18s} measured "
              f"{s['measured_s'] * 1e3:9.2f} ms  predicted {s['predicted_s'] * 1e3:9.2f} ms  {s['error']:+7.1%}{mark}")
    for b in batches:
        print(f"{b['workload']:18s} {b['precision']} max batch measured {b['measured']} predicted {b['predicted']} "
              f"{b['error']:+.1%}")
    counted = [s for s in steps if s["measured_s"] >= args.min_step_s]
    if counted:
        errors = [abs(s["error"]) for s in counted]
        print(f"{len(counted)} steps >= {args.min_step_s * 1e3:.0f} ms: median |error| "
              f"{statistics.median(errors):.1%}, largest {max(errors):.1%}; inside the band "
              f"{sum(s['inside_band'] for s in counted)} of {len(counted)}")
    if args.json:
        args.json.write_text(json.dumps({"steps": steps, "batches": batches}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
