"""What clock does the GPU hold while it trains? The prediction model scales a step's below-roof time by the SM
count × boost clock of the two GPUs (docs/prediction-model.md § 1a), and the ceilings collector found the H100's
SM clock at 1.2–1.4 GHz under a sustained matmul (ceilings.json `sustained_sm_clock_hz`), far below the 1.98 GHz
boost. This measures the clock, board power and step of real training steps: each configuration warms up, then
runs steps for a few seconds while the collectors' NVML sampler (collectors/core/nvml_sampler.py) reads it every
20 ms; the median, 10th and 90th percentile of those samples are written out with the median step time.

Runs on the GPU host with torch, nvidia-ml-py and the standard library:

    python3 benchmarks/step_clocks.py [--seconds 6] [--out FILE.json] [CONFIG ...]

CONFIG is WORKLOAD:PRECISION:BATCH (e.g. bert-base-squad:bf16:160; a workload may be a user workload path,
examples/ssd300.py:build); without any, the default list below.
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
from collectors.core.nvml_sampler import INTERVAL_S, NvmlSampler  # noqa: E402
from collectors.workloads import load_workload  # noqa: E402
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model  # noqa: E402

DEFAULT = ("resnet50:bf16:256", "resnet50:tf32:256", "examples/bert_squad.py:build:bf16:160",
           "examples/bert_squad.py:build:tf32:160", "examples/bert_squad.py:build_large:bf16:64",
           "examples/ssd300.py:build:bf16:256", "examples/transformer_xl.py:build:bf16:48", "gpt-small:bf16:32",
           "examples/dlrm_small.py:build:bf16:16384")
WARMUP_S = 3.0


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"median": statistics.median(ordered), "p10": pick(0.1), "p90": pick(0.9), "n": len(ordered)}


def parse(config: str) -> tuple[str, str, int]:
    workload, precision, batch = config.rsplit(":", 2)
    return workload, precision, int(batch)


def measure(config: str, device: torch.device, seconds: float) -> dict:
    name, precision, batch = parse(config)
    with device:
        workload = load_workload(name)
    variant = Variant()
    with precision_mode(precision, device, variant):
        step = build_step(workload, prepare_model(workload, device, variant), precision, batch, device, variant)
        start = time.perf_counter()
        while time.perf_counter() - start < WARMUP_S:
            step.run()
        torch.cuda.synchronize(device)
        steps = []
        with NvmlSampler(device.index or 0) as sampler:   # sampling only while the timed steps run
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                a = time.perf_counter()
                step.run()
                torch.cuda.synchronize(device)
                steps.append(time.perf_counter() - a)
    del step
    torch.cuda.empty_cache()
    return {"config": config, "workload": workload.name, "precision": precision, "batch": batch,
            "steps": len(steps), "step_s": statistics.median(steps),
            "sm_clock_mhz": quantiles(sampler.sm_clock_mhz), "power_w": quantiles(sampler.power)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", default=list(DEFAULT))
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--out", type=Path, default=Path("step-clocks.json"))
    args = parser.parse_args()
    device = torch.device("cuda")
    with NvmlSampler(device.index or 0) as idle:
        time.sleep(1.0)
    out = {"gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "period_s": INTERVAL_S,
           "warmup_s": WARMUP_S, "seconds": args.seconds,
           "idle": {"sm_clock_mhz": quantiles(idle.sm_clock_mhz), "power_w": quantiles(idle.power)},
           "configs": []}
    for config in args.configs:
        try:
            row = measure(config, device, args.seconds)
        except Exception as exc:  # noqa: BLE001 — one configuration's failure must not lose the others
            row = {"config": config, "error": f"{type(exc).__name__}: {exc}"[:300]}
        out["configs"].append(row)
        print(json.dumps({k: row[k] for k in row if k not in ("workload",)}), flush=True)
        args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
