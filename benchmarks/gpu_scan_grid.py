"""How long ATen's cumulative sum, roll and batches of 49 x 49 attention products take on a GPU, per shape: the
measurements behind the trace's model of the ops a mixture-of-experts router and a Swin transformer run (issue 41:
moe-lm's routing cumsum over [65,536 tokens, 8 experts] took 95 ms of a 316 ms H200 step where the trace, with no
profile of it, timed 0.03 ms; swin-tiny's window attention products were timed 2.6x what they took, its rolls 0.2x).

    OUT=/path python benchmarks/gpu_scan_grid.py            # a GPU: under a minute on an H200
    python benchmarks/gpu_scan_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

Sweeps (each timed with CUDA events, REPEATS after WARMUP, median and quartiles; random inputs; kernels named by
torch.profiler):
  scan_outer  cumsum over dim 0 of [N, C]: a scan along the outer dimension (one-hot routing counts), N 4,096 ...
              65,536, C 1 ... 65,536, int64, fp32, bf16
  scan_inner  cumsum over dim -1 of [C, N]: along the innermost dimension, the same sizes
  roll        torch.roll of a channels-last [B, H, W, C] by (-3, -3) over (1, 2): Swin's shifted windows, bf16, fp32
  bmm49       torch.bmm of [G, 49, 32] x [G, 32, 49] and [G, 49, 49] x [G, 49, 32] in bf16: Swin's window attention
Writes ONE file, $OUT/scan-grid.json (or --out DIR), and prints each point's time and rate.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

import torch

# the batch-norm grid's timer, statistics, environment, kernels, sweep and command line (one method for every grid)
_grid = runpy.run_path(str(Path(__file__).with_name("gpu_batchnorm_grid.py")))
Timer, _stats, environment = _grid["Timer"], _grid["_stats"], _grid["environment"]
profiled_kernels, sweep, copy_bandwidth = _grid["profiled_kernels"], _grid["sweep"], _grid["copy_bandwidth"]

DTYPES = {"int64": torch.int64, "fp32": torch.float32, "bf16": torch.bfloat16}
WARMUP, REPEATS = 2, 7
OUT_NAME = "scan-grid.json"


def grid(small: bool) -> list[dict]:
    if small:
        return [{"sweep": "scan_outer", "n": 64, "c": 8}, {"sweep": "scan_inner", "n": 64, "c": 8},
                {"sweep": "roll", "b": 2, "h": 14, "c": 8}, {"sweep": "bmm49", "g": 4, "form": "qk"}]
    points = [{"sweep": s, "n": n, "c": c} for s in ("scan_outer", "scan_inner") for n in (4096, 16384, 65536)
              for c in (1, 8, 64, 512, 4096, 65536) if n * c <= 1 << 28]
    points += [{"sweep": "roll", "b": b, "h": h, "c": c} for b in (32, 128)
               for h, c in ((56, 96), (28, 192), (14, 384))]
    points += [{"sweep": "bmm49", "g": g, "form": f} for g in (3072, 12288, 24576) for f in ("qk", "av")]
    return points


def settings_of(p: dict) -> tuple[str, ...]:
    if p["sweep"].startswith("scan"):
        return tuple(DTYPES)
    return ("bf16", "fp32") if p["sweep"] == "roll" else ("bf16",)


def operation(setting: str, p: dict, device: torch.device):  # noqa: ANN201 - a callable of no arguments
    dtype = DTYPES[setting]
    if p["sweep"] == "scan_outer":
        x = torch.randint(0, 2, (p["n"], p["c"]), device=device).to(dtype)
        return lambda: torch.cumsum(x, dim=0), x.numel(), x.element_size()
    if p["sweep"] == "scan_inner":
        x = torch.randint(0, 2, (p["c"], p["n"]), device=device).to(dtype)
        return lambda: torch.cumsum(x, dim=-1), x.numel(), x.element_size()
    if p["sweep"] == "roll":
        x = torch.randn(p["b"], p["h"], p["h"], p["c"], device=device, dtype=dtype)
        return lambda: torch.roll(x, shifts=(-3, -3), dims=(1, 2)), x.numel(), x.element_size()
    a = torch.randn(p["g"], 49, 32 if p["form"] == "qk" else 49, device=device, dtype=dtype)
    b = torch.randn(p["g"], a.shape[2], 49 if p["form"] == "qk" else 32, device=device, dtype=dtype)
    return lambda: torch.bmm(a, b), a.numel() + b.numel(), a.element_size()


def time_point(setting: str, p: dict, device: torch.device, timer: Timer) -> dict:
    fn, elements, size = operation(setting, p, device)
    for _ in range(WARMUP):
        fn()
    row = {**p, "setting": setting, "elements": elements, "element_bytes": size}
    row["time"] = _stats([timer(fn) for _ in range(REPEATS)])
    row["kernels"] = profiled_kernels(fn, device)
    return row


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS,
           "copy_bytes_per_s": copy_bandwidth(device, timer), "points": [], "skipped": []}
    for p in grid(small):   # each sweep has its own settings
        sweep(doc, [p], settings_of(p), "setting", lambda s, q: time_point(s, q, device, timer),
              lambda q: f"{q['sweep']:<10} {q}", started, budget_s)
    first = grid(small)[0]
    doc["repeat_spread"] = [time_point("int64", first, device, timer)["time"] for _ in range(2)]
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    lines = ["per point: median time; scans and rolls also ns an element (of the input), bmm TFLOP/s"]
    for r in doc["points"]:
        t = r["time"]["median_s"]
        what = (f"{t / r['elements'] * 1e9:.3f} ns/element" if r["sweep"] != "bmm49"
                else f"{2 * r['g'] * 49 * 49 * 32 / t / 1e12:.1f} TFLOP/s")
        shape = {k: v for k, v in r.items() if k in ("n", "c", "b", "h", "g", "form")}
        lines.append(f"{r['sweep']:<10} {r['setting']:<5} {shape}  {t * 1e3:9.3f} ms  {what}")
    lines.append(f"{len(doc['points'])} points, {len(doc['skipped'])} skipped; {doc['elapsed_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 150.0, run, table)


if __name__ == "__main__":
    sys.exit(main())
