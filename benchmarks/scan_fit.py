"""The outer-dimension scan's SM cycles a step (planner/trace/scan.py CYCLES_FEW, CYCLES_MANY), derived from the grid
benchmarks/gpu_scan_grid.py measured on a GPU: each `scan_outer` point's time over its scanned length, at the GPU's
boost clock (its catalog entry), the median over the points of fewer than MANY_COLUMNS columns and over the others
(a single column is a 1-D scan, ATen's innermost kernel: left out). Prints the fit beside the constants and each
point's error under them; exit 1 if they differ.

    PYTHONPATH=$PWD python benchmarks/scan_fit.py [GRID_JSON]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.specs import match_gpu  # noqa: E402
from planner.trace.scan import CYCLES_FEW, CYCLES_MANY, MANY_COLUMNS, scan_cycles  # noqa: E402

GRID = ROOT / "results/h200/diagnostics/scan-grid-2026-11-28/scan-grid.json"


def cycles(doc: dict) -> dict[bool, list[tuple[dict, float]]]:
    """Per regime (many columns or not), each outer-scan point and its SM cycles a step."""
    spec = match_gpu(doc["environment"]["gpu"])
    clock = spec.boost_clock_mhz * 1e6  # type: ignore[union-attr]
    out: dict[bool, list[tuple[dict, float]]] = {False: [], True: []}
    for p in doc["points"]:
        if p["sweep"] == "scan_outer" and p["c"] > 1:
            out[p["c"] >= MANY_COLUMNS].append((p, p["time"]["median_s"] / p["n"] * clock))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    doc = json.loads(Path(args[0] if args else GRID).read_text())
    by = cycles(doc)
    fit = {many: round(statistics.median(c for _, c in points) / 5) * 5 for many, points in by.items()}
    print(f"{doc['environment']['gpu']}: fewer than {MANY_COLUMNS} columns {fit[False]:.0f} cycles a step "
          f"(CYCLES_FEW {CYCLES_FEW:.0f}), more {fit[True]:.0f} (CYCLES_MANY {CYCLES_MANY:.0f})")
    for many, points in by.items():
        errors = [scan_cycles(p["c"]) / c - 1 for p, c in points]
        print(f"  {'many' if many else 'few '} columns: {len(points)} points, the constant against each: median "
              f"{statistics.median(errors):+.0%}, {min(errors):+.0%} .. {max(errors):+.0%}")
    return 0 if (fit[False], fit[True]) == (CYCLES_FEW, CYCLES_MANY) else 1


if __name__ == "__main__":
    sys.exit(main())
