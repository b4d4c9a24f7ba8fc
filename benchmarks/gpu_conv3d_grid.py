"""How long cuDNN's 3-D convolutions take on a GPU against the same products run as 2-D convolutions, per shape: the
measurements behind the trace's model of a video network, whose 3-D convolutions no reference profile ran (issue
41, examples/video_r2plus1d.py: 44 % of its predicted step, timed with the 2-D convolutions' learned figures and
counted unknown: planner/trace/kinds.py VOLUMETRIC).

    OUT=/path python benchmarks/gpu_conv3d_grid.py            # a GPU: about a minute on an H200
    python benchmarks/gpu_conv3d_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

Points: R(2+1)D-18's factored convolutions at 16 clips of 16 × 112 × 112 (bf16, bias-free): the stem's 1×7×7
stride-(1, 2, 2) 3 -> 45 and 3×1×1 45 -> 64, and each stage's 1×3×3 cin -> M and 3×1×1 M -> cout (M as
torchvision's midplanes), at the stage's map (16 × 56 × 56 … 2 × 7 × 7). Each timed forward (`F.conv3d`) and
backward (`aten.convolution_backward`, the input's and the weight's gradients) with CUDA events, REPEATS after
WARMUP, median and quartiles, its kernels named by torch.profiler, in four settings: NCDHW as the example runs it
(cuDNN's heuristics, cudnn.benchmark off: the collector's sweeps), NCDHW autotuned (its main-batch trials),
channels_last_3d, and the same product as a 2-D convolution (a 1×k×k kernel over (N·T, C, H, W), a k×1×1 one as
(k, 1) over (N, C, T, H·W)): what the trace's learned figures are of.
Writes ONE file, $OUT/conv3d-grid.json (or --out DIR), and prints each point's time and TFLOP/s.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

_grid = runpy.run_path(str(Path(__file__).with_name("gpu_batchnorm_grid.py")))
Timer, _stats, environment = _grid["Timer"], _grid["_stats"], _grid["environment"]
profiled_kernels, sweep, copy_bandwidth = _grid["profiled_kernels"], _grid["sweep"], _grid["copy_bandwidth"]

SETTINGS = ("ncdhw", "ncdhw/tuned", "channels_last_3d", "as_2d")
WARMUP, REPEATS = 2, 7
OUT_NAME = "conv3d-grid.json"
CLIPS = 16


def midplanes(cin: int, cout: int) -> int:
    return (cin * cout * 27) // (cin * 9 + 3 * cout)


def grid(small: bool) -> list[dict]:
    """(name, N, Cin, Cout, T, H, W of the input, kernel, stride) of each convolution."""
    if small:
        return [{"name": "spatial", "n": 2, "cin": 4, "cout": 6, "t": 4, "h": 8, "w": 8, "k": [1, 3, 3],
                 "s": [1, 1, 1]},
                {"name": "temporal", "n": 2, "cin": 6, "cout": 4, "t": 4, "h": 8, "w": 8, "k": [3, 1, 1],
                 "s": [1, 1, 1]}]
    points = [{"name": "stem_spatial", "n": CLIPS, "cin": 3, "cout": 45, "t": 16, "h": 112, "w": 112, "k": [1, 7, 7],
               "s": [1, 2, 2]},
              {"name": "stem_temporal", "n": CLIPS, "cin": 45, "cout": 64, "t": 16, "h": 56, "w": 56, "k": [3, 1, 1],
               "s": [1, 1, 1]}]
    for width, (t, hw) in zip((64, 128, 256, 512), ((16, 56), (8, 28), (4, 14), (2, 7)), strict=True):
        mid = midplanes(width, width)
        points += [{"name": f"{width}_spatial", "n": CLIPS, "cin": width, "cout": mid, "t": t, "h": hw, "w": hw,
                    "k": [1, 3, 3], "s": [1, 1, 1]},
                   {"name": f"{width}_temporal", "n": CLIPS, "cin": mid, "cout": width, "t": t, "h": hw, "w": hw,
                    "k": [3, 1, 1], "s": [1, 1, 1]}]
    return points


def flops(p: dict) -> float:
    """The forward's FLOPs (2 a multiply-add) over the output positions."""
    out = [(size - 1) // s + 1 for size, s in zip((p["t"], p["h"], p["w"]), p["s"], strict=True)]
    return 2.0 * p["n"] * p["cout"] * p["cin"] * out[0] * out[1] * out[2] * p["k"][0] * p["k"][1] * p["k"][2]


def layout(setting: str, p: dict, x: torch.Tensor, w: torch.Tensor) -> tuple:
    """(input, weight, stride, padding) of an NCDHW input and weight in this setting's layout and dimensionality."""
    k, s = p["k"], p["s"]
    pad = [size // 2 for size in k]
    if setting == "channels_last_3d":
        return x.to(memory_format=torch.channels_last_3d), w.to(memory_format=torch.channels_last_3d), s, pad
    if setting != "as_2d":
        return x, w, s, pad
    if k[0] == 1:   # spatial: the frames into the batch
        return x.transpose(1, 2).reshape(-1, p["cin"], p["h"], p["w"]), w[:, :, 0], s[1:], pad[1:]
    return x.reshape(p["n"], p["cin"], p["t"], -1), w[..., 0], [s[0], 1], [pad[0], 0]   # temporal: (k, 1) over H·W


def from_2d(y: torch.Tensor, p: dict) -> torch.Tensor:
    """An as_2d result back in (N, C, T, H, W)."""
    if p["k"][0] == 1:
        return y.view(p["n"], -1, *y.shape[1:]).transpose(1, 2)
    return y.view(*y.shape[:3], p["h"], p["w"])


def convolve(x: torch.Tensor, w: torch.Tensor, stride: list[int], pad: list[int]) -> torch.Tensor:
    return (F.conv3d if x.dim() == 5 else F.conv2d)(x, w, None, stride, pad)


def operations(setting: str, p: dict, device: torch.device):  # noqa: ANN201 - (forward, backward) callables
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    x = torch.randn(p["n"], p["cin"], p["t"], p["h"], p["w"], device=device, dtype=dtype)
    w = torch.randn(p["cout"], p["cin"], *p["k"], device=device, dtype=dtype) * 0.05
    x, w, stride, pad = layout(setting, p, x, w)
    grad = torch.randn_like(convolve(x, w, stride, pad))

    def backward() -> tuple:
        return torch.ops.aten.convolution_backward(grad, x, w, None, stride, pad, [1] * len(stride), False,
                                                   [0] * len(stride), 1, [True, True, False])
    return (lambda: convolve(x, w, stride, pad)), backward


def check(setting: str, device: torch.device) -> dict:
    """Each setting's forward of the small points equals the NCDHW 3-D convolution's, in float64."""
    ok = True
    for p in grid(True):
        x = torch.randn(p["n"], p["cin"], p["t"], p["h"], p["w"], device=device, dtype=torch.float64)
        w = torch.randn(p["cout"], p["cin"], *p["k"], device=device, dtype=torch.float64)
        want = F.conv3d(x, w, None, p["s"], [size // 2 for size in p["k"]])
        got = convolve(*layout(setting, p, x, w))
        ok = ok and torch.allclose(from_2d(got, p) if setting == "as_2d" else got, want)
    return {"ok": bool(ok)}


def time_point(setting: str, p: dict, device: torch.device, timer: Timer) -> dict:
    torch.backends.cudnn.benchmark = setting.endswith("tuned")
    row = {**p, "setting": setting, "flops": flops(p)}
    for part, fn in zip(("forward", "backward"), operations(setting, p, device), strict=True):
        for _ in range(WARMUP):
            fn()
        row[part] = {"time": _stats([timer(fn) for _ in range(REPEATS)]), "kernels": profiled_kernels(fn, device)}
    torch.backends.cudnn.benchmark = False
    return row


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS,
           "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
           "copy_bytes_per_s": copy_bandwidth(device, timer), "points": [], "skipped": [],
           "checks": {s: check(s, device) for s in SETTINGS}}
    sweep(doc, grid(small), SETTINGS, "setting", lambda s, q: time_point(s, q, device, timer),
          lambda q: f"{q['name']:<14}", started, budget_s)
    first = grid(small)[0]
    doc["repeat_spread"] = [time_point(SETTINGS[0], first, device, timer)["forward"]["time"] for _ in range(2)]
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    lines = ["per point: forward and backward median time and TFLOP/s (the backward's FLOPs twice the forward's)"]
    for r in doc["points"]:
        f, b = r["forward"]["time"]["median_s"], r["backward"]["time"]["median_s"]
        lines.append(f"{r['name']:<14} {r['setting']:<16} fwd {f * 1e3:8.3f} ms {r['flops'] / f / 1e12:6.1f} TFLOP/s  "
                     f"bwd {b * 1e3:8.3f} ms {2 * r['flops'] / b / 1e12:6.1f} TFLOP/s")
    lines.append(f"{len(doc['points'])} points, {len(doc['skipped'])} skipped; {doc['elapsed_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 150.0, run, table)


if __name__ == "__main__":
    sys.exit(main())
