"""How fast a GPU's dense convolutions run in plain fp32 (TF32 off) and in TF32, per layout, kernel size and
direction: the measurements behind the fp32 convolution's scale in planner/trace (issue 41: no profile ran plain
fp32, and one slowdown for every fp32 convolution left ResNet-50's channels-last steps -15..-23 % where conv-rollout's
NCHW 3x3 steps were +54..+59 %).

    OUT=/path python benchmarks/gpu_conv_fp32_grid.py            # a GPU: about two minutes on an H200
    python benchmarks/gpu_conv_fp32_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

cuDNN picks each convolution's algorithm by its heuristics (cudnn.benchmark off: what the collectors' conv
workloads time in fp32), and in fp32 the heuristics may pick a Winograd or FFT kernel for a 3x3 stride-1
convolution, which does fewer multiplications than the direct product the trace counts. Each of the three
directions is timed on its own (the forward; `aten.convolution_backward` asked for the input's gradient alone, then
the weight's alone) in four settings (fp32 and TF32, NCHW and channels-last) over generic sweeps, whose points are
what a model is derived from, and the convolution layers of three reference workloads (checks, never fitted):
  k1          1x1, stride 1: N 64, C_in = C_out 64 ... 1024, maps 14 ... 56
  k3          3x3, stride 1: N 64, C 64 ... 512, maps 14 ... 56
  k3s2        3x3, stride 2: N 64, C 128 and 256, input maps 28 and 56
  models      ResNet-50's, SSD300's and conv-rollout's layers at their batch

Method (/work/.library/device/METHOD.md): each point warmed up, then timed REPEATS times with CUDA events around
each call, median and quartiles kept; inputs that fit four times in L2 are rotated among several sets; random
inputs, never zeros. Per setting one point is checked against float64 and timed twice (the spread); every point's
kernels are named by torch.profiler (a Winograd, FFT or implicit-GEMM kernel). The sweep stops at --budget-s and
lists what it skipped. Writes ONE file, $OUT/conv-fp32-grid.json (or --out DIR), and prints a table of the 3x3 sweep.
"""

from __future__ import annotations

import math
import runpy
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

# the batch-norm grid's timer, statistics, copy bandwidth, environment and command line (one method for every grid)
_grid = runpy.run_path(str(Path(__file__).with_name("gpu_batchnorm_grid.py")))
Timer, _stats = _grid["Timer"], _grid["_stats"]
copy_bandwidth, environment = _grid["copy_bandwidth"], _grid["environment"]
profiled_kernels, sweep = _grid["profiled_kernels"], _grid["sweep"]

SETTINGS = {   # name: (TF32 on, memory format)
    "fp32": (False, torch.contiguous_format), "fp32-channels_last": (False, torch.channels_last),
    "tf32": (True, torch.contiguous_format), "tf32-channels_last": (True, torch.channels_last),
}
PARTS = ("forward", "grad_input", "grad_weight")
WARMUP, REPEATS = 2, 7
OUT_NAME = "conv-fp32-grid.json"
# (N, C_in, C_out, input side, k, stride) of the reference workloads' convolutions (collectors/workloads): checks
MODEL_LAYERS = {
    "resnet50": [(64, 3, 64, 224, 7, 2), (64, 64, 256, 56, 1, 1), (64, 64, 64, 56, 3, 1), (64, 256, 64, 56, 1, 1),
                 (64, 128, 128, 28, 3, 1), (64, 128, 512, 28, 1, 1), (64, 512, 128, 28, 1, 1),
                 (64, 256, 256, 14, 3, 1), (64, 1024, 256, 14, 1, 1), (64, 256, 1024, 14, 1, 1),
                 (64, 512, 512, 7, 3, 1), (64, 2048, 512, 7, 1, 1), (64, 128, 128, 56, 3, 2)],
    "ssd300": [(32, 3, 64, 300, 7, 2), (32, 64, 64, 75, 3, 1), (32, 256, 256, 38, 3, 1), (32, 1024, 256, 38, 1, 1),
               (32, 1024, 324, 38, 3, 1), (32, 512, 486, 19, 3, 1), (32, 128, 128, 38, 3, 1)],
    "conv-rollout": [(10, 64, 64, 128, 3, 1), (10, 3, 64, 128, 3, 1), (10, 64, 3, 128, 1, 1)],
}


def grid(small: bool) -> list[dict]:
    """The points (sweep, model, N, C_in, C_out, side, k, stride); --small: one of each sweep at CPU sizes."""
    points: list[tuple] = []
    if small:
        points += [("k1", "", 2, 8, 8, 6, 1, 1), ("k3", "", 2, 8, 8, 6, 3, 1), ("k3s2", "", 2, 8, 8, 8, 3, 2),
                   ("models", "conv-rollout", 2, 4, 8, 8, 3, 1)]
    else:
        points += [("k1", "", 64, c, c, s, 1, 1) for c in (64, 256, 1024) for s in (14, 28, 56)]
        points += [("k3", "", 64, c, c, s, 3, 1) for c in (64, 128, 256, 512) for s in (14, 28, 56)]
        points += [("k3s2", "", 64, c, c, s, 3, 2) for c in (128, 256) for s in (28, 56)]
        points += [("models", m, *layer) for m, layers in MODEL_LAYERS.items() for layer in layers]
    keys = ("sweep", "model", "n", "c_in", "c_out", "h", "k", "stride")
    return [dict(zip(keys, p, strict=True)) for p in points]


def conv(x: torch.Tensor, w: torch.Tensor, p: dict) -> torch.Tensor:
    return F.conv2d(x, w, None, p["stride"], p["k"] // 2)


def inputs(setting: str, p: dict, device: torch.device, sets: int) -> list[tuple]:
    """`sets` random input sets: (x, weight, grad of the output), in the setting's layout."""
    fmt = SETTINGS[setting][1]
    out = []
    for _ in range(sets):
        x = torch.randn(p["n"], p["c_in"], p["h"], p["h"], device=device).to(memory_format=fmt)
        w = (torch.randn(p["c_out"], p["c_in"], p["k"], p["k"], device=device) / (p["k"] * p["c_in"] ** 0.5)
             ).to(memory_format=fmt)
        out.append((x, w, torch.randn_like(conv(x, w, p))))   # randn_like keeps the output's layout
    return out


def part(name: str, data: tuple, p: dict) -> torch.Tensor:
    """One direction's work: the forward, or the backward asked for one gradient alone."""
    x, w, g = data
    if name == "forward":
        return conv(x, w, p)
    mask = [name == "grad_input", name == "grad_weight", False]
    out = torch.ops.aten.convolution_backward(g, x, w, None, [p["stride"]] * 2, [p["k"] // 2] * 2, [1, 1], False,
                                              [0, 0], 1, mask)
    return out[0] if name == "grad_input" else out[1]


def flops(p: dict) -> float:
    """A direction's multiply-adds × 2 as the trace counts them (the direct product)."""
    side = (p["h"] + 2 * (p["k"] // 2) - p["k"]) // p["stride"] + 1
    return 2.0 * p["n"] * p["c_out"] * side * side * p["c_in"] * p["k"] * p["k"]


def kernel_names(name: str, data: tuple, p: dict, device: torch.device) -> list[dict]:
    """The kernels one call of a direction launches and their device time, from torch.profiler."""
    return profiled_kernels(lambda: part(name, data, p), device)


def time_point(setting: str, p: dict, device: torch.device, timer: Timer, names: bool = True) -> dict:
    torch.backends.cudnn.allow_tf32 = SETTINGS[setting][0]
    nbytes = p["n"] * p["c_in"] * p["h"] * p["h"] * 4
    l2 = torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda" else 32 << 20
    sets = inputs(setting, p, device, max(1, min(4, math.ceil(4 * l2 / nbytes))))
    row = {**p, "setting": setting, "flops": flops(p), "input_sets": len(sets)}
    for name in PARTS:
        for i in range(WARMUP):
            part(name, sets[i % len(sets)], p)
        row[name] = _stats([timer(lambda i=i, n=name: part(n, sets[i % len(sets)], p)) for i in range(REPEATS)])
        if names:
            row[f"{name}_kernels"] = kernel_names(name, sets[0], p, device)
    return row


def check(setting: str, device: torch.device) -> dict:
    """‖out − ref‖ / ‖ref‖ of the output and both gradients against float64, on fresh random inputs."""
    torch.backends.cudnn.allow_tf32 = SETTINGS[setting][0]
    p = {"n": 3, "c_in": 8, "c_out": 16, "h": 11, "k": 3, "stride": 1}
    data = inputs(setting, p, device, 1)[0]
    x64, w64, g64 = (t.detach().double().requires_grad_(True) for t in data)
    y64 = conv(x64, w64, p)
    gx64, gw64 = torch.autograd.grad(y64, (x64, w64), g64.detach())

    def rel(a: torch.Tensor, b: torch.Tensor) -> float:
        return float((a.detach().double() - b.detach()).norm() / b.detach().norm())
    errors = {f"{n}_rel_error": rel(part(n, data, p), ref) for n, ref in zip(PARTS, (y64, gx64, gw64), strict=True)}
    tolerance = 1e-4 if setting.startswith("fp32") else 1e-2
    return {**errors, "ok": all(math.isfinite(v) and v < tolerance for v in errors.values())}


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    torch.backends.cudnn.benchmark = False
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS,
           "cudnn_benchmark": False, "copy_bytes_per_s": copy_bandwidth(device, timer), "checks": {},
           "repeat_spread": {}, "points": [], "skipped": []}
    spread = grid(small)[1]
    for setting in SETTINGS:
        doc["checks"][setting] = check(setting, device)
        doc["repeat_spread"][setting] = [{n: time_point(setting, spread, device, timer, False)[n] for n in PARTS}
                                         for _ in range(2)]   # the same point timed twice
    sweep(doc, grid(small), SETTINGS, "setting", lambda s, p: time_point(s, p, device, timer),
          lambda p: f"{p['sweep']:<7} {p['model']:<13} N {p['n']:>3} C {p['c_in']:>4}->{p['c_out']:<4} {p['h']}² "
                    f"k {p['k']} s {p['stride']}", started, budget_s)
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    """Per point of the generic sweeps, each setting's TFLOP/s (the direct product's FLOPs) forward / input
    gradient / weight gradient."""
    lines = ["TFLOP/s (direct product) forward / grad_input / grad_weight",
             f"{'point':<22}" + "".join(f"{s:>22}" for s in SETTINGS)]
    rows = [r for r in doc["points"] if r["sweep"] != "models"]
    for key in dict.fromkeys((r["sweep"], r["c_in"], r["h"]) for r in rows):
        cells = []
        for s in SETTINGS:
            r = next((r for r in rows if (r["sweep"], r["c_in"], r["h"]) == key and r["setting"] == s), None)
            cells.append("/".join(f"{r['flops'] / r[n]['median_s'] / 1e12:.1f}" for n in PARTS) if r else "–")
        lines.append(f"{key[0]:<5} C {key[1]:<5} {key[2]:>3}²    " + "".join(f"{c:>22}" for c in cells))
    checks = ", ".join(f"{s} {'ok' if c['ok'] else 'FAILED'}" for s, c in doc["checks"].items())
    lines.append(f"float64 checks: {checks}; {len(doc['skipped'])} points skipped; {doc['elapsed_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 330.0, run, table)


if __name__ == "__main__":
    sys.exit(main())
