"""Where does torch.compile's gain come from on this GPU? A GPU-bound step that compiling speeds up (gpt-small
bf16 b32 on an H100 or H200) gains it in kernels the eager per-op split cannot show.

Profiles the eager and the compiled step of one configuration (3 steps each, after warm-up) and sums the device
time of their kernels by family: matmul (cuBLAS/CUTLASS/nvjet GEMMs), attention (flash/efficient SDPA kernels),
Triton (the compiler's fused kernels), and the rest. Runs on the GPU host with torch and the standard library:

    python3 benchmarks/compile_kernels.py [--workload gpt-small] [--batch 32] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.core.host_time import device_events  # noqa: E402
from collectors.workloads import load_workload  # noqa: E402
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model  # noqa: E402

STEPS = 3
FAMILIES = (("attention", ("flash", "fmha", "attention", "efficient")),
            ("matmul", ("gemm", "cutlass", "nvjet", "sm90_xmma", "sm80_xmma", "cublas")),
            ("triton", ("triton",)))


def family(name: str) -> str:
    low = name.lower()
    return next((fam for fam, keys in FAMILIES if any(k in low for k in keys)), "other")


def kernel_time(run, device: torch.device) -> dict:  # noqa: ANN001
    for _ in range(3):
        run()
    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            run()
        torch.cuda.synchronize(device)
    by: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    top: dict[str, float] = defaultdict(float)
    for e in device_events(prof):
        by[family(e.name())] += e.duration_ns() / 1e6 / STEPS
        count[family(e.name())] += 1
        top[e.name()[:90]] += e.duration_ns() / 1e6 / STEPS
    return {"ms_by_family": dict(by), "kernels_by_family": {k: v // STEPS for k, v in count.items()},
            "total_ms": sum(by.values()), "top": sorted(top.items(), key=lambda kv: -kv[1])[:12]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="gpt-small")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--out", type=Path, default=Path("compile-kernels.json"))
    args = parser.parse_args()
    device = torch.device("cuda")
    out = {"gpu": torch.cuda.get_device_name(device), "torch": torch.__version__, "workload": args.workload,
           "batch": args.batch, "precision": args.precision}
    for name, variant in (("eager", Variant()), ("compile", Variant(compile=True))):
        with device:
            workload = load_workload(args.workload)
        with precision_mode(args.precision, device, variant):
            step = build_step(workload, prepare_model(workload, device, variant), args.precision, args.batch,
                              device, variant)
            out[name] = kernel_time(step.run, device)
        print(name, json.dumps({k: round(v, 2) for k, v in out[name]["ms_by_family"].items()}),
              f"total {out[name]['total_ms']:.1f} ms", flush=True)
        for kname, ms in out[name]["top"][:8]:
            print(f"   {ms:7.2f} ms  {kname}")
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
