"""Why does a host-bound step's time move 20-40 % between repeats on one GPU machine?

Runs on the GPU host with torch and the standard library (run from the repository root):

    python3 benchmarks/host_noise.py [--out FILE.json] [--seconds-per-condition S]

For a few host-bound training steps (vit-tiny bf16 b64, gpt-small bf16 b2, sensor-cnn bf16 b1024) it
times rounds of steps under conditions that each remove one suspect, and records beside every round
what the machine did meanwhile:

    base        as the collector runs today
    gc_off      Python's cyclic garbage collector frozen and disabled (a gen-2 pass over torch's
                objects costs milliseconds)
    pinned      the main thread pinned to one core (a vCPU migration or a busy sibling)
    threads1    torch.set_num_threads(1) (intra-op threads spinning on cores the main thread needs)
    nvml        the collector's NVML sampler thread running (the GIL handed to it every 20 ms)
    base2       as `base`, last: drift over the run

Per round: the median step when steps run back to back (CUDA events), the median host-issue time per
step (call to return, the device drained before), the main thread's CPU time over its wall time while
issuing (below 1: the thread was not running: preempted, waiting for the GIL or a page), the VM's steal
time and the cgroup's throttled time (/proc/stat, cpu.stat), involuntary context switches. Then the
dispatch micro-benchmark of the ceilings collector, repeated. A table last; the JSON has every sample.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.ceilings.dispatch import measure_dispatch  # noqa: E402
from collectors.core.nvml_sampler import NvmlSampler  # noqa: E402
from collectors.workloads import load_workload  # noqa: E402
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model  # noqa: E402

CASES = (("examples/vit_tiny.py:build", "bf16", 64), ("gpt-small", "bf16", 2),
         ("examples/user_workload.py:build", "bf16", 1024))
CONDITIONS = ("base", "gc_off", "pinned", "threads1", "nvml", "base2")
ROUNDS = 3


def steal_ticks() -> int:
    """The whole VM's stolen CPU ticks so far (/proc/stat's 8th field of `cpu`)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return int(fields[8]) if len(fields) > 8 else 0


def throttled_us() -> int | None:
    for path in ("/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/cpu,cpuacct/cpu.stat", "/sys/fs/cgroup/cpu/cpu.stat"):
        try:
            for line in Path(path).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key in ("throttled_usec", "throttled_time"):
                    return int(value) // (1000 if key == "throttled_time" else 1)
        except OSError:
            continue
    return None


def machine_facts() -> dict:
    facts: dict = {"nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
                   "loadavg": Path("/proc/loadavg").read_text().split()[:3], "torch_threads": torch.get_num_threads()}
    for path in ("/sys/fs/cgroup/cpu.max", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"):
        try:
            facts[path] = Path(path).read_text().strip()
        except OSError:
            facts[path] = None
    mhz = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
           if line.startswith("cpu MHz")]
    facts["cpu_mhz_min_max"] = (min(mhz), max(mhz)) if mhz else None
    facts["model"] = next((line.split(":")[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                           if line.startswith("model name")), None)
    return facts


def one_round(run: Callable[[], None], steps: int) -> dict:
    """`steps` host-issue samples and one back-to-back window of `steps` steps, with what the VM did."""
    usage0, steal0, thr0 = resource.getrusage(resource.RUSAGE_SELF), steal_ticks(), throttled_us()
    issue, cpu_share = [], []
    for _ in range(steps):
        torch.cuda.synchronize()
        w0, c0 = time.perf_counter(), time.thread_time()
        run()
        w1, c1 = time.perf_counter(), time.thread_time()
        torch.cuda.synchronize()
        issue.append(w1 - w0)
        cpu_share.append((c1 - c0) / (w1 - w0))
    back = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        back.append(start.elapsed_time(end) / 1e3)
    usage1, thr1 = resource.getrusage(resource.RUSAGE_SELF), throttled_us()
    return {"step_ms": statistics.median(back) * 1e3, "step_ms_min_max": (min(back) * 1e3, max(back) * 1e3),
            "issue_ms": statistics.median(issue) * 1e3, "issue_ms_min_max": (min(issue) * 1e3, max(issue) * 1e3),
            "thread_cpu_over_wall": statistics.median(cpu_share), "steal_ticks": steal_ticks() - steal0,
            "throttled_ms": None if thr0 is None or thr1 is None else (thr1 - thr0) / 1e3,
            "involuntary_switches": usage1.ru_nivcsw - usage0.ru_nivcsw,
            "voluntary_switches": usage1.ru_nvcsw - usage0.ru_nvcsw}


def condition(name: str, run: Callable[[], None], steps: int) -> list[dict]:
    saved_threads, saved_affinity = torch.get_num_threads(), os.sched_getaffinity(0)
    sampler = NvmlSampler(torch.cuda.current_device()) if name == "nvml" else None
    if name == "gc_off":
        gc.collect()
        gc.freeze()
        gc.disable()
    if name == "pinned":
        os.sched_setaffinity(0, {sorted(saved_affinity)[1 if len(saved_affinity) > 1 else 0]})
    if name == "threads1":
        torch.set_num_threads(1)
    try:
        if sampler:
            sampler.__enter__()
        return [one_round(run, steps) for _ in range(ROUNDS)]
    finally:
        if sampler:
            sampler.__exit__(None, None, None)
        gc.enable()
        gc.unfreeze()
        os.sched_setaffinity(0, saved_affinity)
        torch.set_num_threads(saved_threads)


def case(spec: str, precision: str, batch: int, seconds: float) -> dict:
    workload = load_workload(spec)
    device = torch.device("cuda")
    variant = Variant(cudnn_benchmark=False)
    with precision_mode(precision, device, variant):
        model = prepare_model(workload, device, variant)
        step = build_step(workload, model, precision, batch, device, variant)
        for _ in range(5):
            step.run()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            step.run()
        torch.cuda.synchronize()
        per_step = (time.perf_counter() - t0) / 5
        steps = max(10, min(200, round(seconds / ROUNDS / 2 / per_step)))
        out = {"workload": workload.name, "precision": precision, "batch": batch, "steps_per_round": steps,
               "conditions": {name: condition(name, step.run, steps) for name in CONDITIONS}}
    del step, model
    torch.cuda.empty_cache()
    return out


def dispatch_repeats(n: int) -> list[dict]:
    out = []
    for _ in range(n):
        d = measure_dispatch(torch.device("cuda"), None)
        out.append({"op_issue_us": d.op_issue_s.median * 1e6, "per_kernel_us": d.per_kernel_s * 1e6
                    if d.per_kernel_s else None, "steal_ticks": steal_ticks()})
    return out


def table(result: dict) -> str:
    lines = [f"machine: {json.dumps(result['machine'])}"]
    for c in result["cases"]:
        lines.append(f"\n{c['workload']} {c['precision']} b{c['batch']} ({c['steps_per_round']} steps a round)")
        lines.append(f"  {'condition':<9} {'step ms (rounds)':<24} {'issue ms (rounds)':<24} {'cpu/wall':>8} "
                     f"{'steal':>6} {'thr ms':>7} {'invol':>6} {'vol':>6}")
        for name, rounds in c["conditions"].items():
            steps = " ".join(f"{r['step_ms']:.2f}" for r in rounds)
            issue = " ".join(f"{r['issue_ms']:.2f}" for r in rounds)
            cpu = statistics.median(r["thread_cpu_over_wall"] for r in rounds)
            steal = sum(r["steal_ticks"] for r in rounds)
            thr = sum(r["throttled_ms"] or 0 for r in rounds)
            invol = sum(r["involuntary_switches"] for r in rounds)
            vol = sum(r["voluntary_switches"] for r in rounds)
            lines.append(f"  {name:<9} {steps:<24} {issue:<24} {cpu:8.2f} {steal:6d} {thr:7.1f} {invol:6d} {vol:6d}")
    lines.append("\ndispatch repeats (µs per tiny add / per kernel of a Linear step): " + ", ".join(
        f"{d['op_issue_us']:.2f}/{d['per_kernel_us']:.1f}" for d in result["dispatch"]))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write every sample here as JSON")
    parser.add_argument("--seconds-per-condition", type=float, default=4.0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("host_noise: needs a CUDA GPU", file=sys.stderr)
        return 2
    result = {"machine": machine_facts(), "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
              "cases": [], "dispatch": []}
    result["dispatch"] = dispatch_repeats(5)
    for spec, precision, batch in CASES:
        started = time.perf_counter()
        result["cases"].append(case(spec, precision, batch, args.seconds_per_condition))
        print(f"{spec}: {time.perf_counter() - started:.0f} s", flush=True)
    result["dispatch"] += dispatch_repeats(5)
    result["machine_after"] = machine_facts()
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
