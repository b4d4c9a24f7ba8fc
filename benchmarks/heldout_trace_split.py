"""An experiment for issues 39 and 41: split a user's points that have no per-op profile by the CPU trace's predicted
per-op times instead of their FLOP/byte counts, and see what that does to the held-out bands.

A user's three-minute collection often ends before its per-op profile (roofline) stage, so the plan splits its steps
from counts: the FLOPs at the matmul roof, the bytes at the copy bandwidth, and everything else "below roof", scaled
to another GPU by SM count × clock. Where a model spends its time in normalisations and elementwise ops (ConvNeXt's
LayerNorm and GELU, a DDPM UNet's GroupNorm and SiLU) that rest is partly bandwidth-bound, and the H200 (same SMs
and clock, 1.43× the bandwidth) runs it faster than the counts split says. `gpuplan trace` of the same model file
predicts each op's time on the measured GPU type (planner/trace, learned from the reference workloads only); this
script adds those predictions as roofline documents (planner/trace/machine.py predicted_rooflines) for every
(workload, precision) a folder did not profile, and checks each pair of held-out machine folders, both ways, against
the band table of results/ (benchmarks/heldout_bands.py), as they are and so split:

    gpuplan trace examples/unet_seg.py:build ... --out /tmp/tr --machine ho
    PYTHONPATH=$PWD python benchmarks/heldout_trace_split.py --traces /tmp/tr/ho \
        --pair H100_DIR H200_DIR [--pair H100_DIR H200_DIR ...]

Not part of the plan: a measured folder does not hold its model's trace today (docs/prediction-model.md).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from gpuplan_schema.results import MachineResults, load_results_root
from gpuplan_schema.schema import build_document, load_document
from planner.check.bands import band_table_for
from planner.trace.machine import PREDICTED, predicted_rooflines
from planner.trace.model_file import load_learned

sys.path.insert(0, str(Path(__file__).parent))
import heldout_bands  # noqa: E402 - the sibling script's checks and report

MODEL_OF = {"NVIDIA H100": "h100-80gb", "NVIDIA H200": "h200"}   # learned.json's model per measured GPU type


def with_trace_split(machine: MachineResults, traces: dict, model_key: str) -> MachineResults:
    """The machine with a predicted roofline for every traced (workload, precision) it has no profile of."""
    model = load_learned().models[model_key]
    docs = dict(machine.documents)
    profiled = {(d.payload.workload, d.payload.precision) for d in docs.values() if d.kind == "roofline"}
    for w in machine.workloads:
        trace = traces.get(w.workload)
        for r in predicted_rooflines(trace, model, model_key) if trace else []:
            if (w.workload, r.precision) not in profiled:
                suffix = "" if r.precision == "bf16" else f"-{r.precision}"
                docs[f"roofline-{w.workload}{suffix}"] = build_document("roofline", PREDICTED, "1", machine.machine, r)
    return replace(machine, documents=docs)


def model_key(machine: MachineResults) -> str:
    name = machine.gpu_name or ""
    key = next((k for prefix, k in MODEL_OF.items() if name.startswith(prefix)), None)
    if key is None:
        raise SystemExit(f"heldout_trace_split.py: {machine.folder}: no learned trace model for {name!r}")
    return key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, required=True, help="a folder of trace-<workload>.json documents")
    parser.add_argument("--pair", nargs=2, type=Path, action="append", required=True, metavar=("H100_DIR", "H200_DIR"))
    parser.add_argument("--results", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    traces = {}
    for path in sorted(args.traces.glob("trace-*.json")):
        payload = load_document(path).payload
        traces[payload.workload] = payload
    table = band_table_for(load_results_root(args.results))
    pairs = [(heldout_bands._machine(a), heldout_bands._machine(b)) for a, b in args.pair]
    for label, split in (("split from counts (as the plan does)", False), ("split by the trace", True)):
        checks = []
        for a, b in pairs:
            if split:
                a, b = with_trace_split(a, traces, model_key(a)), with_trace_split(b, traces, model_key(b))
            checks += heldout_bands.new_model_checks(table, a, b)
        print(heldout_bands.report(checks, label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
