"""Points in NVIDIA DeepLearningExamples' own configuration, for the DLE check (planner/check/dle_points.py says
which and why): each configuration of benchmarks/dle_points_plan.json (a workload, precision, batch and tensor layout
of a published row) timed as the workloads collector times a trial (collectors/workloads/sweep.py `measure_point`:
FLOPs, bytes, host and GPU time), and, where the plan says so, profiled per operation at that precision and layout
as the roofline collector profiles one (collectors/roofline/collect.py `collect_roofline`). Runs on the GPU host
with torch and the standard library; benchmarks/gpu_dle_points.sh is the one device call that runs it:

    python3 benchmarks/dle_points.py --machine-dir results/h100-80gb [--out DIR] [--model NAME]... [--plan FILE]

DIR (default MACHINE-DIR/diagnostics/dle-points/) gets an environment document, `workload-<name>.json` (one point
per configuration, sweep `variant`; a convolutional network's variant names its layout, `contiguous` = NCHW or
`channels_last`, and runs without cuDNN autotuning, as the collector's other-precision trials do) and
`roofline-<name>-<precision>[-<layout>].json`. Each is saved as it completes. A rerun over the same DIR resumes: a
point already there is kept as it is (the same object, written back byte for byte), a profile already there with
every batch ok is not run again; one measured on another GPU type stops the run (exit 2). Ctrl-C (or `timeout -s
INT`) stops after the point running, everything finished saved (exit 130). The roofs come from MACHINE-DIR's
ceilings.json, as the machine's own profiles did.

On a CPU it tests the path only: the tiny builds, fp32 for tf32 and bf16 for fp16, batch 2 (documents say scale
`tiny`; the check never reads a CPU's).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch  # noqa: E402

from collectors.core.device import pick_device  # noqa: E402
from collectors.environment import collect as environment  # noqa: E402
from collectors.roofline import collect as roofline  # noqa: E402
from collectors.roofline.op_roofline import build_roofs  # noqa: E402
from collectors.workloads import Workload, WorkloadError  # noqa: E402
from collectors.workloads import collect as workloads  # noqa: E402
from collectors.workloads.sweep import Context, measure_point  # noqa: E402
from collectors.workloads.sweep_plan import has_convolution, instantiate, load_ceilings  # noqa: E402
from collectors.workloads.training import Variant  # noqa: E402
from gpuplan_schema.machine import sanitize_machine_id  # noqa: E402
from gpuplan_schema.payloads import RooflinePayload, WorkloadPayload, WorkloadPoint  # noqa: E402
from gpuplan_schema.progress import Progress  # noqa: E402
from gpuplan_schema.schema import DocumentError, build_document, load_document, save_document  # noqa: E402

PLAN = Path(__file__).resolve().parent / "dle_points_plan.json"
POINT_TIMEOUT_S = 120.0
CPU_PRECISION = {"tf32": "fp32", "fp16": "bf16"}  # a CPU's stand-ins (the path only)
CPU_BATCH = 2
EXIT_BAD_INPUT, EXIT_INTERRUPTED = 2, 130


@dataclass(frozen=True)
class Config:
    model: str
    spec: str
    precision: str
    batch: int
    layout: str
    profile: bool
    rows: tuple[str, ...]


def load_plan(path: Path, models: list[str], device: torch.device) -> list[Config]:
    """The plan's configurations (of `models` where given), as this device runs them."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for c in raw["configs"]:
        if models and c["model"] not in models:
            continue
        config = Config(c["model"], c["spec"], c["precision"], c["batch"], c["layout"], c["profile"], tuple(c["rows"]))
        if device.type == "cpu":
            config = replace(config, spec=c["tiny"], precision=CPU_PRECISION.get(config.precision, config.precision),
                             batch=CPU_BATCH)
        if all((o.spec, o.precision, o.batch, o.layout) != (config.spec, config.precision, config.batch, config.layout)
               for o in out):  # on a CPU several configurations become one
            out.append(config)
    return out


def variant_for(workload: Workload, layout: str) -> Variant:
    """The configuration's layout, said explicitly (the model object is shared by the points: a layout left to the
    workload would be the last point's), without cuDNN autotuning where there is a convolution."""
    if not has_convolution(workload):
        return Variant()
    return Variant(channels_last=layout == "channels_last", cudnn_benchmark=False)


def _earlier(path: Path) -> WorkloadPayload | None:
    try:
        payload = load_document(path).payload
    except (DocumentError, FileNotFoundError):
        return None
    return payload if isinstance(payload, WorkloadPayload) else None


def time_points(workload: Workload, configs: list[Config], out: Path, machine: str, ctx: Context) -> None:
    """Each configuration's point, the document saved after each (a cut run keeps what it timed)."""
    path = out / f"workload-{sanitize_machine_id(workload.name)}.json"
    earlier = _earlier(path)
    ctx.earlier = {p.key: p for p in (earlier.points if earlier else [])}
    started, before = time.perf_counter(), earlier.elapsed_s if earlier else 0.0
    points: list[WorkloadPoint] = []
    for c in configs:
        point = measure_point(workload, c.precision, c.batch, ctx, "variant", variant_for(workload, c.layout))
        points.append(point)
        kept = [p for p in (earlier.points if earlier else []) if p.key not in {q.key for q in points}]
        payload = _payload(workload, ctx.device, points + kept, before + time.perf_counter() - started,
                           len(points) == len(configs))
        save_document(build_document("workload", workloads.NAME, workloads.VERSION, machine, payload), path)
        step = f"{point.step_s.median * 1e3:.1f} ms, {point.throughput_per_s:.4g}/s" if point.step_s else \
            f"{point.status}: {point.reason}"
        print(f"{workload.name} {c.precision} {c.layout} batch {c.batch} ({point.variant}): {step}"
              f"{' (kept)' if point in ctx.earlier.values() else ''}  [{'; '.join(c.rows)}]", flush=True)


def _payload(workload: Workload, device: torch.device, points: list[WorkloadPoint], elapsed_s: float,
             complete: bool) -> WorkloadPayload:
    """The workload document's payload, as the workloads collector writes one (profile `dle-points`, no boundary)."""
    return WorkloadPayload(
        workload=workload.name, source=workload.source, unit=workload.unit, training=workload.training,
        device=device.type, profile="dle-points", parameters=sum(p.numel() for p in workload.model.parameters()),
        points=points, boundaries=[], elapsed_s=elapsed_s, tokens_per_sample=workload.tokens_per_sample,
        scale="tiny" if device.type == "cpu" else "reference", complete=complete)


def _profiled(path: Path, batches: list[int]) -> bool:
    try:
        payload = load_document(path).payload
    except (DocumentError, FileNotFoundError):
        return False
    done = {b.batch for b in payload.profiled() if b.status == "ok"} if isinstance(payload, RooflinePayload) else set()
    return set(batches) <= done


def profile(workload: Workload, configs: list[Config], device: torch.device, out: Path, machine: str,
            machine_dir: Path, progress: Progress) -> None:
    """One roofline document per (precision, layout) the plan profiles, its batches largest first (the first is the
    document's main one); one already complete is kept."""
    roofs = build_roofs(load_ceilings(machine_dir), device.type, str(machine_dir / "ceilings.json"))
    groups: dict[tuple[str, str], list[Config]] = {}
    for c in configs:
        if c.profile:
            groups.setdefault((c.precision, c.layout), []).append(c)
    for (precision, layout), group in groups.items():
        batches = sorted({c.batch for c in group}, reverse=True)
        name = group[0].spec
        suffix = "" if layout == "n/a" else f"-{layout}"
        path = out / f"roofline-{sanitize_machine_id(workload.name)}-{precision}{suffix}.json"
        if _profiled(path, batches):
            print(f"{path.name}: kept (batches {batches} profiled)", flush=True)
            continue
        payload = roofline.collect_roofline(name, roofs, device, progress, None, precision, batches,
                                            variant_for(workload, layout))
        save_document(build_document("roofline", roofline.NAME, roofline.VERSION, machine, payload), path)
        print(f"{path.name}: " + ", ".join(f"batch {b.batch} {b.status}" + (f" {b.step_s.median * 1e3:.1f} ms"
                                                                             if b.step_s else "")
                                           for b in payload.profiled()), flush=True)


def environment_checked(out: Path, machine: str) -> str | None:
    """This host's environment document, written once; why not where `out` holds one of another GPU type."""
    path = out / "environment.json"
    now = environment.collect_environment()
    if path.is_file():
        before = load_document(path).payload
        theirs, ours = [g.name for g in before.gpus], [g.name for g in now.gpus]
        if theirs[:1] != ours[:1]:
            return f"{path}: measured on {theirs[:1] or 'no GPU'}, this host has {ours[:1] or 'no GPU'}"
        return None
    save_document(build_document("environment", environment.NAME, environment.VERSION, machine, now), path)
    return None


def run(args: argparse.Namespace) -> int:
    device = pick_device()
    configs = load_plan(args.plan, args.model, device)
    out = args.out or args.machine_dir / "diagnostics" / "dle-points"
    out.mkdir(parents=True, exist_ok=True)
    machine = args.machine_dir.name
    problem = environment_checked(out, machine)
    if problem:
        print(f"dle_points.py: {problem}; give another --out", file=sys.stderr)
        return EXIT_BAD_INPUT
    ctx = Context(device, load_ceilings(args.machine_dir), point_timeout_s=POINT_TIMEOUT_S)
    by_model: dict[str, list[Config]] = {}
    for c in configs:
        by_model.setdefault(c.spec, []).append(c)
    failed = []
    with Progress("dle points", total=len(by_model)) as progress:
        for spec, group in by_model.items():
            try:
                workload = instantiate(spec, device)
            except WorkloadError as e:  # one line, and the other models still run
                failed.append(f"{spec}: {e}")
                print(f"dle_points.py: {spec}: not built ({e})", file=sys.stderr)
                continue
            time_points(workload, group, out, machine, ctx)
            profile(workload, group, device, out, machine, args.machine_dir, progress)
            progress.advance(spec)
    return 1 if failed else 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine-dir", type=Path, required=True, help="the machine folder with ceilings.json")
    parser.add_argument("--out", type=Path, help="where the documents go (default: MACHINE-DIR/diagnostics/dle-points)")
    parser.add_argument("--model", action="append", default=[], help="only this table model (repeat; default: all)")
    parser.add_argument("--plan", type=Path, default=PLAN, help=f"the configurations (default: {PLAN.name})")
    args = parser.parse_args(argv)
    if not (args.machine_dir / "ceilings.json").is_file():
        parser.error(f"{args.machine_dir}: no ceilings.json (the profiles' roofs come from it)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("dle_points.py: stopped; every finished point and profile is saved (the same command resumes)",
              file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
