"""Where a training step's host time goes, op by op: what the trace-only plan's host model (planner/trace/learn.py
`fit_host`: a cost per aten call of each phase) cannot see from the call counts alone (issue 41).

The measured issue time of dlrm-small (213 aten calls) is 11.5 ms on the H200, twice the 6.0 ms its calls predict,
while vit-tiny and vit-b16, which issue the same 1,551 calls, measured 1.55x apart on one machine. Each case is built
as the collector builds it (collectors/workloads/training.py `build_step`, cuDNN autotuning off where it convolves),
warmed up, then:

- `issue_ms`: the host's seconds from the step's call to its return, the GPU idle before (as collectors/core/
  host_time.py measures it), and `step_ms`: CUDA-event step time, both medians of STEPS steps without a profiler;
- under torch.profiler (CPU and CUDA, one step after warm-up): every CUDA runtime call the host made (cudaLaunchKernel,
  cudaMemcpyAsync, cudaStreamSynchronize, cudaMalloc, cudaFree, ...) summed by name: count and host ms; the aten ops
  by host self time and by total time (count, ms); the GPU's busy ms; the wall time of the profiled step.

    OUT=/path python benchmarks/gpu_host_ops.py [--cases NAME,PRECISION,BATCH ...]

torch and the standard library only; one GPU, about 4 s a case (a CPU runs it too: the test's small case).
Writes $OUT/host-ops.json after each case.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CASES = ("dlrm-small,bf16,16384", "dlrm-small,fp32,16384", "vit-tiny,bf16,16", "vit-b16,bf16,8", "gpt-small,bf16,1",
         "transformer-xl-base,bf16,6", "bert-base-squad,bf16,8")
WARMUP, STEPS, TOP = 5, 11, 25


def _spec(name: str) -> str:
    from planner.trace.references import REFERENCE_SPECS
    return name if ".py:" in name else REFERENCE_SPECS[name]


def _summed(rows: dict[str, list[float]], top: int = TOP) -> list[dict]:
    out = [{"name": k, "count": len(v), "ms": sum(v) * 1e3} for k, v in rows.items()]
    return sorted(out, key=lambda r: r["ms"], reverse=True)[:top]


def one_case(case: str) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from collectors.core.timing import Timer, synchronize
    from collectors.workloads import load_workload
    from collectors.workloads.sweep_plan import untuned
    from collectors.workloads.training import build_step, precision_mode, prepare_model
    name, precision, batch = case.split(",")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")   # a CPU: the test's small case
    workload = load_workload(_spec(name))
    variant = untuned(workload)
    with precision_mode(precision, device, variant):
        model = prepare_model(workload, device, variant)
        step = build_step(workload, model, precision, int(batch), device, variant)
        for _ in range(WARMUP):
            step.run()
        synchronize(device)
        issue, steps = [], []
        timer = Timer(device)
        for _ in range(STEPS):
            synchronize(device)
            started, t0 = timer.start(), time.perf_counter()
            step.run()
            issue.append(time.perf_counter() - t0)
            steps.append(timer.stop(started))
        synchronize(device)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            t0 = time.perf_counter()
            step.run()
            profiled_issue = time.perf_counter() - t0
            synchronize(device)
    runtime, self_ms, total_ms = defaultdict(list), defaultdict(list), defaultdict(list)
    gpu_s = 0.0
    cuda = torch.autograd.DeviceType.CUDA
    for e in prof.events():
        if e.device_type == cuda:
            gpu_s += e.device_time_total / 1e6 if hasattr(e, "device_time_total") else 0.0
            continue
        if e.name.startswith("cuda") or e.name.startswith("cu"):
            runtime[e.name].append(e.cpu_time_total / 1e6)
        elif e.name.startswith("aten::"):
            self_ms[e.name].append(e.self_cpu_time_total / 1e6)
            if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"):
                total_ms[e.name].append(e.cpu_time_total / 1e6)   # outermost aten ops: what Python or autograd called
    return {"case": case, "issue_ms": statistics.median(issue) * 1e3, "step_ms": statistics.median(steps) * 1e3,
            "issue_ms_all": [round(s * 1e3, 3) for s in issue], "profiled_issue_ms": profiled_issue * 1e3,
            "profiled_gpu_ms": gpu_s * 1e3, "runtime_calls": _summed(runtime, 40), "aten_self": _summed(self_ms),
            "aten_outer_total": _summed(total_ms)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), help="NAME,PRECISION,BATCH (default: %(default)s)")
    args = parser.parse_args(argv)
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for case in args.cases:
        try:
            results.append(one_case(case))
            r = results[-1]
            print(f"{case}: issue {r['issue_ms']:.2f} ms, step {r['step_ms']:.2f} ms, "
                  f"top runtime {[(x['name'], x['count'], round(x['ms'], 2)) for x in r['runtime_calls'][:4]]}",
                  flush=True)
        except Exception as e:  # one case failing keeps the others
            results.append({"case": case, "error": f"{type(e).__name__}: {e}"[:500], "trace": traceback.format_exc()})
            print(f"{case}: {results[-1]['error']}", flush=True)
        (out_dir / "host-ops.json").write_text(json.dumps({"cases": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
