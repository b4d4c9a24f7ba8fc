"""How fast a GPU's matrix products run where their output is a wave or two of tiles and their reduction is deep (a
weight gradient: 3000 x 700 over 131,072 rows), against tall products of the same FLOPs, in plain fp32 (TF32 off),
TF32 and bf16: the measurements behind planner/trace/gemm.py's split of a deep reduction (issue 41: the trace timed
mlp-stgan's fp32 weight gradients at 0.49 of the roof, as two waves of 144 tiles on 132 SMs, and its fp32 step +29 %
on the H100, +32 % on the H200).

    OUT=/path python benchmarks/gpu_gemm_grid.py            # a GPU: about a minute on an H200
    python benchmarks/gpu_gemm_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

Each product is `torch.mm(A, B)` with A m x k and B k x n (what ATen's addmm and mm call), timed in three settings:
  deep     a weight gradient's shape: m x n of 100 x 700 ... 4096 x 4096, k 16,384 ... 131,072
  tall     a forward's: m 16,384 ... 131,072 rows, (n, k) a layer's width
  models   mlp-stgan's and BERT-base's products at their batches (131,072 rows; 320 x 384 tokens), checks
Method (/work/.library/device/METHOD.md): each point warmed up, then timed REPEATS times with CUDA events around
each call, median and quartiles kept; operands that fit four times in L2 are rotated among several sets; random
inputs, never zeros. Per setting one product is checked against float64 and one point timed twice (the spread);
every point's kernels are named by torch.profiler (a split-K reduction shows as a kernel of its own). The sweep
stops at --budget-s and lists what it skipped. Writes ONE file, $OUT/gemm-grid.json (or --out DIR), and prints each
point's TFLOP/s per setting.
"""

from __future__ import annotations

import math
import runpy
import sys
import time
from pathlib import Path

import torch

# the batch-norm grid's timer, statistics, environment, kernels, sweep and command line (one method for every grid)
_grid = runpy.run_path(str(Path(__file__).with_name("gpu_batchnorm_grid.py")))
Timer, _stats, environment = _grid["Timer"], _grid["_stats"], _grid["environment"]
profiled_kernels, sweep = _grid["profiled_kernels"], _grid["sweep"]

SETTINGS = {"fp32": (torch.float32, False), "tf32": (torch.float32, True), "bf16": (torch.bfloat16, False)}
WARMUP, REPEATS = 2, 7
OUT_NAME = "gemm-grid.json"
# (m, n, k) of the reference workloads' products (their traces' aten::mm / addmm): checks, never fitted
MODEL_PRODUCTS = {
    "mlp-stgan": [(131072, 700, 3000), (131072, 3000, 700), (3000, 700, 131072), (700, 3000, 131072),
                  (131072, 100, 700), (700, 100, 131072), (100, 50, 131072)],
    "bert-base-squad": [(122880, 2304, 768), (122880, 768, 3072), (122880, 3072, 768), (768, 3072, 122880),
                        (3072, 768, 122880), (2304, 768, 122880), (768, 768, 122880)],
}


def grid(small: bool) -> list[dict]:
    points: list[tuple] = []
    if small:
        points += [("deep", "", 16, 24, 512), ("tall", "", 256, 24, 16), ("models", "mlp-stgan", 64, 12, 40)]
    else:
        points += [("deep", "", m, n, k) for m, n in ((100, 700), (768, 768), (768, 3072), (700, 3000), (1024, 1024),
                                                     (2304, 768), (1024, 4096), (4096, 4096))
                   for k in (16384, 65536, 131072)]
        points += [("tall", "", m, n, k) for m in (16384, 131072) for n, k in ((768, 768), (3072, 768), (700, 3000),
                                                                             (3000, 700), (100, 700))]
        points += [("models", name, *mnk) for name, products in MODEL_PRODUCTS.items() for mnk in products]
    return [dict(zip(("sweep", "model", "m", "n", "k"), p, strict=True)) for p in points]


def inputs(setting: str, p: dict, device: torch.device, sets: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    dtype = SETTINGS[setting][0]
    return [(torch.randn(p["m"], p["k"], device=device, dtype=dtype) / p["k"] ** 0.5,
             torch.randn(p["k"], p["n"], device=device, dtype=dtype)) for _ in range(sets)]


def time_point(setting: str, p: dict, device: torch.device, timer: Timer, names: bool = True) -> dict:
    torch.backends.cuda.matmul.allow_tf32 = SETTINGS[setting][1]
    size = SETTINGS[setting][0].itemsize
    nbytes = (p["m"] * p["k"] + p["k"] * p["n"]) * size
    l2 = torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda" else 32 << 20
    sets = inputs(setting, p, device, max(1, min(4, math.ceil(4 * l2 / nbytes))))
    row = {**p, "setting": setting, "flops": 2.0 * p["m"] * p["n"] * p["k"], "input_sets": len(sets)}
    for i in range(WARMUP):
        torch.mm(*sets[i % len(sets)])
    row["time"] = _stats([timer(lambda i=i: torch.mm(*sets[i % len(sets)])) for i in range(REPEATS)])
    if names:
        row["kernels"] = profiled_kernels(lambda: torch.mm(*sets[0]), device)
    return row


def check(setting: str, device: torch.device) -> dict:
    """‖A·B − ref‖ / ‖ref‖ against float64, on fresh random inputs (a deep reduction, where a split sums pieces)."""
    torch.backends.cuda.matmul.allow_tf32 = SETTINGS[setting][1]
    a, b = inputs(setting, {"m": 24, "n": 40, "k": 8192}, device, 1)[0]
    ref = a.double() @ b.double()
    error = float((torch.mm(a, b).double() - ref).norm() / ref.norm())
    tolerance = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 2e-2}[setting]
    return {"rel_error": error, "ok": math.isfinite(error) and error < tolerance}


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS, "checks": {},
           "repeat_spread": {}, "points": [], "skipped": []}
    spread = grid(small)[0]
    for setting in SETTINGS:
        doc["checks"][setting] = check(setting, device)
        doc["repeat_spread"][setting] = [time_point(setting, spread, device, timer, False)["time"] for _ in range(2)]
    sweep(doc, grid(small), SETTINGS, "setting", lambda s, p: time_point(s, p, device, timer),
          lambda p: f"{p['sweep']:<6} {p['model']:<15} {p['m']:>6} x {p['n']:<5} k {p['k']}", started, budget_s)
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    """Per point, each setting's TFLOP/s and whether a split-K reduction kernel ran."""
    lines = ["TFLOP/s per setting (* a split-K reduction kernel ran)",
             f"{'point':<34}" + "".join(f"{s:>10}" for s in SETTINGS)]
    for key in dict.fromkeys((r["sweep"], r["model"], r["m"], r["n"], r["k"]) for r in doc["points"]):
        cells = []
        for s in SETTINGS:
            r = next((r for r in doc["points"] if (r["sweep"], r["model"], r["m"], r["n"], r["k"]) == key
                      and r["setting"] == s), None)
            split = r and any("splitk" in k["name"].lower() or "reduce" in k["name"].lower()
                              for k in r.get("kernels", []))
            cells.append(f"{r['flops'] / r['time']['median_s'] / 1e12:.1f}{'*' if split else ''}" if r else "–")
        lines.append(f"{key[0]:<6} {key[2]:>6} x {key[3]:<5} k {key[4]:<7}   " + "".join(f"{c:>10}" for c in cells))
    checks = ", ".join(f"{s} {'ok' if c['ok'] else 'FAILED'}" for s, c in doc["checks"].items())
    lines.append(f"float64 checks: {checks}; {len(doc['skipped'])} points skipped; {doc['elapsed_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 240.0, run, table)


if __name__ == "__main__":
    sys.exit(main())
