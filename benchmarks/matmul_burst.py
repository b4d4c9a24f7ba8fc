"""How a dense matmul's throughput changes over a sustained run (clock and power response).

Run on a GPU host: `python3 benchmarks/matmul_burst.py`. Prints, for several shapes, the
throughput of 5-product samples at points in a 2-second run with the SM clock and power draw
NVML read at that moment. This is why the ceilings collector times short bursts per shape.
"""
import time

import pynvml
import torch


def run(dt, s, k=None, secs=2.0):
    k = k or s
    a = torch.randn(s, k, device="cuda", dtype=dt)
    b = torch.randn(k, s, device="cuda", dtype=dt)
    out = torch.empty(s, s, device="cuda", dtype=dt)
    for _ in range(3):
        torch.mm(a, b, out=out)
    torch.cuda.synchronize()
    t0, res = time.time(), []
    while time.time() - t0 < secs:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(5):
            torch.mm(a, b, out=out)
        e1.record()
        e1.synchronize()
        tflops = 2 * s * s * k * 5 / (e0.elapsed_time(e1) / 1e3) / 1e12
        res.append((time.time() - t0, tflops, pynvml.nvmlDeviceGetClockInfo(H, pynvml.NVML_CLOCK_SM),
                    pynvml.nvmlDeviceGetPowerUsage(H) / 1e3))
    pts = [res[0], res[1], res[len(res) // 8], res[len(res) // 4], res[len(res) // 2], res[-1]]
    print(dt, s, k, " | ".join(f"t={t:.3f} {tf:.0f}TF {c}MHz {p:.0f}W" for t, tf, c, p in pts), flush=True)


if __name__ == "__main__":
    pynvml.nvmlInit()
    H = pynvml.nvmlDeviceGetHandleByIndex(0)
    for s in (8192, 6144, 4096):
        run(torch.bfloat16, s)
        time.sleep(1.0)
    run(torch.bfloat16, 8192, 2048)
    time.sleep(1)
    run(torch.bfloat16, 16384, 2048)
