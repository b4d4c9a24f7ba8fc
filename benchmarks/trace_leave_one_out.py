"""How well a plan from a CPU-only trace predicts the GPUs we measured: each reference workload traced on this CPU (the
meta device, no GPU), then predicted on the H100 and the H200 by a model learned from the OTHER workloads'
measurements only (planner/trace/learn.py with leave_out), and compared with its own committed measurement.

    PYTHONPATH=$PWD python benchmarks/trace_leave_one_out.py [--traces DIR] [--write]

Steps (all on the CPU; ~10 min on 2 shared cores, most of it tracing conv-rollout's 100-step rollouts):
1. trace every reference workload (planner/trace/references.py) at the standard profile's configurations and at
   every configuration either GPU measured or profiled, into DIR (default: a temporary folder; an existing
   trace-<workload>.json there is reused: pass --retrace to trace again);
2. per reference GPU (results/h100-80gb, results/h200) and per workload: learn without it, predict its measured
   plain steps, its torch.compile steps and its boundaries (planner/trace/loo.py);
3. print the acceptance figures: steps of at least 20 ms, median |error| and the largest; the largest batch within
   5 %; the share of measured steps inside the band the plan would give (its half-widths calibrated on the other
   workloads' residuals: each workload's band is made without its own residuals);
4. each reference workload's trace, predicted without its own measurements, against the published
   cross-architecture tables (planner/check/crossarch.py), beside the measured H100's rows for the same tables;
5. with --write: results/<machine>/diagnostics/trace-leave-one-out.json (every residual, and on the H100 the
   published rows; docs/accuracy.md's generated block reads it) and planner/trace/learned.json (the models learned
   from every workload, the residuals the bands are made from: what `gpuplan plan` reads for a trace folder).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from collectors.trace.collect import load_on_meta, save_trace, trace_configs, trace_run  # noqa: E402
from gpuplan_schema.payloads import TracePayload  # noqa: E402
from gpuplan_schema.results import MachineResults, load_machine  # noqa: E402
from gpuplan_schema.schema import build_document, document_to_dict, load_document, write_text_atomic  # noqa: E402
from planner.check.bands import gpu_set, host_spread  # noqa: E402
from planner.check.crossarch import build_crosscheck  # noqa: E402
from planner.model.split import machine_rooflines  # noqa: E402
from planner.specs import match_gpu  # noqa: E402
from planner.trace.bands import sides  # noqa: E402
from planner.trace.learn import (  # noqa: E402
    GpuModel,
    learn_gpu,  # noqa: E402
    measured_points,
)
from planner.trace.loo import MIN_STEP_S, BatchResidual, StepResidual, leave_one_out, model_steps  # noqa: E402
from planner.trace.machine import trace_machine  # noqa: E402
from planner.trace.model_file import LEARNED, Learned, Residuals, learned_to_dict  # noqa: E402
from planner.trace.references import HELD_OUT_MEASURED, HELD_OUT_SPECS, REFERENCE_MACHINES, REFERENCE_SPECS  # noqa: E402

OUT_NAME = "trace-leave-one-out.json"


def measured_configs(name: str, machines: list[MachineResults]) -> set[tuple[str, int]]:
    """Every (precision, batch) a reference GPU timed (plain points) or profiled for the workload."""
    out: set[tuple[str, int]] = set()
    for m in machines:
        for w in m.workloads:
            if w.workload == name:
                out |= {(p.precision, p.batch) for p in w.points if p.status == "ok" and p.seq_len is None}
        for r in machine_rooflines(m):
            if r.workload == name:
                out |= {(r.precision, b.batch) for b in r.profiled()}
    return out


def trace_references(folder: Path, machines: list[MachineResults], retrace: bool,
                     specs: dict[str, str] = REFERENCE_SPECS) -> dict[str, TracePayload]:
    traces = {}
    for name, spec in specs.items():
        path = folder / f"trace-{name}.json"
        if path.exists() and not retrace:
            traces[name] = load_document(path).payload
            continue
        started = time.perf_counter()
        workload = load_on_meta(spec)
        configs = sorted(set(trace_configs(spec, workload)) | measured_configs(name, machines))
        runs = [trace_run(workload, precision, batch) for precision, batch in configs]
        payload = TracePayload(workload.name, workload.source, workload.unit, workload.training,
                               sum(p.numel() for p in workload.model.parameters()), 1, runs,
                               time.perf_counter() - started, torch.__version__, workload.tokens_per_sample)
        save_trace(payload, folder, "references")
        traces[name] = payload
        print(f"traced {name}: {len(runs)} steps in {payload.elapsed_s:.0f} s", file=sys.stderr, flush=True)
    return traces


def held_out_models(model: GpuModel, measured: list[MachineResults], traces: dict[str, TracePayload]
                    ) -> list[StepResidual]:
    """The residuals of the held-out models measured on this model's GPU type, predicted by the model learned from
    every reference workload (none of them was learned from)."""
    out = []
    for m in measured:
        if (spec := match_gpu(m.gpu_name or "")) and spec.name == model.gpu:
            for variants, label in ((("default", "no_cudnn_benchmark"), "eager"), (("compile",), "compile")):
                out += list(model_steps(model, measured_points(m, traces, variants=variants), label))
    return out


def in_band(residuals: list[StepResidual], error: float, workload: str) -> bool:
    """Whether the measurement lay inside the band a trace-only plan gives (planner/trace/bands.py's sides), made
    from the OTHER workloads' residuals."""
    others = [r for r in residuals if r.workload != workload]
    low, high = sides([r.error for r in others], [r.workload for r in others])
    measured_over_predicted = 1 / (1 + error)
    return 1 - low <= measured_over_predicted <= 1 + high


def summarise(machine: str, steps: list[StepResidual], batches: list[BatchResidual],
              held: list[StepResidual] = ()) -> dict:
    """The acceptance figures of the references held out one at a time; each band is made of the other workloads'
    residuals, the held-out models' among them (as the plan's is), and the held-out models' own figures apart."""
    eager = [s for s in steps if s.variant == "eager" and s.measured_s >= MIN_STEP_S]
    compiled = [s for s in steps if s.variant == "compile" and s.measured_s >= MIN_STEP_S]
    held_eager = [s for s in held if s.variant == "eager" and s.measured_s >= MIN_STEP_S]
    held_compiled = [s for s in held if s.variant == "compile" and s.measured_s >= MIN_STEP_S]
    pool, pool_compiled = eager + held_eager, compiled + held_compiled
    inside = [in_band(pool, s.error, s.workload) for s in eager] + \
        [in_band(pool_compiled, s.error, s.workload) for s in compiled]
    held_inside = [in_band(pool, s.error, s.workload) for s in held_eager] + \
        [in_band(pool_compiled, s.error, s.workload) for s in held_compiled]
    workloads = {}
    for w in sorted({s.workload for s in eager}):
        mine = [abs(s.error) for s in eager if s.workload == w]
        workloads[w] = {"n": len(mine), "median_abs_error": statistics.median(mine), "max_abs_error": max(mine)}
    errors = [abs(s.error) for s in eager]
    return {
        "machine": machine, "steps": len(eager),
        "median_abs_error": statistics.median(errors) if errors else None,
        "max_abs_error": max(errors) if errors else None, "over_25": sum(e > 0.25 for e in errors),
        "compiled_median_abs_error": statistics.median(abs(s.error) for s in compiled) if compiled else None,
        "batches": len(batches), "batches_within_5": sum(abs(b.error) <= 0.05 for b in batches),
        "inside_band": sum(inside), "banded": len(inside), "workloads": workloads,
        "held_out_models": {"steps": len(held_eager), "models": len({s.workload for s in held_eager}),
                            "median_abs_error": statistics.median(abs(s.error) for s in held_eager) if held_eager
                            else None, "inside_band": sum(held_inside), "banded": len(held_inside)},
    }


def print_summary(s: dict) -> None:
    print(f"\n{s['machine']}: {s['steps']} plain steps ≥ {MIN_STEP_S * 1e3:.0f} ms, median |error| "
          f"{s['median_abs_error']:.1%}, largest {s['max_abs_error']:.1%}, {s['over_25']} over 25 %; compiled "
          f"median {s['compiled_median_abs_error'] or 0:.1%}; max batch within 5 %: {s['batches_within_5']} of "
          f"{s['batches']}; inside the band: {s['inside_band']} of {s['banded']}")
    for w, row in s["workloads"].items():
        print(f"  {w:22s} n={row['n']:3d}  median {row['median_abs_error']:6.1%}  largest {row['max_abs_error']:6.1%}")
    held = s["held_out_models"]
    if held["steps"]:
        print(f"  held-out models: {held['models']}, {held['steps']} plain steps, median |error| "
              f"{held['median_abs_error']:.1%}; inside the band (made without each model's own): "
              f"{held['inside_band']} of {held['banded']}")


def published_check(machine: MachineResults, traces: dict[str, TracePayload], base: Learned) -> list[dict]:
    """Each reference workload's trace predicted without its own measurements (a trace folder of it alone, the model
    learned leaving it out) and checked against the published cross-architecture tables as a measured machine is
    (planner/check/crossarch.py), beside the measured machine's own row for the same table and GPU."""
    measured = build_crosscheck(machine)
    mine = {(r.table, r.gpu): r.error for r in (measured.rows if measured else [])}
    out = []
    for name, trace in traces.items():
        model = learn_gpu(machine, traces, leave_out=name)
        doc = build_document("trace", "trace", "1", f"trace-{name}", trace)
        folder = MachineResults(f"trace-{name}", machine.folder, {f"trace-{name}": doc})
        check = build_crosscheck(trace_machine(folder, replace(base, models={machine.machine: model})).machine)
        out += [{"workload": name, "table": r.table, "gpu": r.gpu, "error": r.error,
                 "measured_error": mine.get((r.table, r.gpu))} for r in (check.rows if check else [])]
    return out


def cross_residuals(machine: MachineResults) -> list[float]:
    check = build_crosscheck(machine)
    return [r.error for r in check.rows if gpu_set(r.host)] if check else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, help="where the reference traces are kept (default: a temp folder)")
    parser.add_argument("--retrace", action="store_true", help="trace again even where a trace is kept")
    parser.add_argument("--results", type=Path, default=ROOT / "results", help="the results root (default: results/)")
    parser.add_argument("--write", action="store_true",
                        help=f"write results/<machine>/diagnostics/{OUT_NAME} and {LEARNED.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    machines = [load_machine(args.results / m) for m in REFERENCE_MACHINES]
    folder = args.traces or Path(tempfile.mkdtemp(prefix="gpuplan-traces-"))
    folder.mkdir(parents=True, exist_ok=True)
    traces = trace_references(folder, machines, args.retrace)
    measured = [load_machine(args.results / d) for d in HELD_OUT_MEASURED]
    held_traces = trace_references(folder / "held-out", measured, args.retrace, HELD_OUT_SPECS)
    eager: list[StepResidual] = []
    compiled: list[StepResidual] = []
    models = {}
    for machine in machines:
        steps, batches = leave_one_out(machine, traces)
        models[machine.machine] = learn_gpu(machine, traces)
        held = held_out_models(models[machine.machine], measured, held_traces)
        summary = summarise(machine.machine, steps, batches, held)
        print_summary(summary)
        eager += [s for s in steps + held if s.variant == "eager" and s.measured_s >= MIN_STEP_S]
        compiled += [s for s in steps + held if s.variant == "compile"]
        if args.write:
            out = {"summary": summary, "steps": [s.to_dict() for s in steps], "batches": [b.to_dict() for b in batches],
                   "held_out_models": [s.to_dict() for s in held]}
            write_text_atomic(machine.folder / "diagnostics" / OUT_NAME, json.dumps(out, indent=1) + "\n")
    residuals = Residuals([s.error for s in eager], [s.error for s in compiled], cross_residuals(machines[0]),
                          host_spread(machines), [s.workload for s in eager], [s.workload for s in compiled])
    learned = Learned(models, {m.machine: m.ceilings for m in machines}, residuals)  # type: ignore[misc]
    published = published_check(machines[0], traces, learned)
    print_published(published)
    if args.write:
        ceilings = {m.machine: document_to_dict(next(d for d in m.documents.values() if d.kind == "ceilings"))
                    ["payload"] for m in machines}
        write_text_atomic(LEARNED, json.dumps(learned_to_dict(learned, ceilings), indent=1) + "\n")
        path = machines[0].folder / "diagnostics" / OUT_NAME
        write_text_atomic(path, json.dumps({**json.loads(path.read_text()), "published": published}, indent=1) + "\n")
        print(f"\nwrote {LEARNED.relative_to(ROOT)} and results/*/diagnostics/{OUT_NAME}")
    return 0


def print_published(rows: list[dict]) -> None:
    errors = [abs(r["error"]) for r in rows]
    theirs = [abs(r["measured_error"]) for r in rows if r["measured_error"] is not None]
    if errors:
        print(f"\npublished tables, {len(rows)} rows: trace median |ratio error| {statistics.median(errors):.1%}, "
              f"largest {max(errors):.1%}; the measured machine's, same rows: {statistics.median(theirs):.1%}")


if __name__ == "__main__":
    sys.exit(main())
