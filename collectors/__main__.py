"""`python -m collectors` (and `gpuplan collect`): run the collectors, write one document each.

Needs only torch, nvidia-ml-py (optional) and the standard library.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from collectors.ceilings import collect as ceilings
from collectors.core.budget import STANDARD_BUDGET_S, effective_budget, parse_duration
from collectors.core.children import kill_descendants
from collectors.core.collection import Collector, Options, Step, machine_folder, run_collection
from collectors.core.device import pick_device
from collectors.core.interrupt import resume_command
from collectors.core.outcome import left_to_measure, report_outcome
from collectors.core.profiles import PROFILES
from collectors.core.resume import same_ddp_batches, same_world, why_complete
from collectors.core.run_lock import LockHeld
from collectors.core.time_limit import DEFAULT_POINT_TIMEOUT_S
from collectors.dataloader import collect as dataloader_collector
from collectors.dataloader.jpeg_dataset import default_cache_root
from collectors.distributed import collect as distributed
from collectors.distributed import collectives, ddp, nodes
from collectors.environment import collect as environment
from collectors.roofline import collect as roofline
from collectors.trace import collect as trace
from collectors.workloads import BUILTIN, WorkloadError, load_workload, retime
from collectors.workloads import collect as workload_collector
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import DataloaderPayload, RooflinePayload, TracePayload, WorkloadPayload
from gpuplan_schema.progress import Progress

# How this command was started, for --help and the resume line: `gpuplan collect` runs this module
# with GPUPLAN_PROG set.
PROG = os.environ.get("GPUPLAN_PROG", "python3 -m collectors")

__all__ = ["COLLECTORS", "Collector", "Options", "build_parser", "main", "run_collection", "run_from_args"]
EXIT_FAILED, EXIT_BAD_INPUT = 1, 2


def _environment(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    yield "environment", environment.collect_environment()


def _ceilings(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    yield "ceilings", ceilings.collect_ceilings(progress)


def _workloads(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    names = options.workloads or workload_collector.DEFAULT_WORKLOADS
    yield from workload_collector.iter_workload_documents(names, options.profile, folder, pick_device(),
                                                          progress, options.fresh, options.point_timeout or None,
                                                          options.phase, options.deadline)


def _per_workload(prefix: str) -> Callable[[Options], dict[str, str | None]]:
    """The documents of a collector that writes one per workload: PREFIX-<name>.json."""
    def stems(options: Options) -> dict[str, str | None]:
        names = options.workloads or workload_collector.DEFAULT_WORKLOADS
        return {f"{prefix}-{sanitize_machine_id(workload_collector.workload_name(n))}": n for n in names}
    return stems


def _same_ddp(payload: Any, options: Options) -> bool:
    measured = {w.workload for w in payload.workloads}
    wanted = {workload_collector.workload_name(n) for n in options.workloads or ddp.DEFAULT_WORKLOADS}
    return (options.nodes is None and wanted <= measured and same_world(payload, options.gpus, options.dist_backend)
            and same_ddp_batches(payload, options.batches))


# What one workload's per-op profile (three batches) takes, with a margin: 7-10 s on an H100 (resnext101 44 M,
# 2026-11-27). A budget with less left skips the profile rather than be cut in it (a stop there waits for the
# profiler's native processing: a run whose budget ended in it ended 2.4 s past its 3 minutes).
ROOFLINE_NEEDS_S = 20.0


def _roofline_stems(options: Options) -> dict[str, str | None]:
    """The per-op profiles a run owes: each workload's, and on a GPU its extra precisions' (tf32) where the workloads
    document timed them, so that a run stopped between the two resumes with the second (an H200 run of
    transformer-xl-large stopped in its tf32 profile, and the resume called the collection complete)."""
    stems = _per_workload("roofline")(options)
    device = pick_device()
    folder = machine_folder(options)[1]
    out: dict[str, str | None] = {}
    for stem, spec in stems.items():
        out[stem] = spec
        name = stem.removeprefix("roofline-")   # the workload's name as its documents are filed
        out |= {f"{stem}-{p}": spec for p in roofline.extra_precisions(device)
                if roofline.timed_batches(folder, name, p)}
    return out


def _roofline(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    names = options.workloads or workload_collector.DEFAULT_WORKLOADS
    if options.deadline is not None and (left := options.deadline - time.monotonic()) < ROOFLINE_NEEDS_S * len(names):
        progress.note(f"the per-op profile: skipped (over the time budget: it takes about "
                      f"{ROOFLINE_NEEDS_S * len(names):.0f} s here, {max(left, 0):.0f} s were left)")
        return
    device = pick_device()

    def kept(stem: str) -> bool:  # a profile a resumed run finished already (its tf32 sibling may be what is owed)
        return not options.fresh and why_complete(folder / f"{stem}.json", roofline.NAME, roofline.VERSION,
                                                  options.profile, device.type, workload_collector.same_source) \
            is not None
    yield from roofline.iter_roofline_documents(names, folder, device, progress, kept)


# A user's model traced on the meta device (collectors/trace: CPU seconds, no GPU) where this run's budget has no
# room left for its per-op profile: the plan then splits the steps the folder did not profile by the trace's ops
# (planner/trace/hybrid.py) instead of their FLOP and byte counts. Four small runs (split_configs): ddpm-unet's took
# 4.6 s on an H100 host (results/h100-80gb/diagnostics/trace-stage-2026-11-28); a run without a budget profiles its
# ops on the GPU instead.
TRACE_NEEDS_S = 8.0


def _trace(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    files = [n for n in options.workloads or [] if n not in BUILTIN
             and not (folder / f"roofline-{sanitize_machine_id(workload_collector.workload_name(n))}.json").exists()]
    if not files or options.deadline is None:
        return
    left = options.deadline - time.monotonic()
    if left >= ROOFLINE_NEEDS_S * len(files):
        return  # the per-op profile runs next, in this run
    if left < TRACE_NEEDS_S * len(files):
        progress.note(f"the trace of the model's ops: skipped (over the time budget: {max(left, 0):.0f} s left)")
        return
    for spec in files:
        workload = trace.load_on_meta(spec)
        payload = trace.trace_workload(spec, workload, progress, trace.split_configs(spec, workload))
        yield f"trace-{sanitize_machine_id(payload.workload)}", payload


def _dataloader(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    yield "dataloader", dataloader_collector.collect_dataloader(
        progress, options.profile, options.dataset_cache or default_cache_root(), pick_device())


def _distributed(name: str) -> Callable[[Progress, Path, Options], Iterator[tuple[str, Any]]]:
    def run(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
        yield from distributed.iter_distributed_documents(
            name, folder, progress, gpus=options.gpus, backend=options.dist_backend, profile=options.profile,
            timeout_s=options.dist_timeout, workloads=options.workloads, batches=options.batches, nodes=options.nodes)
    return run


COLLECTORS = {
    c.name: c
    for c in (
        Collector(environment.NAME, environment.VERSION, _environment,
                  "machine fingerprint: OS, CPU, RAM, versions, each GPU through NVML"),
        Collector(ceilings.NAME, ceilings.VERSION, _ceilings,
                  "hardware roofs: matmul per dtype, memory and host-device bandwidth, launch latency, "
                  "host dispatch speed"),
        Collector(workload_collector.NAME, workload_collector.VERSION, _workloads,
                  "reference workloads: batch/sequence scaling to OOM, precisions, variants; host issue "
                  "and GPU busy time per timed point",
                  stems=_per_workload("workload"),
                  matches=lambda payload, o: workload_collector.still_answers(payload, o.profile),
                  left=lambda folder, stems, done, o: workload_collector.describe_left(folder, stems, done, o.profile),
                  phase_done=lambda payload, o: workload_collector.phase_done(payload, o.phase or ""),
                  phases=tuple(workload_collector.PHASES)),
        Collector(trace.COLLECTOR, trace.VERSION, _trace,
                  "a user's model on the meta device (CPU seconds) where the budget leaves no time for its per-op "
                  "profile: what splits its steps on other GPUs",
                  stems=_per_workload("trace"), left=lambda folder, stems, done, o: []),
        Collector(roofline.NAME, roofline.VERSION, _roofline,
                  "per-op roofline of each workload at its main batch, a quarter and twice it: time, FLOPs, "
                  "bytes, bound class per aten op",
                  stems=_roofline_stems,
                  matches=lambda payload, o: workload_collector.same_source(payload)),
        Collector(dataloader_collector.NAME, dataloader_collector.VERSION, _dataloader,
                  "JPEG input pipeline: DataLoader workers, prefetch, pinned memory against host RAM and CPU"),
        Collector(collectives.NAME, collectives.VERSION, _distributed(collectives.NAME),
                  "several GPUs: NCCL all-reduce/all-gather/reduce-scatter/broadcast bandwidth, NVLink topology",
                  # several nodes measure again: a node skipping its part would leave the others waiting
                  matches=lambda payload, o: o.nodes is None and same_world(payload, o.gpus, o.dist_backend)),
        Collector(ddp.NAME, ddp.VERSION, _distributed(ddp.NAME),
                  "several GPUs: DistributedDataParallel scaling of gpt-small and resnet50 on 1..N GPUs",
                  matches=_same_ddp),
    )
}


# The order a collection runs in: what the plan's answer needs first (collectors/workloads/stages.py). The ceilings
# come before the workloads' answer because a plan needs them; the data loader, where asked, between a workload's
# answer and the stages that widen it; the per-op profile after.
ORDER: list[Step] = [("environment", None), ("ceilings", None), ("workloads", "answer"), ("dataloader", None),
                     ("workloads", "widen"), ("trace", None), ("roofline", None), ("collectives", None), ("ddp", None)]
DEFAULT_OUT = Path("runs")


def order_of(options: Options) -> list[Step]:
    """The steps this collection runs: ORDER, without the data loader unless asked (named in --only, or the
    reference collection: no --workload given)."""
    asked = options.only is not None or not options.workloads
    return [step for step in ORDER if step[0] != dataloader_collector.NAME or asked]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog=PROG)
    parser.description = (
        "Measure this machine and write one JSON document per result into OUT/MACHINE/. "
        "Collectors: " + "; ".join(f"{c.name} ({c.help})" for c in COLLECTORS.values()) + "."
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="where the machine folder goes (default: runs/, a working folder git ignores; "
                             "results/ holds the committed runs: name it to add one)")
    parser.add_argument("--machine", help="machine id for the folder name (default: hostname + GPU model + count)")
    parser.add_argument("--only", nargs="+", choices=sorted(COLLECTORS), metavar="NAME",
                        help=f"run only these collectors ({', '.join(COLLECTORS)})")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="quick",
                        help="how much of the workload sweeps to run, each in the order the answer needs it "
                             "(the bf16 sweep to its knee and torch.compile there first): quick (the main point, "
                             "about a minute on an H100), standard (the bf16 sweep, every precision at its knee, "
                             "the OOM boundary bounded to 30 s, the main batch's trials, variants, a repeat; "
                             "within a 3-minute budget on a GPU unless --budget says otherwise), capacity (standard "
                             "plus the OOM boundary at every precision), full (everything at every precision) "
                             "(default: quick). A run reuses the points a workload's document already holds: an "
                             "interrupted run resumes, and capacity after standard only adds the boundaries. For "
                             "the dataloader: quick (workers at prefetch 2, under a minute on 16 cores), standard "
                             "(workers × prefetch 1-8 × pinned or not, about 2.5 min), full (every combination, "
                             "at most 15 min)")
    parser.add_argument("--budget", type=parse_duration, metavar="TIME",
                        help="the whole collection's time, e.g. 3m, 90s, 1h30m: stages that would not fit are "
                             "skipped, and at its end the collection stops as at a Ctrl-C (exit 0); what is left "
                             "and the command that resumes are printed. Stages in the order the answer needs: "
                             "the main precision's sweep to the knee, torch.compile there, the data loader (when "
                             "asked), then the rest of the sweep, the other precisions, the OOM boundary, the "
                             "trials at the main batch, the variants, the per-op profile; `none`: no limit "
                             "(default: 3m for the standard profile on a GPU, which the same command then "
                             "continues; else no limit)")
    parser.add_argument("--workload", dest="workloads", action="append", metavar="NAME|FILE.py:FN",
                        help=f"workload to run (repeatable): built-in {', '.join(BUILTIN)}, or a user file "
                             "path/to/file.py:function (default: the four built-ins; ddp: gpt-small, resnet50)")
    parser.add_argument("--dataset-cache", type=Path, metavar="DIR",
                        help="where the dataloader collector keeps its synthetic JPEGs, made once and reused "
                             "(default: $XDG_CACHE_HOME/gpuplan or ~/.cache/gpuplan; never inside --out)")
    parser.add_argument("--fresh", action="store_true",
                        help="measure everything again. Without it a rerun resumes: a document already complete "
                             "for this run (same collector version, a profile at least as large) is skipped, and "
                             "said so; a workload document of an interrupted run keeps its points and goes on "
                             "from there (one of workloads collector 2 keeps its boundary probes and times its "
                             "points again, for host and GPU time). With it, documents are replaced as the new "
                             "measurements come in")
    parser.add_argument("--retime-host", action="store_true",
                        help="time every host-set point (a step the host's speed moves: the GPU idles for part of "
                             "it) of the named workloads' documents in OUT/MACHINE again, side by side in one "
                             "window on this host, and rewrite those documents with them (their other points and "
                             "boundaries stay): for a folder collected over several runs or days, whose host-set "
                             "points would otherwise each carry the speed of the host they happened to run on. "
                             "Needs --workload for each (as the collection named them); nothing else runs")
    parser.add_argument("--point-timeout", type=float, metavar="SECONDS", default=DEFAULT_POINT_TIMEOUT_S,
                        help="time limit of one workload point (build, first step, timed steps): a point still "
                             "running after it is recorded as an error, 'timed out after N s', and the "
                             "collection goes on. A step stuck inside native code (a hung CUDA kernel) cannot be "
                             "interrupted: a minute later the process ends (exit 124), keeping every finished "
                             f"point (default: {DEFAULT_POINT_TIMEOUT_S:g}; 0: no limit)")
    multi = parser.add_argument_group(
        "several GPUs (collectives, ddp)",
        "One process per GPU, started with torchrun, NVLink multicast always off. Skipped with fewer than 2 GPUs.")
    multi.add_argument("--gpus", type=int, metavar="N", help="GPUs to use, 0..N-1 (default: every visible GPU)")
    multi.add_argument("--dist-backend", choices=("nccl", "gloo"),
                       help="nccl (default with GPUs); gloo runs N CPU processes to test the path (tiny sizes)")
    multi.add_argument("--batch", dest="batches", action="append", metavar="NAME=N",
                       help="ddp's per-GPU batch of a workload (repeatable; default: gpt-small=32, resnet50=256)")
    multi.add_argument("--dist-timeout", type=float, metavar="SECONDS",
                       help="stop a multi-GPU collector's processes after this long (default: collectives 300, "
                            "ddp 900)")
    nodes.add_node_arguments(parser)
    return parser


def _expandable(payload: WorkloadPayload, precision: str) -> str:
    other = payload.boundary(precision, "expandable_segments")
    return f" ({other.max_batch} with expandable segments)" if other and other.max_batch else ""


def summary_of(payload: Any) -> str:
    if isinstance(payload, environment.EnvironmentPayload):
        gpus = ", ".join(g.name for g in payload.gpus) or f"no GPU ({payload.gpu_absent_reason})"
        return f"{payload.cpu.label}; {gpus}"
    if isinstance(payload, WorkloadPayload):
        # timed points only: a boundary probe that ran is 'ok' too, with no throughput (a tacotron2 collection on an
        # H200 whose first sweep point timed out crashed here on its batch-1 probe)
        timed = [p for p in payload.points if p.status == "ok" and p.throughput_per_s]
        best = max(timed, key=lambda p: p.throughput_per_s or 0, default=None)
        bounds = ", ".join(f"{b.precision} {b.max_batch}" + _expandable(payload, b.precision)
                           for b in payload.default_boundaries if b.max_batch)
        head = f"best {best.throughput_per_s:.4g} {payload.unit}/s ({best.precision}, batch {best.batch})" if best \
            else "no point timed"
        partial = "" if payload.complete else f" (stopped after {len(payload.points)} points: the same command resumes)"
        return head + (f"; max batch {bounds}" if bounds else "") + partial
    if isinstance(payload, RooflinePayload):
        return roofline.summarize_roofline(payload)
    if isinstance(payload, TracePayload):
        return f"{len(payload.ok_runs())} of {len(payload.runs)} steps traced on the meta device"
    if isinstance(payload, DataloaderPayload):
        return dataloader_collector.summary_of(payload)
    if isinstance(payload, ceilings.CeilingsPayload):
        parts = [f"{m.dtype} {m.flops_per_s.median / 1e12:.3g} TFLOP/s" for m in payload.matmul if m.flops_per_s]
        parts += [f"{b.name} {b.bytes_per_s.median / 1e9:.4g} GB/s" for b in payload.memory if b.bytes_per_s]
        return "; ".join(parts)
    return distributed.summarize(payload)


def options_of(args: argparse.Namespace) -> Options:
    return Options(out=args.out, machine=args.machine, only=args.only, profile=args.profile,
                   workloads=args.workloads, dataset_cache=args.dataset_cache, fresh=args.fresh, gpus=args.gpus,
                   dist_backend=args.dist_backend, batches=args.batches, dist_timeout=args.dist_timeout,
                   point_timeout=args.point_timeout or None,
                   budget_s=effective_budget(args.budget, args.profile, pick_device().type == "cuda"),
                   nodes=nodes.node_options(args.nnodes, args.node_rank, args.rdzv_id, args.rdzv_endpoint))


def check_options(options: Options) -> None:
    """Fail on bad input before anything runs or is written: a bad user file fails in a second, not
    after the other collectors have spent minutes (raises WorkloadError, DistributedOptionError)."""
    if options.point_timeout is not None and not options.point_timeout > 0:
        raise WorkloadError(f"--point-timeout {options.point_timeout:g}: expected a positive number of seconds "
                            "(0 for no limit)")
    for spec in options.workloads or []:
        load_workload(spec)
    distributed.check_options(options.gpus, options.dist_backend, options.batches, options.nodes)


def run_from_args(args: argparse.Namespace) -> int:
    """Exit status: 0 all collected, 1 a collector failed (the rest ran), 2 bad input or the folder is in use
    (nothing written), 130 stopped by Ctrl-C (everything saved; the same command resumes)."""
    try:
        options = options_of(args)
    except distributed.DistributedOptionError as e:  # the node options
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    problem = cache_inside_results(options)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        check_options(options)
        if getattr(args, "retime_host", False):   # nothing else runs (collectors/workloads/retime.py)
            return retime.run_retime(machine_folder(options)[1], options.workloads or [], sys.stderr)
        if args.budget is None and options.budget_s == STANDARD_BUDGET_S:
            print(f"standard profile: a {STANDARD_BUDGET_S / 60:.0f}-minute budget, the answer's stages first "
                  "(the same command continues where this one stops; --budget none runs every stage)", file=sys.stderr)
        if options.only is None and options.workloads:
            print("dataloader: not run (a collection of chosen workloads measures the input pipeline when asked: "
                  "--only ... dataloader)", file=sys.stderr)
        outcome = run_collection(options, COLLECTORS, pick_device().type, summary_of, order=order_of(options))
        outcome.left = left_to_measure(options, COLLECTORS, order_of(options), pick_device().type, applies)
    except (WorkloadError, distributed.DistributedOptionError, LockHeld) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return report_outcome(outcome, getattr(args, "command_line", None) or resume_command(None),
                          budgeted=options.budget_s is not None)


def applies(name: str, options: Options) -> bool:
    """Whether a collector has anything to measure here: the multi-GPU ones only with 2 GPUs or more."""
    if name not in (collectives.NAME, ddp.NAME):
        return True
    try:
        world, _ = distributed.resolve_world(options.gpus, options.dist_backend, distributed.visible_gpus(),
                                             options.nodes.nnodes if options.nodes else 1)
    except distributed.DistributedOptionError:
        return False
    return world is not None


def cache_inside_results(options: Options) -> str | None:
    """Generated images must never land in a results folder (results are committed and published)."""
    if dataloader_collector.NAME not in (options.only or COLLECTORS):
        return None
    cache = (options.dataset_cache or default_cache_root()).resolve()
    out = options.out.resolve()
    if cache == out or cache.is_relative_to(out):
        return f"--dataset-cache {cache}: inside the results folder {options.out}; choose a folder outside it"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.command_line = resume_command(argv, PROG)
    return run_from_args(args)


def end_process(code: int) -> None:
    """End `python -m collectors` now: every document is saved (atomically) already, and the interpreter's own
    teardown can hold a stopped collection for minutes (inductor's compile pool waits up to 300 s for a worker it
    started after the stop; a DataLoader joins each worker for 5 s). The processes it started end with it."""
    sys.stdout.flush()
    sys.stderr.flush()
    kill_descendants()
    os._exit(code)


if __name__ == "__main__":
    end_process(main())
