"""How a GPU's batched product of tiny matrices scales: the measurements behind planner/trace/gemm.py
UNALIGNED_CYCLES (issue 41: dlrm-small's feature interaction, a million 9 x 9 products over 64, took one SM cycle an
element read and written on the H100 and the H200 alike; no other reference runs such products).

    OUT=/path python benchmarks/gpu_tiny_bmm_grid.py            # a GPU: about a minute on an H200
    python benchmarks/gpu_tiny_bmm_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

Each point is `torch.bmm` of (B, m, k) x (B, k, n) forward and the two products of its backward, timed apart, in
bf16, fp16 and fp32 (TF32 on), over sides m = n of 4 ... 64 (odd and 8-aligned), depths k 16 ... 256 and batches
4,096 ... 1,048,576: whether the element rate holds for odd sides only or for tiny aligned ones too, and where reuse
(a larger side) hands the time back to the bytes or the tensor cores. Method (/work/.library/device/METHOD.md):
warm-up, CUDA events, median and quartiles of REPEATS; one point timed twice (the spread); the kernel names at a few
points. Writes ONE file, $OUT/tiny-bmm-grid.json (or --out DIR).
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

import torch

# the batch-norm grid's timer, statistics, copy bandwidth and environment (one method for every grid), run from its
# file: benchmarks/ is scripts, not a package
_grid = runpy.run_path(str(Path(__file__).with_name("gpu_batchnorm_grid.py")))
Timer, _stats = _grid["Timer"], _grid["_stats"]
copy_bandwidth, environment = _grid["copy_bandwidth"], _grid["environment"]
profiled_kernels, sweep = _grid["profiled_kernels"], _grid["sweep"]

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
WARMUP, REPEATS = 3, 10
OUT_NAME = "tiny-bmm-grid.json"
PARTS = ("forward", "grad_a", "grad_b")


def grid(small: bool) -> list[dict]:
    if small:
        pts = [("side", 64, s, 16) for s in (3, 8)] + [("batch", b, 9, 16) for b in (16, 32)]
    else:
        pts = [("side", 1 << 20, s, 64) for s in (4, 7, 8, 9, 15, 16, 27, 32, 33, 64)]
        pts += [("depth", 1 << 20, s, k) for s in (9, 16) for k in (16, 32, 128, 256)]
        pts += [("batch", b, s, 64) for s in (9, 16) for b in (4096, 16384, 65536, 262144)]
    return [dict(zip(("sweep", "batch", "side", "k"), p, strict=True)) for p in pts]


def parts(p: dict, dtype: torch.dtype, device: torch.device) -> dict:
    a = torch.randn(p["batch"], p["side"], p["k"], device=device, dtype=dtype)
    b = torch.randn(p["batch"], p["k"], p["side"], device=device, dtype=dtype)
    g = torch.randn(p["batch"], p["side"], p["side"], device=device, dtype=dtype)
    return {"forward": lambda: torch.bmm(a, b), "grad_a": lambda: torch.bmm(g, b.transpose(1, 2)),
            "grad_b": lambda: torch.bmm(a.transpose(1, 2), g)}


def time_point(p: dict, name: str, device: torch.device, timer: Timer) -> dict:
    dtype = DTYPES[name]
    row = {**p, "dtype": name, "elements_per_part": p["batch"] * (2 * p["side"] * p["k"] + p["side"] ** 2)}
    for part, fn in parts(p, dtype, device).items():
        for _ in range(WARMUP):
            fn()
        row[part] = _stats([timer(fn) for _ in range(REPEATS)])
    return row


def kernels(p: dict, name: str, device: torch.device) -> list[dict]:
    fns = parts(p, DTYPES[name], device)
    return profiled_kernels(lambda: [fn() for fn in fns.values()], device)


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS,
           "copy_bytes_per_s": copy_bandwidth(device, timer), "kernels": {}, "points": [], "skipped": []}
    probe = grid(small)[0]
    doc["repeat_spread"] = [time_point(probe, "bf16", device, timer)["forward"] for _ in range(2)]
    for name in DTYPES:
        doc["kernels"][name] = {f"side{p['side']}": kernels(p, name, device) for p in grid(small)[:3]}
    sweep(doc, grid(small), DTYPES, "dtype", lambda name, p: time_point(p, name, device, timer), None, started,
          budget_s)
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    """Every point's forward / first / second backward product milliseconds."""
    return "\n".join(f"{r['sweep']:<6} B {r['batch']:>8} side {r['side']:>3} k {r['k']:>4} {r['dtype']:<5} "
                     + " / ".join(f"{r[x]['median_s'] * 1e3:.3f}" for x in PARTS) + " ms" for r in doc["points"])


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 150.0, run, table, tf32=True)


if __name__ == "__main__":
    sys.exit(main())
