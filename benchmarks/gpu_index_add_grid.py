"""How long ATen's row gather (`index_select`) and row scatter-add (`index_add_`, atomics where indices repeat) take
on a GPU, per shape: the measurements behind the trace's model of a graph network's message passing, whose two
kinds no reference profile ran (issue 41, examples/graph_sage.py: 62 % of its predicted H100 step, timed with the
pooled memory figures on their bytes counted once; a random scatter-add into a destination larger than L2 may move
each touched row twice more, and bf16 atomics may not keep up with the copy rate).

    OUT=/path python benchmarks/gpu_index_add_grid.py            # a GPU: about a minute on an H200
    python benchmarks/gpu_index_add_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

Sweeps (each timed with CUDA events, REPEATS after WARMUP, median and quartiles; kernels named by torch.profiler),
E rows of width D gathered from or added into a table of N rows, indices uniform random (as graph-sage's unsorted
edges) or sorted (as a CSR-ordered edge list), each in bf16 and fp32:
  gather   x.index_select(0, idx): [N, D] -> [E, D]
  scatter  zeros.index_add_(0, idx, src): [E, D] into [N, D], E / N updates a row on average
N 262,144 ... 4,194,304 nodes, E = 16 N (graph-sage's 16 edges a node), D 128 and 256 (at most 2^33 elements);
and D 256 at N 1,048,576 with E = N (no repeats on average) and 32 N (more).
Writes ONE file, $OUT/index-add-grid.json (or --out DIR), and prints each point's time and its bytes' rate (bytes
counted as the trace counts them: the source rows, the indices, the destination once).
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

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
ORDERS = ("random", "sorted")
SETTINGS = tuple(f"{d}/{o}" for d in DTYPES for o in ORDERS)
WARMUP, REPEATS = 2, 7
OUT_NAME = "index-add-grid.json"
SEED = 0


def grid(small: bool) -> list[dict]:
    if small:
        return [{"sweep": s, "n": 64, "e": 1024, "d": 8} for s in ("gather", "scatter")]
    points = [{"sweep": s, "n": n, "e": 16 * n, "d": d} for s in ("gather", "scatter")
              for n in (262_144, 1_048_576, 4_194_304) for d in (128, 256) if 16 * n * d <= 1 << 33]
    points += [{"sweep": s, "n": 1_048_576, "e": e, "d": 256} for s in ("gather", "scatter")
               for e in (1_048_576, 33_554_432)]
    return points


def operation(setting: str, p: dict, device: torch.device):  # noqa: ANN201 - (callable, bytes it moves)
    dtype, order = DTYPES[setting.split("/")[0]], setting.split("/")[1]
    generator = torch.Generator(device).manual_seed(SEED)
    idx = torch.randint(0, p["n"], (p["e"],), generator=generator, device=device)
    if order == "sorted":
        idx = idx.sort().values
    size = torch.tensor([], dtype=dtype).element_size()
    if p["sweep"] == "gather":
        x = torch.randn(p["n"], p["d"], device=device, dtype=dtype)
        moved = 2 * p["e"] * p["d"] * size + idx.nbytes           # the picked rows read, the output written
        return lambda: x.index_select(0, idx), moved
    src = torch.randn(p["e"], p["d"], device=device, dtype=dtype)
    out = torch.zeros(p["n"], p["d"], device=device, dtype=dtype)
    moved = src.nbytes + idx.nbytes + 2 * out.nbytes                # the destination read and written once
    return lambda: out.index_add_(0, idx, src), moved


def check(setting: str, device: torch.device) -> dict:
    """Both ops against a float64 loop on a tiny case (repeated indices summed, every row picked)."""
    dtype = DTYPES[setting.split("/")[0]]
    idx = torch.tensor([3, 0, 3, 1, 3, 0], device=device)
    if setting.endswith("sorted"):
        idx = idx.sort().values
    src = torch.arange(12, device=device, dtype=torch.float64).view(6, 2)
    want = torch.zeros(4, 2, dtype=torch.float64, device=device)
    for row, i in enumerate(idx.tolist()):
        want[i] += src[row]
    got = torch.zeros(4, 2, device=device, dtype=dtype).index_add_(0, idx, src.to(dtype))
    gathered = src.to(dtype).index_select(0, idx)
    ok = torch.allclose(got.double(), want) and torch.equal(gathered.double(), src[idx])
    return {"ok": bool(ok)}


def time_point(setting: str, p: dict, device: torch.device, timer: Timer) -> dict:
    fn, moved = operation(setting, p, device)
    for _ in range(WARMUP):
        fn()
    row = {**p, "setting": setting, "bytes": moved}
    row["time"] = _stats([timer(fn) for _ in range(REPEATS)])
    row["kernels"] = profiled_kernels(fn, device)
    return row


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS,
           "copy_bytes_per_s": copy_bandwidth(device, timer), "points": [], "skipped": [],
           "checks": {s: check(s, device) for s in SETTINGS}}
    sweep(doc, grid(small), SETTINGS, "setting", lambda s, q: time_point(s, q, device, timer),
          lambda q: f"{q['sweep']:<8} {q}", started, budget_s)
    first = grid(small)[0]
    doc["repeat_spread"] = [time_point(SETTINGS[0], first, device, timer)["time"] for _ in range(2)]
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    copy = doc.get("copy_bytes_per_s")
    lines = ["per point: median time, the bytes counted once at that rate" + (" and copy / it" if copy else "")]
    for r in doc["points"]:
        t = r["time"]["median_s"]
        rate = r["bytes"] / t
        slowdown = f"  {copy / rate:5.2f}x copy" if copy else ""
        lines.append(f"{r['sweep']:<8} {r['setting']:<12} N {r['n']:>9,} E {r['e']:>11,} D {r['d']:>3}  "
                     f"{t * 1e3:9.3f} ms  {rate / 1e9:7.1f} GB/s{slowdown}")
    lines.append(f"{len(doc['points'])} points, {len(doc['skipped'])} skipped; {doc['elapsed_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 120.0, run, table)


if __name__ == "__main__":
    sys.exit(main())
