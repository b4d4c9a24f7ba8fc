"""The SM cycles of the depthwise-convolution kernels (planner/trace/depthwise.py MEASURED), derived from the grids
benchmarks/gpu_depthwise_grid.py measured on a GPU, and the model's error at every point of them.

    PYTHONPATH=$PWD python benchmarks/depthwise_fit.py [ATEN_GRID_JSON [CUDNN_GRID_JSON]]

Points of 0.15 ms and more count (below that a call's time is the host's issue, which CUDA events around it
include). ATen's kernels from the first grid, bf16 and fp32 pooled (they take the same time in both):
- forward and input gradient: per (filter side, stride), the median over the points of the cycles a warp of 32
  elements took (seconds × SMs × clock / warps); per tap of the generic kernels, the median of the 5×5 and 7×7
  figures over their taps;
- weight gradient: the median over the points of the measured cycles over the model's at one cycle an iteration
  (depthwise.py `hiding_warps` and `image_iterations` held: chosen on this grid, 16-32 warps and 1-2 iterations
  tried, for the smallest median and largest error).
cuDNN's kernels from the second grid, per setting (depthwise.py CUDNN: its bf16 and fp32 channels-last points, and
the fp16 NCHW points PyTorch gives cuDNN), part, filter side and stride: the median cycles a warp of 32 elements
(the forward's output elements, the gradients' input elements).
It prints the fit beside MEASURED and each kernel's median and largest |error| with the fit; exit 1 if they differ.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.specs import match_gpu  # noqa: E402
from planner.trace.depthwise import ATEN, MEASURED, PARTS, DepthwiseConv, DepthwiseCycles, cudnn_fp16  # noqa: E402

GRIDS = ROOT / "results/h200/diagnostics/depthwise-grid-2026-11-28"
ATEN_GRID, CUDNN_GRID = GRIDS / "depthwise-grid.json", GRIDS / "call2" / "depthwise-grid.json"
MIN_S = 0.15e-3
# the grid's settings each library setting is measured by, and which of their points it ran
SETTINGS: dict[str, tuple[str, Callable[[dict], bool]]] = {
    ATEN: ("bf16 fp32", lambda p: True),
    "nhwc-half": ("bf16-channels_last", lambda p: True),
    "nhwc-fp32": ("fp32-channels_last", lambda p: True),
    "nchw-fp16": ("fp16", lambda p: cudnn_fp16(p["n"], p["c"], p["h"], p["k"], p["k"], p["stride"], p["h"])),
}


def conv_of(p: dict, part: str, library: str) -> DepthwiseConv:
    return DepthwiseConv(p["n"], p["c"], p["h"] ** 2, p["out_side"] ** 2, p["k"], p["k"], p["stride"], (part,),
                         library)


def gpu_of(doc: dict) -> tuple[int, float]:
    spec = match_gpu(doc["environment"]["gpu"])
    assert spec and spec.boost_clock_mhz, f"{doc['environment']['gpu']}: no boost clock in the catalog"
    return doc["environment"]["sms"], spec.boost_clock_mhz * 1e6


def timed(doc: dict, library: str, part: str) -> list[dict]:
    settings, ran = SETTINGS[library]
    return [p for p in doc["points"] if p["setting"] in settings.split() and ran(p)
            and p[part]["median_s"] >= MIN_S]


def per_warp_table(doc: dict, library: str, parts: tuple[str, ...]) -> dict[tuple[str, int, int], float]:
    sms, clock = gpu_of(doc)
    by: dict[tuple[str, int, int], list[float]] = defaultdict(list)
    for part in parts:
        for p in timed(doc, library, part):
            warps = p["n"] * p["c"] * (p["out_side"] ** 2 if part == "forward" else p["h"] ** 2) / 32
            by[(part, p["k"], p["stride"])].append(p[part]["median_s"] * sms * clock / warps)
    return {k: float(round(statistics.median(v))) for k, v in sorted(by.items())}


def fit(aten_doc: dict, cudnn_doc: dict) -> DepthwiseCycles:
    aten = per_warp_table(aten_doc, ATEN, ("forward", "grad_input"))
    per_tap = {part: round(statistics.median(c / (k * k) for (p, k, _), c in aten.items() if p == part and k > 3), 1)
               for part in ("forward", "grad_input")}
    sms, clock = gpu_of(aten_doc)
    unit = replace(MEASURED, grad_weight=1.0)
    ratios = [p["grad_weight"]["median_s"] / conv_of(p, "grad_weight", ATEN).seconds(sms, clock, unit)
              for p in timed(aten_doc, ATEN, "grad_weight")]
    cudnn = {lib: per_warp_table(cudnn_doc, lib, PARTS) for lib in SETTINGS if lib != ATEN}
    return replace(MEASURED, aten=aten, per_tap=per_tap, grad_weight=float(round(statistics.median(ratios))),
                   cudnn=cudnn)


def errors(doc: dict, cycles: DepthwiseCycles, library: str, part: str) -> list[float]:
    sms, clock = gpu_of(doc)
    return [conv_of(p, part, library).seconds(sms, clock, cycles) / p[part]["median_s"] - 1
            for p in timed(doc, library, part)]


def main(argv: list[str]) -> int:
    aten_doc = json.loads(Path(argv[0] if argv else ATEN_GRID).read_text())
    cudnn_doc = json.loads(Path(argv[1] if len(argv) > 1 else CUDNN_GRID).read_text())
    cycles = fit(aten_doc, cudnn_doc)
    print(f"fit:       {cycles}\ncommitted: {MEASURED}")
    for library in SETTINGS:
        for part in PARTS:
            e = [abs(x) for x in errors(aten_doc if library == ATEN else cudnn_doc, cycles, library, part)]
            if e:
                print(f"{library:<10} {part:<12} {len(e):>3} points: median |error| "
                      f"{100 * statistics.median(e):5.1f} %, largest {100 * max(e):5.1f} %")
    return 0 if cycles == MEASURED else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
