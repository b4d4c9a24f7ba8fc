"""What clock does the GPU hold while it trains? The prediction model scales a step's below-roof time by the SM
count × boost clock of the two GPUs (docs/prediction-model.md § 1a), and the ceilings collector found the H100's
SM clock at 1.2–1.4 GHz under a sustained matmul (ceilings.json `sustained_sm_clock_hz`), far below the 1.98 GHz
boost. This measures the clock, board power and step of real training steps: each configuration warms up, then
runs steps for a few seconds while a thread reads NVML every 20 ms; the median, 10th and 90th percentile of the
samples taken while the steps ran are written out with the median step time.

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
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.workloads import load_workload  # noqa: E402
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model  # noqa: E402

DEFAULT = ("resnet50:bf16:256", "resnet50:tf32:256", "examples/bert_squad.py:build:bf16:160",
           "examples/bert_squad.py:build:tf32:160", "examples/bert_squad.py:build_large:bf16:64",
           "examples/ssd300.py:build:bf16:256", "examples/transformer_xl.py:build:bf16:48", "gpt-small:bf16:32",
           "examples/dlrm_small.py:build:bf16:16384")
WARMUP_S = 3.0
PERIOD_S = 0.02


class Sampler(threading.Thread):
    """Reads the SM clock (MHz) and board power (W) of one GPU every PERIOD_S until stopped."""

    def __init__(self, index: int) -> None:
        super().__init__(daemon=True)
        import pynvml as nv  # nvidia-ml-py
        nv.nvmlInit()
        self.nv, self.handle = nv, nv.nvmlDeviceGetHandleByIndex(index)
        self.samples: list[tuple[float, float, float]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        nv, h = self.nv, self.handle
        while not self.halt.is_set():
            self.samples.append((time.perf_counter(), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                                 nv.nvmlDeviceGetPowerUsage(h) / 1000))
            time.sleep(PERIOD_S)

    def between(self, t0: float, t1: float) -> list[tuple[float, float, float]]:
        return [s for s in self.samples if t0 <= s[0] <= t1]


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"median": statistics.median(ordered), "p10": pick(0.1), "p90": pick(0.9), "n": len(ordered)}


def parse(config: str) -> tuple[str, str, int]:
    workload, precision, batch = config.rsplit(":", 2)
    return workload, precision, int(batch)


def measure(config: str, sampler: Sampler, device: torch.device, seconds: float) -> dict:
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
        steps, t0 = [], time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            a = time.perf_counter()
            step.run()
            torch.cuda.synchronize(device)
            steps.append(time.perf_counter() - a)
        t1 = time.perf_counter()
    window = sampler.between(t0, t1)
    del step
    torch.cuda.empty_cache()
    return {"config": config, "workload": workload.name, "precision": precision, "batch": batch,
            "steps": len(steps), "step_s": statistics.median(steps),
            "sm_clock_mhz": quantiles([s[1] for s in window]), "power_w": quantiles([s[2] for s in window])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", default=list(DEFAULT))
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--out", type=Path, default=Path("step-clocks.json"))
    args = parser.parse_args()
    device = torch.device("cuda")
    sampler = Sampler(device.index or 0)
    sampler.start()
    time.sleep(1.0)
    idle = sampler.between(0, time.perf_counter())
    out = {"gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "period_s": PERIOD_S,
           "warmup_s": WARMUP_S, "seconds": args.seconds,
           "idle": {"sm_clock_mhz": quantiles([s[1] for s in idle]), "power_w": quantiles([s[2] for s in idle])},
           "configs": []}
    for config in args.configs:
        try:
            row = measure(config, sampler, device, args.seconds)
        except Exception as exc:  # noqa: BLE001 — one configuration's failure must not lose the others
            row = {"config": config, "error": f"{type(exc).__name__}: {exc}"[:300]}
        out["configs"].append(row)
        print(json.dumps({k: row[k] for k in row if k not in ("workload",)}), flush=True)
        args.out.write_text(json.dumps(out, indent=1))
    sampler.halt.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
