"""How the element rate of a batched product with an odd side falls as the side grows (planner/trace/gemm.py
SIDE_POWER): fitted on the H200's tiny-product grid (benchmarks/gpu_tiny_bmm_grid.py,
results/h200/diagnostics/tiny-bmm-grid-2026-11-28: 1,048,576 products over 64 with odd sides 7 ... 33, bf16, fp16,
fp32, each product's three directions) and checked, never fitted, on Swin's 49 x 49 x 32 window products
(benchmarks/gpu_scan_grid.py, results/h200/diagnostics/scan-grid-2026-11-28).

    PYTHONPATH=$PWD python benchmarks/tiny_bmm_fit.py

Each point's SM cycles an element it reads and writes (its time × SMs × boost clock ÷ its elements) against the model
UNALIGNED_CYCLES × min(1, (SIDE_REF ÷ side) ** power), side the square root of the product's output (m × n); the
power the grid's least squares of log(measured ÷ model) over its points of side SIDE_REF and more, on a grid of 0.05.
Prints the fit beside SIDE_POWER and the error on each set; exit 1 if they differ.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.specs import match_gpu  # noqa: E402
from planner.trace.gemm import SIDE_POWER, SIDE_REF, UNALIGNED_CYCLES  # noqa: E402

TINY = ROOT / "results/h200/diagnostics/tiny-bmm-grid-2026-11-28/tiny-bmm-grid.json"
SWIN = ROOT / "results/h200/diagnostics/scan-grid-2026-11-28/scan-grid.json"
PARTS = ("forward", "grad_a", "grad_b")


def _cycles_scale(doc: dict) -> float:
    spec = match_gpu(doc["environment"]["gpu"])
    return doc["environment"]["sms"] * spec.boost_clock_mhz * 1e6  # type: ignore[union-attr]


def tiny_points() -> list[tuple[float, float]]:
    """(side, measured cycles an element) of every odd-sided product direction of the tiny grid's side sweep."""
    doc = json.loads(TINY.read_text())
    scale = _cycles_scale(doc)
    return [(p["side"], p[part]["median_s"] * scale / p["elements_per_part"]) for p in doc["points"]
            if p["sweep"] == "side" and p["side"] % 2 for part in PARTS]


def swin_points() -> list[tuple[float, float]]:
    doc = json.loads(SWIN.read_text())
    scale = _cycles_scale(doc)
    return [(49.0, p["time"]["median_s"] * scale / (p["g"] * (2 * 49 * 32 + 49 * 49))) for p in doc["points"]
            if p["sweep"] == "bmm49"]


def model(side: float, power: float) -> float:
    return UNALIGNED_CYCLES * min(1.0, (SIDE_REF / side) ** power)


def log_error(points: list[tuple[float, float]], power: float) -> float:
    return sum(math.log(measured / model(side, power)) ** 2 for side, measured in points)


def main(argv: list[str] | None = None) -> int:
    tiny = tiny_points()
    fitted = [(s, c) for s, c in tiny if s >= SIDE_REF]
    power = min((i / 20 for i in range(41)), key=lambda p: log_error(fitted, p))
    print(f"side power {power:.2f} (SIDE_POWER {SIDE_POWER}), from {len(fitted)} points of odd sides >= {SIDE_REF}")
    for name, points in (("tiny grid, odd sides", tiny), ("Swin 49 x 49 x 32 (check)", swin_points())):
        for p in (0.0, SIDE_POWER):
            errors = [model(s, p) / c - 1 for s, c in points]
            print(f"  {name}, power {p}: model / measured − 1 median {statistics.median(errors):+.0%}, "
                  f"{min(errors):+.0%} .. {max(errors):+.0%}")
    return 0 if round(power, 2) == SIDE_POWER else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
