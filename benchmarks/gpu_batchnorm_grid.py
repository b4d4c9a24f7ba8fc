"""How a GPU's training batch norm scales with its channel count and with the elements of each channel: the check of
planner/trace/plane.py's mechanism (issue 41: ATen's NCHW batch norm gives each channel ONE block of 512 threads in
its statistics and backward kernels, so its time follows the elements per channel and the SMs' block slots, not
the card's bandwidth; cuDNN's and the channels-last kernels fill the GPU).

    OUT=/path python benchmarks/gpu_batchnorm_grid.py            # a GPU: about a minute on an H100
    python benchmarks/gpu_batchnorm_grid.py --small --out DIR    # the CPU: tiny sizes, a check of the script

F.batch_norm in training (forward, and forward + backward through torch.autograd.grad), in four settings:
  bf16-autocast-nchw           bf16 input, fp32 weights, under bf16 autocast: ATen's per-channel NCHW kernels
  fp16-autocast-nchw           fp16 input, fp32 weights, under fp16 autocast: cuDNN's NCHW kernels
  fp32-nchw                    fp32: cuDNN's NCHW kernels
  bf16-autocast-channels_last  bf16 NHWC input under bf16 autocast: ATen's channels-last kernels
over sweeps that pull the channel count and the elements per channel apart:
  channels_fixed_total   C 16 … 1024 at 2^27 elements in all (N = 32; the spatial map shrinks as C grows)
  channels_fixed_plane   C 16 … 1024 at N = 16, 64 × 64 (65,536 elements a channel): flat while the C blocks fit the
                         SMs' slots, a step at every multiple of SMs × blocks an SM holds (plane.py `resident`)
  plane_at_c64           C = 64, N = 32, maps 8² … 256² (unet-seg's first level is 64 channels at 256²)
  small_maps             C = 256, N = 256, maps 3² … 38² (SSD300's: a 3 × 3 map leaves 23 of 32 lanes idle)

Method (/work/.library/device/METHOD.md): each point warmed up, then timed REPEATS times with CUDA events around
each call, median and quartiles kept; inputs that fit four times in L2 are rotated among several sets; random
inputs, never zeros. Per setting: one point checked against float64 (output and input gradient, relative norm
error), the kernel names and their device times from torch.profiler at one point, and one point timed twice (the
spread between two timings of the same thing). A 1 GiB device-to-device copy gives the copy bandwidth. The sweep
stops at --budget-s and lists what it skipped. Writes ONE file, $OUT/batchnorm-grid.json (or --out DIR), and
prints the channel sweeps last.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

SETTINGS = {   # name: (input dtype, autocast dtype or None, memory format)
    "bf16-autocast-nchw": (torch.bfloat16, torch.bfloat16, torch.contiguous_format),
    "fp16-autocast-nchw": (torch.float16, torch.float16, torch.contiguous_format),
    "fp32-nchw": (torch.float32, None, torch.contiguous_format),
    "bf16-autocast-channels_last": (torch.bfloat16, torch.bfloat16, torch.channels_last),
}
CHANNELS = (16, 32, 64, 128, 256, 512, 1024)
PLANE_CHANNELS = (16, 32, 64, 96, 128, 132, 160, 192, 256, 264, 320, 396, 400, 512, 528, 560, 640, 768, 1024)
WARMUP, REPEATS = 3, 15
OUT_NAME = "batchnorm-grid.json"


def _map(hw: int) -> tuple[int, int]:
    """An H × W of hw elements, as square as powers of two allow."""
    h = 1 << (max(hw, 1).bit_length() - 1) // 2
    return h, hw // h


def grid(small: bool) -> list[dict]:
    """The points (sweep, N, C, H, W) of every sweep; --small: the same sweeps at CPU sizes."""
    total, plane_n, c64_n, maps_n = (2**27, 16, 32, 256) if not small else (2**14, 2, 2, 2)
    sides, small_sides = ((8, 16, 32, 64, 128, 256), (3, 5, 10, 19, 38)) if not small else ((4, 8), (3, 5))
    plane_side = 64 if not small else 4
    points = [("channels_fixed_total", 32 if not small else 2, c, *_map(total // ((32 if not small else 2) * c)))
              for c in (CHANNELS if not small else (16, 64, 256))]
    points += [("channels_fixed_plane", plane_n, c, plane_side, plane_side)
               for c in (PLANE_CHANNELS if not small else (16, 132, 264))]
    points += [("plane_at_c64", c64_n, 64, s, s) for s in sides]
    points += [("small_maps", maps_n, 256, s, s) for s in small_sides]
    return [dict(zip(("sweep", "n", "c", "h", "w"), p, strict=True)) for p in points]


class Timer:
    """CUDA events around the call on a GPU (its work is asynchronous); the host clock on the CPU (synchronous)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __call__(self, fn) -> float:  # noqa: ANN001 - a callable of no arguments
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t


def _stats(times: list[float]) -> dict:
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return {"median_s": statistics.median(times), "q1_s": q[0], "q3_s": q[2], "n": len(times)}


def inputs(setting: str, p: dict, device: torch.device, sets: int) -> list[tuple]:
    """`sets` random input sets: (x with grad, weight, bias, running mean, running var, grad_out)."""
    dtype, _, fmt = SETTINGS[setting]
    out = []
    for _ in range(sets):
        x = torch.randn(p["n"], p["c"], p["h"], p["w"], device=device).to(dtype=dtype, memory_format=fmt)
        x.requires_grad_(True)
        weight = (1 + 0.1 * torch.randn(p["c"], device=device)).requires_grad_(True)
        bias = (0.1 * torch.randn(p["c"], device=device)).requires_grad_(True)
        grad = torch.randn_like(x)
        out.append((x, weight, bias, torch.zeros(p["c"], device=device), torch.ones(p["c"], device=device), grad))
    return out


def step(setting: str, data: tuple, backward: bool) -> torch.Tensor:
    x, weight, bias, mean, var, grad = data
    cast = SETTINGS[setting][1]
    with torch.autocast(x.device.type, dtype=cast, enabled=cast is not None):
        y = F.batch_norm(x, mean, var, weight, bias, training=True, momentum=0.1, eps=1e-5)
    if backward:
        return torch.autograd.grad(y, (x, weight, bias), grad)[0]
    return y


def time_point(setting: str, p: dict, device: torch.device, timer: Timer) -> dict:
    elements = p["n"] * p["c"] * p["h"] * p["w"]
    nbytes = elements * SETTINGS[setting][0].itemsize
    l2 = torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda" else 32 << 20
    sets = inputs(setting, p, device, max(1, min(4, math.ceil(4 * l2 / nbytes))))
    row = {**p, "setting": setting, "elements": elements, "per_channel": elements // p["c"], "input_sets": len(sets)}
    for name, backward in (("forward", False), ("forward_backward", True)):
        for i in range(WARMUP):
            step(setting, sets[i % len(sets)], backward)
        row[name] = _stats([timer(lambda i=i, b=backward: step(setting, sets[i % len(sets)], b))
                            for i in range(REPEATS)])
    row["backward_median_s"] = row["forward_backward"]["median_s"] - row["forward"]["median_s"]
    return row


def check(setting: str, device: torch.device) -> dict:
    """‖out − ref‖ / ‖ref‖ of the output and the input gradient against float64, on fresh random inputs."""
    p = {"n": 4, "c": 32, "h": 17, "w": 19}
    data = inputs(setting, p, device, 1)[0]
    x, weight, bias, _, _, grad = data
    y = step(setting, data, False)
    gx = step(setting, data, True)
    x64 = x.detach().double().requires_grad_(True)
    y64 = F.batch_norm(x64, None, None, weight.detach().double(), bias.detach().double(), training=True, eps=1e-5)
    (g64,) = torch.autograd.grad(y64, (x64,), grad.double())

    def rel(a: torch.Tensor, b: torch.Tensor) -> float:
        return float((a.detach().double() - b.detach()).norm() / b.detach().norm())
    out, grad_in = rel(y, y64), rel(gx, g64)
    ok = all(math.isfinite(v) and v < 2e-2 for v in (out, grad_in))
    return {"output_rel_error": out, "grad_input_rel_error": grad_in, "ok": ok}


def kernels(setting: str, p: dict, device: torch.device) -> list[dict]:
    """The kernels one forward + backward launches, with their device time, from torch.profiler."""
    data = inputs(setting, p, device, 1)[0]
    step(setting, data, True)
    return profiled_kernels(lambda: step(setting, data, True), device)


def profiled_kernels(fn, device: torch.device) -> list[dict]:  # noqa: ANN001 - a callable of no arguments
    """What one call of `fn` launches, by name, with its device time, from torch.profiler (every grid's kernels)."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        device_us = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        if device.type != "cuda" or device_us > 0:
            rows.append({"name": e.key, "calls": e.count, "device_us": device_us})
    return rows


def sweep(doc: dict, points: list[dict], settings, key: str, time_one, label, started: float,  # noqa: ANN001
          budget_s: float) -> None:
    """Every point in every setting into doc["points"] (`time_one(setting, point)`), those past --budget-s into
    doc["skipped"] with the setting under `key`; `label(point)` (or None) printed after each point's settings."""
    for p in points:
        for setting in settings:
            if time.monotonic() - started > budget_s:
                doc["skipped"].append({**p, key: setting})
                continue
            doc["points"].append(time_one(setting, p))
        if label is not None:
            print(f"{label(p)}: {time.monotonic() - started:5.1f} s", file=sys.stderr)


def copy_bandwidth(device: torch.device, timer: Timer) -> float | None:
    """Bytes read + written per second of a 1 GiB device-to-device copy (the median of 10 after 3)."""
    if device.type != "cuda":
        return None
    src = torch.randn(1 << 28, device=device)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    return 2 * src.nbytes / statistics.median(timer(lambda: dst.copy_(src)) for _ in range(10))


def environment(device: torch.device) -> dict:
    env = {"torch": torch.__version__, "device": str(device), "cudnn": torch.backends.cudnn.version()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env |= {"gpu": props.name, "sms": props.multi_processor_count, "l2_bytes": props.L2_cache_size,
                "memory_bytes": props.total_memory}
    return env


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS,
           "copy_bytes_per_s": copy_bandwidth(device, timer), "checks": {}, "kernels": {}, "repeat_spread": {},
           "points": [], "skipped": []}
    profiled = {"sweep": "plane_at_c64", "n": 2 if small else 16, "c": 64, "h": 8 if small else 256,
                "w": 8 if small else 256}
    for setting in SETTINGS:
        doc["checks"][setting] = check(setting, device)
        doc["repeat_spread"][setting] = [time_point(setting, profiled, device, timer)["forward_backward"]
                                         for _ in range(2)]   # the same point timed twice
        doc["kernels"][setting] = kernels(setting, profiled, device)
    sweep(doc, grid(small), SETTINGS, "setting", lambda s, p: time_point(s, p, device, timer),
          lambda p: f"{p['sweep']:<22} N {p['n']:>4} C {p['c']:>5} {p['h']}×{p['w']}", started, budget_s)
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    """The channel sweeps, forward and backward milliseconds per setting, C by C."""
    lines = []
    for sweep in ("channels_fixed_plane", "channels_fixed_total"):
        rows = [r for r in doc["points"] if r["sweep"] == sweep]
        lines.append(f"{sweep}: forward / backward ms")
        lines.append("C      " + "".join(f"{s:>30}" for s in SETTINGS))
        for c in sorted({r["c"] for r in rows}):
            cells = []
            for s in SETTINGS:
                r = next((r for r in rows if r["c"] == c and r["setting"] == s), None)
                cells.append(f"{r['forward']['median_s'] * 1e3:>13.3f} / {r['backward_median_s'] * 1e3:<13.3f}"
                             if r else f"{'–':>30}")
            lines.append(f"{c:<7}" + "".join(f"{x:>30}" for x in cells))
    checks = ", ".join(f"{s} {'ok' if c['ok'] else 'FAILED'}" for s, c in doc["checks"].items())
    lines.append(f"float64 checks: {checks}; {len(doc['skipped'])} points skipped; {doc['elapsed_s']:.1f} s")
    return "\n".join(lines)


def grid_main(argv: list[str] | None, doc: str, out_name: str, budget_s: float, run, table,  # noqa: ANN001
              tf32: bool = False) -> int:
    """The command line every GPU grid benchmark shares (this one, gpu_depthwise_grid.py, gpu_tiny_bmm_grid.py):
    --small (the CPU check of the script), --out ($OUT), --budget-s; `run(small, budget_s, device)` makes the
    document, written as ONE file `out_name`, and `table(doc)` what is printed. Exit 2 without a GPU (and no
    --small), 1 where a float64 check failed. `tf32`: TF32 on, as the collectors' TF32 runs."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--small", action="store_true", help="tiny sizes on the CPU: a check of the script")
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help=f"where {out_name} goes ($OUT)")
    ap.add_argument("--budget-s", type=float, default=budget_s, help="stop timing new points after this many seconds")
    args = ap.parse_args(argv)
    device = torch.device("cpu" if args.small or not torch.cuda.is_available() else "cuda")
    if device.type == "cpu" and not args.small:
        print("no CUDA device: run with --small for the CPU check of the script", file=sys.stderr)
        return 2
    if tf32:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    result = run(args.small, args.budget_s, device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / out_name).write_text(json.dumps(result, indent=1))
    print(table(result))
    print(f"wrote {out / out_name}")
    return 0 if all(c["ok"] for c in result.get("checks", {}).values()) else 1


def main(argv: list[str] | None = None) -> int:
    return grid_main(argv, __doc__, OUT_NAME, 75.0, run, table)


if __name__ == "__main__":
    sys.exit(main())
