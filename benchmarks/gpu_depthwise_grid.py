"""How a GPU's depthwise convolution (groups = channels) scales with its shape: the measurements behind
planner/trace/depthwise.py (issue 41: no reference workload runs a depthwise convolution, and MobileNetV3's and
EfficientNet-B0's held-out traces missed their backward 3x, timed as a dense convolution's bytes).

    OUT=/path python benchmarks/gpu_depthwise_grid.py            # a GPU: about a minute on an H200
    python benchmarks/gpu_depthwise_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

PyTorch runs a 2-D depthwise convolution on its own kernels (aten/src/ATen/native/cuda/DepthwiseConv2d.cu), not
cuDNN's, for every dtype but fp16 (`use_cudnn_depthwise`): `conv_depthwise2d_forward_kernel` and
`conv_depthwise2d_backward_kernel` (the input's gradient) give each output (input) element one thread that loops
over the k x k taps; `conv_depthwise2d_grad_weight_kernel` gives each weight element (C x k x k of them) ONE block
of min(32 N, 256) threads, a warp an image, that sums the products over N x OH x OW. Each of the three is timed
on its own (the forward; `aten.convolution_backward` asked for the input's gradient alone, then the weight's alone)
in five settings: bf16, fp16 and fp32 (TF32 on: it does not apply to these kernels) in NCHW, and bf16 and fp32
channels-last (which PyTorch always gives to cuDNN), over sweeps that pull the grad-weight kernel's block count
(C k^2), its threads (N) and its loop (N x OH x OW) apart:
  channels        k 3, 5, 7; N 64, 28 x 28 maps; C 16 ... 2048
  batch           k 3 and 5; C 256, 14 x 14; N 1 ... 512
  maps            k 3 and 5; C 128, N 64; maps 7^2 ... 112^2
  stride2         k 3 and 5, stride 2; C 64 ... 1024, N 64, 56 x 56 input maps
  models          the depthwise layers of MobileNetV3-Large, EfficientNet-B0 and ConvNeXt-T at batch 128

Method (/work/.library/device/METHOD.md): each point warmed up, then timed REPEATS times with CUDA events around
each call, median and quartiles kept; inputs that fit four times in L2 are rotated among several sets; random
inputs, never zeros. Per setting: one point checked against float64 (output and both gradients), the kernel names
and device times from torch.profiler at one point per kernel size and stride, and one point timed twice (the
spread). The sweep stops at --budget-s and lists what it skipped. Writes ONE file, $OUT/depthwise-grid.json (or
--out DIR), and prints a table of the channel sweep.
"""

from __future__ import annotations

import math
import runpy
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

# the batch-norm grid's timer, statistics, copy bandwidth and environment (one method for every grid), run from its
# file: benchmarks/ is scripts, not a package
_grid = runpy.run_path(str(Path(__file__).with_name("gpu_batchnorm_grid.py")))
Timer, _stats = _grid["Timer"], _grid["_stats"]
copy_bandwidth, environment = _grid["copy_bandwidth"], _grid["environment"]
profiled_kernels, sweep = _grid["profiled_kernels"], _grid["sweep"]

SETTINGS = {   # name: (dtype, memory format)
    "bf16": (torch.bfloat16, torch.contiguous_format), "fp16": (torch.float16, torch.contiguous_format),
    "fp32": (torch.float32, torch.contiguous_format), "bf16-channels_last": (torch.bfloat16, torch.channels_last),
    "fp32-channels_last": (torch.float32, torch.channels_last),
}
PARTS = ("forward", "grad_input", "grad_weight")
WARMUP, REPEATS = 3, 10
OUT_NAME = "depthwise-grid.json"
# (k, stride, input side, channels) of the depthwise layers of three held-out models (examples/): the sizes a user's
# network runs, beside the sweeps that pull the mechanism apart
MODEL_LAYERS = {
    "mobilenet-v3": [(3, 1, 112, 16), (3, 2, 112, 64), (3, 1, 56, 72), (5, 2, 56, 72), (5, 1, 28, 120),
                     (3, 2, 28, 240), (3, 1, 14, 200), (3, 1, 14, 184), (3, 1, 14, 480), (3, 1, 14, 672),
                     (5, 2, 14, 672), (5, 1, 7, 960)],
    "efficientnet-b0": [(3, 1, 112, 32), (3, 2, 112, 96), (3, 1, 56, 144), (5, 2, 56, 144), (5, 1, 28, 240),
                        (3, 2, 28, 240), (3, 1, 14, 480), (5, 1, 14, 480), (5, 1, 14, 672), (5, 2, 14, 672),
                        (5, 1, 7, 1152), (3, 1, 7, 1152)],
    "convnext-tiny": [(7, 1, 56, 96), (7, 1, 28, 192), (7, 1, 14, 384), (7, 1, 7, 768)],
}


def grid(small: bool) -> list[dict]:
    """The points (sweep, N, C, H (= W), k, stride) of every sweep; --small: the same sweeps at CPU sizes."""
    points: list[tuple] = []
    if small:
        points += [("channels", 2, c, 8, k, 1) for k in (3, 5) for c in (4, 16)]
        points += [("batch", n, 8, 6, 3, 1) for n in (1, 3)]
        points += [("maps", 2, 8, s, 3, 1) for s in (5, 9)]
        points += [("stride2", 2, 8, 8, 3, 2)]
        points += [("models", 2, 8, 7, 7, 1)]
    else:
        points += [("channels", 64, c, 28, k, 1) for k in (3, 5, 7) for c in (16, 32, 64, 128, 256, 512, 1024, 2048)]
        points += [("batch", n, 256, 14, k, 1) for k in (3, 5) for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)]
        points += [("maps", 64, 128, s, k, 1) for k in (3, 5) for s in (7, 14, 28, 56, 112)]
        points += [("stride2", 64, c, 56, k, 2) for k in (3, 5) for c in (64, 128, 256, 512, 1024)]
        points += [("models", 128, c, s, k, st) for layers in MODEL_LAYERS.values() for k, st, s, c in layers]
    return [dict(zip(("sweep", "n", "c", "h", "k", "stride"), p, strict=True)) for p in points]


def inputs(setting: str, p: dict, device: torch.device, sets: int) -> list[tuple]:
    """`sets` random input sets: (x, weight, grad of the output)."""
    dtype, fmt = SETTINGS[setting]
    out = []
    for _ in range(sets):
        x = torch.randn(p["n"], p["c"], p["h"], p["h"], device=device, dtype=dtype).to(memory_format=fmt)
        w = (torch.randn(p["c"], 1, p["k"], p["k"], device=device, dtype=dtype) / p["k"]).to(memory_format=fmt)
        y = conv(x, w, p)
        out.append((x, w, torch.randn_like(y)))   # randn_like keeps y's layout
    return out


def conv(x: torch.Tensor, w: torch.Tensor, p: dict) -> torch.Tensor:
    return F.conv2d(x, w, None, p["stride"], p["k"] // 2, 1, p["c"])


def part(name: str, data: tuple, p: dict) -> torch.Tensor:
    """One of the three kernels' work: the forward, or the backward asked for one gradient alone."""
    x, w, g = data
    if name == "forward":
        return conv(x, w, p)
    mask = [name == "grad_input", name == "grad_weight", False]
    out = torch.ops.aten.convolution_backward(g, x, w, None, [p["stride"]] * 2, [p["k"] // 2] * 2, [1, 1], False,
                                              [0, 0], p["c"], mask)
    return out[0] if name == "grad_input" else out[1]


def time_point(setting: str, p: dict, device: torch.device, timer: Timer) -> dict:
    out_side = (p["h"] + 2 * (p["k"] // 2) - p["k"]) // p["stride"] + 1
    elements = p["n"] * p["c"] * p["h"] * p["h"]
    nbytes = elements * SETTINGS[setting][0].itemsize
    l2 = torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda" else 32 << 20
    sets = inputs(setting, p, device, max(1, min(4, math.ceil(4 * l2 / nbytes))))
    row = {**p, "setting": setting, "out_side": out_side, "input_elements": elements,
           "output_elements": p["n"] * p["c"] * out_side * out_side, "input_sets": len(sets)}
    for name in PARTS:
        for i in range(WARMUP):
            part(name, sets[i % len(sets)], p)
        row[name] = _stats([timer(lambda i=i, n=name: part(n, sets[i % len(sets)], p)) for i in range(REPEATS)])
    return row


def check(setting: str, device: torch.device) -> dict:
    """‖out − ref‖ / ‖ref‖ of the output and both gradients against float64, on fresh random inputs."""
    p = {"n": 3, "c": 8, "h": 11, "k": 5, "stride": 2}
    data = inputs(setting, p, device, 1)[0]
    x64, w64, g64 = (t.detach().double() for t in data)
    x64.requires_grad_(True)
    w64.requires_grad_(True)
    y64 = conv(x64, w64, p)
    gx64, gw64 = torch.autograd.grad(y64, (x64, w64), g64)

    def rel(a: torch.Tensor, b: torch.Tensor) -> float:
        return float((a.detach().double() - b.detach()).norm() / b.detach().norm())
    errors = {f"{n}_rel_error": rel(part(n, data, p), ref) for n, ref in zip(PARTS, (y64, gx64, gw64), strict=True)}
    tolerance = 1e-4 if setting.startswith("fp32") else 3e-2
    return {**errors, "ok": all(math.isfinite(v) and v < tolerance for v in errors.values())}


def kernels(setting: str, p: dict, device: torch.device) -> dict[str, list[dict]]:
    """Per part, the kernels it launches and their device time, from torch.profiler."""
    data = inputs(setting, p, device, 1)[0]
    out = {}
    for name in PARTS:
        part(name, data, p)
        out[name] = profiled_kernels(lambda n=name: part(n, data, p), device)
    return out


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS,
           "copy_bytes_per_s": copy_bandwidth(device, timer), "checks": {}, "kernels": {}, "repeat_spread": {},
           "points": [], "skipped": []}
    for setting in SETTINGS:
        doc["checks"][setting] = check(setting, device)
        shapes = {(p["k"], p["stride"]) for p in grid(small)} if not small else {(3, 1)}   # the CPU: one, quickly
        doc["kernels"][setting] = {f"k{k}s{s}": kernels(setting, {"n": 2 if small else 64, "c": 8 if small else 256,
                                                                 "h": 8 if small else 28, "k": k, "stride": s},
                                                        device) for k, s in sorted(shapes)}
        spread = {"n": 2 if small else 64, "c": 8 if small else 256, "h": 8 if small else 28, "k": 3, "stride": 1}
        doc["repeat_spread"][setting] = [{n: time_point(setting, spread, device, timer)[n] for n in PARTS}
                                         for _ in range(2)]   # the same point timed twice
    sweep(doc, grid(small), SETTINGS, "setting", lambda s, p: time_point(s, p, device, timer),
          lambda p: f"{p['sweep']:<9} N {p['n']:>4} C {p['c']:>5} {p['h']}² k {p['k']} s {p['stride']}", started,
          budget_s)
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    """The channel sweep at k = 3: forward / input gradient / weight gradient milliseconds per setting."""
    rows = [r for r in doc["points"] if r["sweep"] == "channels" and r["k"] == 3]
    lines = ["channels (k 3): forward / grad_input / grad_weight ms",
             "C      " + "".join(f"{s:>30}" for s in SETTINGS)]
    for c in sorted({r["c"] for r in rows}):
        cells = []
        for s in SETTINGS:
            r = next((r for r in rows if r["c"] == c and r["setting"] == s), None)
            cells.append(" / ".join(f"{r[n]['median_s'] * 1e3:.3f}" for n in PARTS) if r else "–")
        lines.append(f"{c:<7}" + "".join(f"{x:>30}" for x in cells))
    checks = ", ".join(f"{s} {'ok' if c['ok'] else 'FAILED'}" for s, c in doc["checks"].items())
    lines.append(f"float64 checks: {checks}; {len(doc['skipped'])} points skipped; {doc['elapsed_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 150.0, run, table, tf32=True)


if __name__ == "__main__":
    sys.exit(main())
