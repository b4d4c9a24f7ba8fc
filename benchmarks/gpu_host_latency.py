"""Our host's time for EfficientNet-B0's inference at small batches, as DLE's README times it on a DGX-1 and a DGX
A100 (issue 39): at batch 1–16 the step is the host's issue time on all three, so the latencies say how much slower
than ours a DGX host issues this network (DLE: DGX-1 13.15 ms FP32 / 17.19 ms AMP at batch 1, DGX A100 9.33 / 11.21).

Each configuration: eval mode, no_grad, a synchronised forward per iteration (DLE's benchmark_inference), 50 warm-up
and 200 timed iterations; FP32 (TF32 on, NCHW) and AMP (fp16 autocast, NHWC). Writes $OUT/host-latency.json.
Run: `OUT=$OUT python benchmarks/gpu_host_latency.py` (about a minute on an H200).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples.efficientnet_b0 import EfficientNet  # noqa: E402

BATCHES = (1, 2, 4, 8, 16)


def latency(model: torch.nn.Module, batch: int, amp: bool, nhwc: bool) -> dict:
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    if nhwc:
        x = x.to(memory_format=torch.channels_last)
    times = []
    with torch.no_grad(), torch.autocast("cuda", torch.float16, enabled=amp):
        for i in range(250):
            torch.cuda.synchronize()
            start = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            if i >= 50:
                times.append(time.perf_counter() - start)
    return {"batch": batch, "amp": amp, "nhwc": nhwc, "median_s": statistics.median(times),
            "mean_s": statistics.fmean(times), "p90_s": sorted(times)[int(0.9 * len(times))]}


def main() -> int:
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    rows = []
    for amp, nhwc in ((False, False), (True, True)):
        model = EfficientNet().cuda().eval()
        if nhwc:
            model = model.to(memory_format=torch.channels_last)
        rows += [latency(model, b, amp, nhwc) for b in BATCHES]
        print(rows[-len(BATCHES):])
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    (out / "host-latency.json").write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                                       "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
