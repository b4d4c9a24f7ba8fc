"""How a step the host limits behaves when its GPU is slower: the question the V100's EfficientNet-B0 AMP row asks
(issue 39, docs/prediction-model.md § 4, "What the host-limited rule assumes").

The H200 times EfficientNet-B0 in DLE's V100 configuration (fp16 autocast + GradScaler, channels_last, batch 128,
no cuDNN autotuning) host-limited: 41.8 ms a step, the GPU busy 21.0 ms, the host issuing for 45.3 ms. A V100 takes
about 3.3× the GPU time. The model says max(issue, GPU) there (the host's issue hidden behind the GPU); the source's
idle share held as serial host time says GPU + 20.8 ms. This script stretches every module's GPU time on the same
host by a factor s (a `torch.cuda._sleep` after each leaf module's forward and backward, its cycles that module's
own measured GPU time × (s − 1)), and times the step at each s: the step against max(issue, s × busy) says which.

    python benchmarks/gpu_host_overlap.py --out $OUT/host-overlap.json [--batch 128] [--stretch 1 1.5 2 3 3.3 4]

torch and the standard library only; one GPU, ~1-2 minutes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples.efficientnet_b0 import build  # noqa: E402

STEPS, WARMUP = 20, 5


def leaves(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in model.modules() if not list(m.children()) and not isinstance(m, torch.nn.Identity)]


def module_times(model: torch.nn.Module, run) -> dict[int, float]:
    """Each leaf module's forward GPU seconds (CUDA events around it, read after one synchronisation)."""
    events: dict[int, list] = {}

    def pre(m, _):
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        events.setdefault(id(m), []).append([e, None])

    def post(m, _, __):
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        events[id(m)][-1][1] = e
    hooks = [h for m in leaves(model) for h in (m.register_forward_pre_hook(pre), m.register_forward_hook(post))]
    run()
    torch.cuda.synchronize()
    for h in hooks:
        h.remove()
    return {k: sum(a.elapsed_time(b) for a, b in v) / 1e3 for k, v in events.items()}


def stretch(model: torch.nn.Module, times: dict[int, float], s: float, clock_hz: float) -> list:
    """Sleep (s − 1) × the module's forward time after its forward, twice that after its backward (a backward is
    about two forwards' work)."""
    hooks = []
    for m in leaves(model):
        cycles = int((s - 1) * times.get(id(m), 0.0) * clock_hz)
        if cycles <= 0:
            continue
        hooks.append(m.register_forward_hook(lambda *_, c=cycles: torch.cuda._sleep(c)))
        hooks.append(m.register_full_backward_hook(lambda *_, c=cycles: torch.cuda._sleep(2 * c)))
    return hooks


def measure(run) -> dict[str, float]:
    for _ in range(WARMUP):
        run()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        run()
    torch.cuda.synchronize()
    step = (time.perf_counter() - t0) / STEPS
    issue = []
    for _ in range(5):
        torch.cuda.synchronize()
        t = time.perf_counter()
        run()
        issue.append(time.perf_counter() - t)
        torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    busy = sum(e.device_time_total for e in prof.key_averages() if e.device_time_total) / 1e6
    return {"step_s": step, "issue_s": statistics.median(issue), "busy_s": busy}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--stretch", type=float, nargs="+", default=[1.0, 1.5, 2.0, 3.0, 3.3, 4.0])
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_host_overlap: needs a CUDA GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = False
    w = build()
    model = w["model"].to(dev).to(memory_format=torch.channels_last).train()
    x, y = w["make_batch"](args.batch, dev)
    x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    scaler = torch.amp.GradScaler("cuda")

    def run() -> None:  # the collector's fp16 step (collectors/workloads/training.py build_step)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = w["loss"](model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(WARMUP):
        run()
    times = module_times(model, run)
    clock = torch.cuda.get_device_properties(0).clock_rate * 1e3 if hasattr(
        torch.cuda.get_device_properties(0), "clock_rate") else 1.98e9
    rows = []
    for s in args.stretch:
        hooks = stretch(model, times, s, clock)
        r = measure(run)
        for h in hooks:
            h.remove()
        r["stretch"] = s
        r["max_issue_busy_s"] = max(r["issue_s"], r["busy_s"])
        rows.append(r)
        print(f"s={s:4.1f} step {r['step_s']*1e3:7.1f} ms  busy {r['busy_s']*1e3:7.1f}  issue {r['issue_s']*1e3:7.1f}"
              f"  step / max(issue, busy) {r['step_s'] / r['max_issue_busy_s']:.3f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"workload": "efficientnet-b0", "precision": "fp16", "layout": "channels_last",
                                    "batch": args.batch, "gpu": torch.cuda.get_device_name(0),
                                    "torch": torch.__version__, "clock_hz": clock, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
