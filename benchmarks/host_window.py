"""Do two machines' hosts differ by one factor for every workload, when timed in one window?

The workloads collector times each workload's host-set points steadily (collectors/workloads/steady.py); timed
one workload after another, two machines' ratios of steady steps differed by workload (docs/history.md,
"Steady timing of host-set steps"). Either the hosts differ per kind of work (Python against kernel
launches), or each workload caught its own minute of a wandering host. This times one host-set step of
each workload side by side in the same rounds (collectors.workloads.steady.interleave), with the kernels each step
launches and the dispatch benchmark once per round, so that every figure shares one window.

Runs on the GPU host with torch and the standard library (run from the repository root):

    python3 benchmarks/host_window.py [--out FILE.json] [--rounds N]
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
from collectors.ceilings.dispatch import measure_dispatch  # noqa: E402
from collectors.core.host_time import device_kernel_count, gpu_busy  # noqa: E402
from collectors.workloads import load_workload  # noqa: E402
from collectors.workloads.steady import build_turn, interleave  # noqa: E402
from collectors.workloads.training import Variant  # noqa: E402

CASES = (("examples/vit_tiny.py:build", "bf16", 64, "no_cudnn_benchmark"),
         ("gpt-small", "bf16", 1, "default"), ("gpt-small", "bf16", 2, "default"),
         ("resnet50", "bf16", 64, "no_cudnn_benchmark"), ("examples/dlrm_small.py:build", "bf16", 16384, "default"),
         ("examples/user_workload.py:build", "bf16", 256, "no_cudnn_benchmark"), ("mlp-stgan", "bf16", 4096, "default"))


def build(device: torch.device) -> tuple[list, list, list[dict]]:
    steps, modes, facts = [], [], []
    for spec, precision, batch, variant_name in CASES:
        with device:
            workload = load_workload(spec)
        turn = build_turn(workload, precision, batch, Variant.from_name(variant_name), device)
        with turn.mode():
            turn.run()
            kernels = device_kernel_count(turn.run, device)
            busy = gpu_busy(turn.run, device)
        steps.append(turn.run)
        modes.append(turn.mode)
        facts.append({"workload": workload.name, "precision": precision, "batch": batch, "variant": variant_name,
                      "kernels_per_step": kernels, "gpu_busy_s": busy})
        print(f"built {workload.name} b{batch}: {kernels} kernels, busy {busy * 1e3:.2f} ms", flush=True)
    return steps, modes, facts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("host-window.json"))
    parser.add_argument("--rounds", type=int, default=16)
    args = parser.parse_args()
    device = torch.device("cuda")
    steps, modes, facts = build(device)
    started = time.time()
    per_round: list[list] = []
    dispatch: list[dict] = []
    for r in range(args.rounds):  # one round of every step, then the dispatch benchmark: one window for all
        per_round.append(interleave(steps, modes, device, rounds=1, slice_s=0.25))
        d = measure_dispatch(device, None)
        dispatch.append({"op_issue_us": d.op_issue_s.median * 1e6, "per_kernel_us": d.per_kernel_s * 1e6})
        print(f"round {r + 1}/{args.rounds}: " + " ".join(f"{t.step_s.median * 1e3:6.2f}" for t in per_round[-1])
              + f" | add {dispatch[-1]['op_issue_us']:.2f} µs, kernel {dispatch[-1]['per_kernel_us']:.1f} µs",
              flush=True)
    for i, fact in enumerate(facts):
        fact["step_ms"] = [rnd[i].step_s.median * 1e3 for rnd in per_round]
        fact["issue_ms"] = [rnd[i].host_issue_s.median * 1e3 for rnd in per_round]
        fact["step_median_ms"] = statistics.median(fact["step_ms"])
        fact["issue_median_ms"] = statistics.median(fact["issue_ms"])
    out = {"gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "window_s": time.time() - started,
           "cases": facts, "dispatch": dispatch,
           "dispatch_median": {k: statistics.median(d[k] for d in dispatch) for k in ("op_issue_us", "per_kernel_us")}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(f"\n{'workload':18s} {'batch':>6s} {'kernels':>7s} {'busy ms':>8s} {'step ms':>8s} {'issue ms':>8s}")
    for f in facts:
        print(f"{f['workload']:18s} {f['batch']:6d} {f['kernels_per_step']:7d} {f['gpu_busy_s'] * 1e3:8.2f} "
              f"{f['step_median_ms']:8.2f} {f['issue_median_ms']:8.2f}")
    print("dispatch medians:", out["dispatch_median"], f"window {out['window_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
