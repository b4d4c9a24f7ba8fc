"""Issues 39 and 41: what splitting a step that has no per-op profile by the model's CPU trace (planner/trace/hybrid.py)
does to the H100 <-> H200 predictions, against splitting it from its FLOP/byte counts.

Two checks:

- `--references`: the 15 reference workloads of results/, each with its per-op profiles withheld, split three ways
  (by its measured profile, from its counts, by its trace calibrated to the measured step, the trace predicted by a
  model learned without that workload): the GPU-set H100 <-> H200 predictions' median, 90th percentile and largest
  |error|. Needs their traces (`benchmarks/trace_leave_one_out.py --traces DIR` keeps them).
- `--pair H100_DIR H200_DIR` (repeatable): machine folders of held-out models, each predicted from the other against
  the band table of results/ (benchmarks/heldout_bands.py), split from counts, by the trace as predicted, and by the
  trace calibrated to the measured step (what the plan does where a folder holds the model's trace).

    gpuplan trace examples/unet_seg.py:build ... --out /tmp/tr --machine ho
    PYTHONPATH=$PWD python benchmarks/heldout_trace_split.py --traces /tmp/tr/ho --pair H100_DIR H200_DIR ...
    PYTHONPATH=$PWD python benchmarks/heldout_trace_split.py --traces /tmp/reference-traces --references
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

from gpuplan_schema.payloads import TracePayload
from gpuplan_schema.results import MachineResults, load_results_root
from gpuplan_schema.schema import build_document, load_document
from planner.check.accuracy import build_accuracy
from planner.check.bands import band_table_for, gpu_set
from planner.check.harness_bands import held_out_ratio_checks
from planner.check.pairs_markdown import render_held_out
from planner.trace.hybrid import trace_rooflines
from planner.trace.learn import learn_gpu
from planner.trace.machine import PREDICTED, predicted_rooflines
from planner.trace.model_file import Learned, load_learned

sys.path.insert(0, str(Path(__file__).parent))
import heldout_bands  # noqa: E402 - the sibling script's checks and report


def with_traces(machine: MachineResults, traces: dict[str, TracePayload]) -> MachineResults:
    """The machine folder with the traces of its workloads beside its documents (as `gpuplan trace --out` puts them)."""
    docs = dict(machine.documents)
    for w in machine.workloads:
        if w.workload in traces:
            docs[f"trace-{w.workload}"] = build_document("trace", "trace", "1", machine.machine, traces[w.workload])
    return replace(machine, documents=docs)


def split_by_trace(machine: MachineResults, traces: dict[str, TracePayload], calibrated: bool,
                   learned: Learned | None = None) -> MachineResults:
    """The machine with its unprofiled (workload, precision)s' trace profiles as roofline documents: calibrated to
    the measured step (planner/trace/hybrid.py, what the plan uses) or as the trace predicts them."""
    folder = with_traces(machine, traces)
    learned = learned or load_learned()
    if calibrated:
        extra = trace_rooflines(folder, learned)
    else:
        from planner.trace.hybrid import model_for
        profiled = {(d.payload.workload, d.payload.precision) for d in machine.documents.values()
                    if d.kind == "roofline"}
        extra = [r for w in machine.workloads if w.workload in traces
                 for r in predicted_rooflines(traces[w.workload], model_for(folder, learned), machine.machine)
                 if (w.workload, r.precision) not in profiled]
    docs = dict(machine.documents)
    for r in extra:
        doc = build_document("roofline", PREDICTED, "1", machine.machine, r)
        docs[f"roofline-{r.workload}-{r.precision}-trace"] = doc
    return replace(machine, documents=docs)


def without_profiles(machine: MachineResults, workload: str) -> MachineResults:
    return replace(machine, documents={k: d for k, d in machine.documents.items()
                                       if not (d.kind == "roofline" and d.payload.workload == workload)})


def reference_rows(machines: list[MachineResults], traces: dict[str, TracePayload]) -> dict[str, list[float]]:
    """Each reference workload's GPU-set H100 <-> H200 errors (both ways), split three ways (module docstring)."""
    pair = [m for m in machines if m.machine in ("h100-80gb", "h200")]
    base = load_learned()
    out: dict[str, list[float]] = {"measured profile": [], "counts": [], "trace, calibrated": []}
    for workload in sorted(traces):
        held_out = replace(base, models={m.machine: learn_gpu(m, traces, leave_out=workload) for m in pair})
        bare = [without_profiles(m, workload) for m in pair]
        split = [split_by_trace(m, {workload: traces[workload]}, True, held_out) for m in bare]
        for label, (a, b) in (("measured profile", pair), ("counts", bare), ("trace, calibrated", split)):
            for source, target in ((a, b), (b, a)):
                out[label] += [r.error for r in build_accuracy(source, target).rows
                               if r.workload == workload and gpu_set(r.host) and r.variant != "compile"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, required=True, help="a folder of trace-<workload>.json documents")
    parser.add_argument("--pair", nargs=2, type=Path, action="append", default=[], metavar=("H100_DIR", "H200_DIR"))
    parser.add_argument("--references", action="store_true", help="the reference workloads of results/ instead")
    parser.add_argument("--results", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    traces = {}
    for path in sorted(args.traces.glob("trace-*.json")):
        payload = load_document(path).payload
        traces[payload.workload] = payload
    if args.references:
        for label, errors in reference_rows(load_results_root(args.results), traces).items():
            ordered = sorted(abs(e) for e in errors)
            print(f"{label}: {len(errors)} GPU-set H100 <-> H200 predictions, median |error| "
                  f"{statistics.median(ordered):.1%}, 90th percentile {ordered[int(0.9 * len(ordered))]:.1%}, "
                  f"largest {ordered[-1]:.1%}")
        return 0
    table = band_table_for(load_results_root(args.results))
    pairs = [(heldout_bands._machine(a), heldout_bands._machine(b)) for a, b in args.pair]
    for label, calibrated in (("split from counts (as before)", None), ("split by the trace, as predicted", False),
                              ("split by the trace, calibrated to the measured step (the plan)", True)):
        checks, published = [], ""
        for a, b in pairs:
            if calibrated is not None:
                a, b = (split_by_trace(m, traces, calibrated) for m in (a, b))
            checks += heldout_bands.new_model_checks(table, a, b)
            published += render_held_out(held_out_ratio_checks(table, [a, b]))
        print(heldout_bands.report(checks, label) + published)
    return 0


if __name__ == "__main__":
    sys.exit(main())
