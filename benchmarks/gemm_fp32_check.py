"""Plain fp32 matrix products in the trace's model against the grid benchmarks/gpu_gemm_grid.py measured on a GPU:
each point's measured time over the model's roofline time (the product's FLOPs at the GPU's measured fp32 roof,
divided by its fill of the SMs, planner/trace/gemm.py), with the deep reductions split along K as cuBLAS's SIMT
SGEMM does (efficiency.Shape.simt) and, beside it, with whole tiles in waves (what the model did before: the
tensor-core products' rule).

    PYTHONPATH=$PWD python benchmarks/gemm_fp32_check.py [GRID_JSON]

Prints, per sweep, the median and range of measured / model under each rule, and the generic sweeps' median: the
fp32 slowdown the grid says (planner/trace/learn.py learns Fp32Scale.gemm from the measured fp32 steps instead; the
two are compared in docs/trace.md). Exit 1 if the split rule scatters the deep sweep's points more than whole tiles do.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplan_schema.results import load_machine  # noqa: E402
from planner.trace.gemm import Gemm  # noqa: E402
from planner.trace.training import roofs_of  # noqa: E402

GRID = ROOT / "results/h200/diagnostics/gemm-grid-2026-11-28/gemm-grid.json"
MACHINE = ROOT / "results/h200"   # the GPU the grid ran on: its measured fp32 roof


def ratios(doc: dict, fp32_roof: float, split_waves: bool) -> dict[str, list[float]]:
    """Per sweep, each fp32 point's measured seconds over the model's (k_half 0, as learned)."""
    sms = doc["environment"]["sms"]
    out: dict[str, list[float]] = {}
    for p in doc["points"]:
        if p["setting"] == "fp32":
            model_s = p["flops"] / fp32_roof / Gemm(p["m"], p["n"], p["k"]).fill(sms, 0.0, split_waves)
            out.setdefault(p["sweep"], []).append(p["time"]["median_s"] / model_s)
    return out


def scatter(values: list[float]) -> tuple[float, float]:
    """(median, largest) |ratio / the sweep's median − 1|: how far the shapes scatter about one scale."""
    mid = statistics.median(values)
    off = [abs(v / mid - 1) for v in values]
    return statistics.median(off), max(off)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    doc = json.loads(Path(args[0] if args else GRID).read_text())
    roof = roofs_of(load_machine(MACHINE).ceilings).flops_per_s["fp32"]
    print(f"{doc['environment']['gpu']}: fp32 roof {roof / 1e12:.1f} TFLOP/s, {doc['environment']['sms']} SMs")
    spread = {}
    for split in (True, False):
        by = ratios(doc, roof, split)
        generic = by["deep"] + by["tall"]
        spread[split] = scatter(by["deep"])
        cells = "; ".join(f"{s} median {statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for s, v in by.items())
        rule = "split along K" if split else "whole tiles  "
        print(f"{rule}: {cells}; generic median {statistics.median(generic):.3f}; "
              f"deep points off their median: median {spread[split][0]:.1%}, largest {spread[split][1]:.0%}")
    return 0 if spread[True][1] < spread[False][1] else 1


if __name__ == "__main__":
    sys.exit(main())
