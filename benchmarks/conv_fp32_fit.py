"""Plain fp32 convolutions' slowdowns over their roofline time (planner/trace/efficiency.py FP32_CONV), derived from
the grid benchmarks/gpu_conv_fp32_grid.py measured on a GPU, and the error of each layer of the reference workloads
it also timed (checks, never fitted).

    PYTHONPATH=$PWD python benchmarks/conv_fp32_fit.py [GRID_JSON]

Each point's forward and backward (the input's and the weight's gradients summed: the trace records one
`convolution_backward` asking for both) is traced on the meta device as a workload's convolution is
(collectors/trace/recorder.py) and timed by the model at slowdown 1 (planner/trace/training.py group_of: the
product's roofline time, its fill of the GPU's tiles, a channels-last one's transposes); the measured time over it
is the point's slowdown. Per class (`transform`: a 3x3 stride-1 convolution, which cuDNN's heuristics run as an FFT
or Winograd transform; `conv`: the others, implicit GEMMs), the median over the generic sweeps' points of both
layouts and both directions. It prints the fit beside FP32_CONV and the per-class spread and each model layer's
error; exit 1 if they differ.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from collectors.trace.memory import LiveMemory  # noqa: E402
from collectors.trace.recorder import TraceRecorder  # noqa: E402
from gpuplan_schema.payloads import TracedOp  # noqa: E402
from gpuplan_schema.results import load_machine  # noqa: E402
from planner.trace.efficiency import FP32_CONV, Fp32Scale, Group, Shape  # noqa: E402
from planner.trace.training import group_of, roofs_of  # noqa: E402

GRID = ROOT / "results/h200/diagnostics/conv-fp32-grid-2026-11-28/conv-fp32-grid.json"
MACHINE = ROOT / "results/h200"   # the GPU the grid ran on: its measured roofs
SETTINGS = ("fp32", "fp32-channels_last")


def traced(p: dict, channels_last: bool) -> tuple[TracedOp, TracedOp]:
    """The point's forward and backward as the trace records them."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    recorder = TraceRecorder(LiveMemory())
    with recorder:
        x = torch.empty(p["n"], p["c_in"], p["h"], p["h"], device="meta").to(memory_format=fmt)
        w = torch.empty(p["c_out"], p["c_in"], p["k"], p["k"], device="meta").to(memory_format=fmt)
        y = torch.nn.functional.conv2d(x, w, None, p["stride"], p["k"] // 2)
        torch.ops.aten.convolution_backward(torch.empty_like(y), x, w, None, [p["stride"]] * 2, [p["k"] // 2] * 2,
                                            [1, 1], False, [0, 0], 1, [True, True, False])
    ops = [c for c in recorder.calls if c.name in ("aten::convolution", "aten::convolution_backward")]
    return tuple(TracedOp(c.name, c.phase, 1, float(c.read_bytes), float(c.written_bytes), c.launches, c.dtype,
                          [list(s) for s in c.shapes], c.flops, c.variant) for c in ops)  # type: ignore[return-value]


def slowdowns(doc: dict) -> list[tuple[dict, str, Group, float]]:
    """(point, setting, its traced group, measured seconds over the model's at slowdown 1) of every direction."""
    roofs = roofs_of(load_machine(MACHINE).ceilings)  # type: ignore[arg-type]
    out = []
    for p in doc["points"]:
        if p["setting"] not in SETTINGS:
            continue
        nhwc = p["setting"].endswith("channels_last")
        forward, backward = traced(p, nhwc)
        for op, measured in ((forward, p["forward"]["median_s"]),
                             (backward, p["grad_input"]["median_s"] + p["grad_weight"]["median_s"])):
            g = group_of(op, roofs, "fp32", nhwc)
            out.append((p, p["setting"], g, measured / g.roof_s(roofs.sms, Shape().unaligned)))
    return out


def fit(rows: list[tuple[dict, str, Group, float]]) -> Fp32Scale:
    by: dict[bool, list[float]] = defaultdict(list)
    for p, _, g, s in rows:
        if p["sweep"] != "models":
            by[g.transform].append(s)
    return Fp32Scale(1.0, round(statistics.median(by[False]), 2), round(statistics.median(by[True]), 2))


def main(argv: list[str]) -> int:
    doc = json.loads(Path(argv[0] if argv else GRID).read_text())
    rows = slowdowns(doc)
    scale = fit(rows)
    print(f"fit:       conv {scale.conv}, transform {scale.transform}\n"
          f"committed: conv {FP32_CONV.conv}, transform {FP32_CONV.transform}")
    for transform in (False, True):
        mine = sorted(s for p, _, g, s in rows if p["sweep"] != "models" and g.transform == transform)
        q = statistics.quantiles(mine, n=4)
        print(f"{'transform' if transform else 'conv':<10} {len(mine):>3} directions: slowdown quartiles "
              f"{q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}, range {mine[0]:.2f}-{mine[-1]:.2f}")
    errors = defaultdict(list)
    for p, setting, g, s in rows:
        if p["sweep"] == "models":
            errors[p["model"]].append((p, setting, (scale.transform if g.transform else scale.conv) / s - 1))
    for model, errs in errors.items():
        e = [abs(x) for *_, x in errs]
        print(f"{model:<13} {len(e):>3} directions: median |error| {100 * statistics.median(e):5.1f} %, "
              f"largest {100 * max(e):5.1f} %")
    return 0 if (scale.conv, scale.transform) == (FP32_CONV.conv, FP32_CONV.transform) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
