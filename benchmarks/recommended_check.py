"""The plan's answer, timed: each workload at exactly the settings `gpuplan plan` recommends, on the GPU it
recommends them for, beside the figure and range the plan expects there.

The plan's expected figure is a measured configuration (a trial or a sweep point) or, on a GPU it did not
measure, a prediction; until 2026-11-27 it could also be a trial's gain carried to another batch, which this
found 26 % and 43 % off. This times the configuration the plan names (precision, batch, torch.compile,
channels_last, cuDNN autotuning, the allocator) with the collector's own step and timer
(collectors/workloads/training.py, sweep.py's step plan), each in a fresh process, in `--passes` passes (a
later pass only where `--budget-s` allows), so another machine of the same GPU type checks the figure. The
figure compared is the GPU's (the plan's figure before the measured loader's cap).

    # here (needs the planner): what each plan recommends on each measured GPU, and what it expects there
    python3 benchmarks/recommended_check.py configs --out recommended-configs.json
    # on the GPU machine (torch + the standard library): time the configurations of this GPU
    python3 benchmarks/recommended_check.py run --configs recommended-configs.json --out timed.json
    # here: the timed figures beside the expected ones (Markdown; docs/accuracy.md's generated block reads the
    # committed runs, results/h100-80gb/diagnostics/recommended-check-2026-11-27/, through the same functions)
    python3 benchmarks/recommended_check.py compare timed.json --configs recommended-configs.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MACHINES = ("h100-80gb", "h200")
# Files holding more than one workload: which function builds which (every other file's is `build`).
FUNCTIONS = {"bert-large-squad": "build_large", "vit-b16": "build_b16"}
CONFIG_TIMEOUT_S = 300


def workload_spec(name: str, source: str) -> str:
    return name if source.startswith("built-in") else f"{source}:{FUNCTIONS.get(name, 'build')}"


def cmd_configs(args: argparse.Namespace) -> int:
    """Every measured machine's plan, predicting the other measured GPU too: one row per (plan, GPU, workload)."""
    from gpuplan_schema.results import load_machine
    from planner.plan.plan import build_plan

    machines = [load_machine(args.results / m) for m in MACHINES]
    gpus = [m.gpu_name for m in machines]
    rows = []
    for machine in machines:
        plan = build_plan(machine, None, None, machines)
        sources = {w.workload: w.source for w in machine.workloads}
        for target in (t for t in plan.targets if t.gpu_count == 1 and t.gpu.name in _catalog_names(gpus)):
            for workload, s in sorted(target.settings.items()):
                expected = target.gpu_expected.get(workload) or target.expected.get(workload)
                if expected is None or not s.batch or workload not in sources:
                    continue
                rows.append({
                    "plan_from": machine.machine, "gpu": target.gpu.name, "how": expected.how,
                    "workload": workload, "spec": workload_spec(workload, sources[workload]),
                    "precision": s.precision, "batch": s.batch, "compile": s.torch_compile,
                    "channels_last": s.channels_last, "cudnn_benchmark": s.cudnn_benchmark,
                    "expandable_segments": bool(s.allocator and "expandable_segments" in s.allocator),
                    "expected_per_s": expected.throughput_per_s, "low_per_s": expected.low_per_s,
                    "high_per_s": expected.high_per_s, "unit": expected.unit, "bound": expected.bound,
                    "basis": expected.basis})
    args.out.write_text(json.dumps({"machines": list(MACHINES), "rows": rows}, indent=1) + "\n")
    print(f"{len(rows)} rows ({len({_key(r) for r in rows})} configurations to time) → {args.out}")
    return 0


def _catalog_names(gpu_names: list[str | None]) -> set[str]:
    from planner.specs import match_gpu

    return {g.name for n in gpu_names if n and (g := match_gpu(n))}


def _key(row: dict) -> tuple:
    return (row["gpu"], row["workload"], row["spec"], row["precision"], row["batch"], row["compile"],
            row["channels_last"], row["cudnn_benchmark"], row["expandable_segments"])


def cmd_run(args: argparse.Namespace) -> int:
    """Time this GPU's configurations, each in its own process (a compiled model, an out-of-memory error or a
    CUDA fault never reaches the next), in `PASSES` passes over all of them (a drifting clock or host moves
    every configuration alike)."""
    import torch

    rows = json.loads(args.configs.read_text())["rows"]
    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    gpu = args.gpu or next((r["gpu"] for r in rows if r["gpu"].split()[0] in name), None)
    configs = list({_key(r): r for r in rows if r["gpu"] == gpu}.values())
    if not configs:
        print(f"recommended_check: no configuration for {name!r} (--gpu {gpu!r}) in {args.configs}", file=sys.stderr)
        return 2
    timed: dict[tuple, list[dict]] = {_key(c): [] for c in configs}
    if args.out.exists():  # a run cut short goes on: what it timed is kept, each pass resumes where it stopped
        for c in json.loads(args.out.read_text())["configurations"]:
            if _key(c) in timed:  # a configuration this file no longer asks for is left out, not carried along
                timed[_key(c)] = c["timed"]
    started = time.perf_counter()
    for n in range(args.passes):
        for i, config in enumerate(configs, 1):
            if len(timed[_key(config)]) > n:
                continue
            if n and time.perf_counter() - started > args.budget_s:
                break  # a later pass only repeats: it stops where the budget ends, the first never does
            result = _run_one(config)
            timed[_key(config)].append(result)
            print(f"pass {n + 1}/{args.passes} [{i}/{len(configs)}] {config['workload']} {config['precision']} batch "
                  f"{config['batch']}{' compiled' if config['compile'] else ''}: {result.get('status')} "
                  f"{result.get('throughput_per_s') or result.get('reason', '')} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
            args.out.write_text(json.dumps(_document(gpu, name, configs, timed), indent=1) + "\n")  # kept if cut
    return 0


def _run_one(config: dict) -> dict:
    try:
        done = subprocess.run([sys.executable, __file__, "one", json.dumps(config)], capture_output=True, text=True,
                              timeout=CONFIG_TIMEOUT_S, cwd=Path(__file__).resolve().parents[1])
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"over {CONFIG_TIMEOUT_S} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return {"status": "error", "reason": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(lines[-1])


def _document(gpu: str, device_name: str, configs: list[dict], timed: dict[tuple, list[dict]]) -> dict:
    import torch

    return {"kind": "recommended-check", "gpu": gpu, "device_name": device_name, "host_cpu": _host_cpu(),
            "torch": torch.__version__, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "configurations": [{**c, "timed": timed[_key(c)]} for c in configs]}


def _host_cpu() -> str | None:
    try:
        return next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name")), None)
    except OSError:
        return None


def cmd_one(args: argparse.Namespace) -> int:
    """One configuration, timed as the collector times a main-batch trial; prints one JSON line."""
    import torch

    from collectors.core.device import error_line, is_oom
    from collectors.core.timing import time_callable
    from collectors.workloads import load_workload
    from collectors.workloads.sweep import GPU_STEP_PLAN
    from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model

    c = json.loads(args.config)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # the CPU: a smoke test only
    variant = Variant(compile=c["compile"], channels_last=c["channels_last"],
                      cudnn_benchmark=c["cudnn_benchmark"] is not False, expandable_segments=c["expandable_segments"])
    try:
        with device:
            workload = load_workload(c["spec"])
        with precision_mode(c["precision"], device, variant):
            step = build_step(workload, prepare_model(workload, device, variant), c["precision"], c["batch"], device,
                              variant)
            t0 = time.perf_counter()
            step.run()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            first = time.perf_counter() - t0
            seconds = time_callable(step.run, device, GPU_STEP_PLAN)
        result = {"status": "ok", "step_s": seconds.median, "rel_iqr": seconds.rel_iqr, "samples": seconds.n,
                  "throughput_per_s": c["batch"] / seconds.median, "first_step_s": first,
                  "peak_allocated_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
                  # cudaMalloc retries after freeing the cache: a step at the edge of memory pays them every time
                  "alloc_retries": torch.cuda.memory_stats(device).get("num_alloc_retries") if device.type == "cuda"
                  else None}
    except Exception as e:  # noqa: BLE001 - a workload may raise anything: record it
        result = {"status": "oom" if is_oom(e) else "error", "reason": error_line(e)}
    print(json.dumps(result))
    return 0


def timings(paths: list[Path]) -> dict[tuple, float]:
    """Configuration → its figure: the median of the passes that ran (a later file's wins where two timed it)."""
    out: dict[tuple, float] = {}
    for path in paths:
        for c in json.loads(path.read_text())["configurations"]:
            ok = [t["throughput_per_s"] for t in c["timed"] if t.get("status") == "ok"]
            if ok:
                out[_key(c)] = statistics.median(ok)
    return out


def compare(rows: list[dict], *lends: dict[tuple, float]) -> list[dict]:
    """Each plan row with what each lend timed for its configuration (None: not timed there)."""
    out = []
    for row in rows:
        timed = [lend.get(_key(row)) for lend in lends]
        if any(t is not None for t in timed):
            out.append({**row, "timed": timed})
    return out


def settings_words(row: dict) -> str:
    parts = [row["precision"], f"batch {row['batch']}", "compile" if row["compile"] else "",
             "channels_last" if row["channels_last"] else "", "expandable" if row["expandable_segments"] else ""]
    return ", ".join(p for p in parts if p)


def markdown(compared: list[dict], lend_names: list[str]) -> str:
    """A table of the rows and one line per lend: how many timed figures fell in the plan's range, the errors."""
    from planner.units import short_rate  # the planner's way of writing a rate (compare runs beside the planner)

    head = ["plan from", "GPU", "how", "workload", "settings", "expected (range)",
            *(f"timed, {n}" for n in lend_names), "expected ÷ timed − 1"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in compared:
        cells = [f"{short_rate(t)}{'' if r['low_per_s'] <= t <= r['high_per_s'] else ' (out)'}" if t is not None
                 else "–" for t in r["timed"]]
        errors = ", ".join(f"{r['expected_per_s'] / t - 1:+.1%}" for t in r["timed"] if t is not None)
        lines.append(f"| {r['plan_from']} | {r['gpu']} | {r['how']} | {r['workload']} | {settings_words(r)} | "
                     f"{short_rate(r['expected_per_s'])} "
                     f"({short_rate(r['low_per_s'])}–{short_rate(r['high_per_s'])}) | "
                     + " | ".join(cells) + f" | {errors} |")
    lines.append("")
    for i, name in enumerate(lend_names):
        pairs = [(r, r["timed"][i]) for r in compared if r["timed"][i] is not None]
        if not pairs:
            continue
        errors = [abs(r["expected_per_s"] / t - 1) for r, t in pairs]
        inside = sum(r["low_per_s"] <= t <= r["high_per_s"] for r, t in pairs)
        lines.append(f"- {name}: {len(pairs)} plan rows timed, {inside} inside the plan's range; "
                     f"|expected ÷ timed − 1| median {statistics.median(errors):.1%}, largest {max(errors):.1%}.")
    return "\n".join(lines) + "\n"


def cmd_compare(args: argparse.Namespace) -> int:
    """Markdown: each plan row's expected figure beside what was timed for its configuration."""
    rows = json.loads(args.configs.read_text())["rows"]
    print(markdown(compare(rows, timings(args.timed)), ["this run"]), end="")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("configs", help="what each plan recommends and expects (needs the planner)")
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument("--out", type=Path, default=Path("recommended-configs.json"))
    p = sub.add_parser("run", help="time this GPU's configurations (on the GPU machine)")
    p.add_argument("--configs", type=Path, default=Path("recommended-configs.json"))
    p.add_argument("--gpu", help="the catalog name of this GPU (default: from the device name)")
    p.add_argument("--out", type=Path, default=Path("recommended-check.json"))
    p.add_argument("--passes", type=int, default=2, help="passes over every configuration (default 2)")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="start no configuration of a later pass after this many seconds (default 420)")
    p = sub.add_parser("one", help="time one configuration (JSON) and print the result (used by run)")
    p.add_argument("config")
    p = sub.add_parser("compare", help="timed figures beside the plan's (Markdown)")
    p.add_argument("timed", type=Path, nargs="+")
    p.add_argument("--configs", type=Path, default=Path("recommended-configs.json"))
    args = parser.parse_args()
    return {"configs": cmd_configs, "run": cmd_run, "one": cmd_one, "compare": cmd_compare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
