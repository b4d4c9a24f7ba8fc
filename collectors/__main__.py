"""`python -m collectors` (and `gpuplan collect`): run the collectors, write one document each.

Needs only torch, nvidia-ml-py (optional) and the standard library.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors import ceilings, dataloader_collector, environment, roofline, workload_collector
from collectors.distributed import collect as distributed
from collectors.distributed import collectives, ddp
from collectors.distributed.launch import LaunchError
from collectors.jpeg_dataset import default_cache_root
from collectors.machine import default_machine_id, sanitize_machine_id
from collectors.payloads import PAYLOADS, DataloaderPayload, RooflinePayload, WorkloadPayload
from collectors.profiles import PROFILES
from collectors.progress import Progress
from collectors.schema import Document, build_document, save_document
from collectors.workloads import BUILTIN, WorkloadError, load_workload


@dataclass(frozen=True)
class Options:
    out: Path = Path("results")
    machine: str | None = None
    only: list[str] | None = None
    profile: str = "quick"
    workloads: list[str] | None = None
    dataset_cache: Path | None = None  # the dataloader's synthetic JPEGs (default: ~/.cache/gpuplan)
    fresh: bool = False                # measure every point again instead of reusing a document's
    gpus: int | None = None                 # multi-GPU collectors: ranks (default: every visible GPU)
    dist_backend: str | None = None         # nccl (default with GPUs) or gloo (CPU processes, for testing)
    batches: list[str] | None = None        # ddp's per-GPU batches, NAME=N
    dist_timeout: float | None = None       # seconds for a whole multi-GPU launch


# A collector yields (file stem, payload) pairs; each is saved the moment it is yielded, so a
# long collection keeps what it finished.
Run = Callable[[Progress, Path, Options], Iterator[tuple[str, Any]]]


@dataclass(frozen=True)
class Collector:
    name: str
    version: str
    run: Run
    help: str


def _environment(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    yield "environment", environment.collect_environment()


def _ceilings(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    yield "ceilings", ceilings.collect_ceilings(progress)


def _workloads(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    names = options.workloads or workload_collector.DEFAULT_WORKLOADS
    yield from workload_collector.iter_workload_documents(names, options.profile, folder, ceilings.pick_device(),
                                                          progress, options.fresh)


def _roofline(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    names = options.workloads or workload_collector.DEFAULT_WORKLOADS
    yield from roofline.iter_roofline_documents(names, folder, ceilings.pick_device(), progress)


def _dataloader(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
    yield "dataloader", dataloader_collector.collect_dataloader(
        progress, options.profile, options.dataset_cache or default_cache_root(), ceilings.pick_device())


def _distributed(name: str) -> Run:
    def run(progress: Progress, folder: Path, options: Options) -> Iterator[tuple[str, Any]]:
        yield from distributed.iter_distributed_documents(
            name, folder, progress, gpus=options.gpus, backend=options.dist_backend, profile=options.profile,
            timeout_s=options.dist_timeout, workloads=options.workloads, batches=options.batches)
    return run


COLLECTORS = {
    c.name: c
    for c in (
        Collector(environment.NAME, environment.VERSION, _environment,
                  "machine fingerprint: OS, CPU, RAM, versions, each GPU through NVML"),
        Collector(ceilings.NAME, ceilings.VERSION, _ceilings,
                  "hardware roofs: matmul per dtype, memory and host-device bandwidth, launch latency"),
        Collector(workload_collector.NAME, workload_collector.VERSION, _workloads,
                  "reference workloads: batch/sequence scaling to OOM, precisions, variants"),
        Collector(roofline.NAME, roofline.VERSION, _roofline,
                  "per-op roofline of each workload's main point: time, FLOPs, bytes, bound class per aten op"),
        Collector(dataloader_collector.NAME, dataloader_collector.VERSION, _dataloader,
                  "JPEG input pipeline: DataLoader workers, prefetch, pinned memory against host RAM and CPU"),
        Collector(collectives.NAME, collectives.VERSION, _distributed(collectives.NAME),
                  "several GPUs: NCCL all-reduce/all-gather/reduce-scatter/broadcast bandwidth, NVLink topology"),
        Collector(ddp.NAME, ddp.VERSION, _distributed(ddp.NAME),
                  "several GPUs: DistributedDataParallel scaling of gpt-small and resnet50 on 1..N GPUs"),
    )
}
KIND_OF = {payload_type: kind for kind, payload_type in PAYLOADS.items()}


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m collectors")
    parser.description = (
        "Measure this machine and write one JSON document per result into OUT/MACHINE/. "
        "Collectors: " + "; ".join(f"{c.name} ({c.help})" for c in COLLECTORS.values()) + "."
    )
    parser.add_argument("--out", type=Path, default=Path("results"), help="results root (default: results/)")
    parser.add_argument("--machine", help="machine id for the folder name (default: hostname + GPU model + count)")
    parser.add_argument("--only", nargs="+", choices=sorted(COLLECTORS), metavar="NAME",
                        help=f"run only these collectors ({', '.join(COLLECTORS)})")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="quick",
                        help="how much of the workload sweeps to run: quick (main points, about a minute on "
                             "an H100), standard (bf16 sweep to the OOM boundary, variants, every precision at "
                             "the main batch; at most 5 min), capacity (standard plus the OOM boundary at every "
                             "precision), full (everything at every precision) (default: quick). A run reuses the "
                             "points a workload's document already holds: an interrupted run resumes, and "
                             "capacity after standard only adds the boundaries. For "
                             "the dataloader: quick (workers at prefetch 2, under a minute on 16 cores), standard "
                             "(workers × prefetch 1-8 × pinned or not, about 2.5 min), full (every combination, "
                             "at most 15 min)")
    parser.add_argument("--workload", dest="workloads", action="append", metavar="NAME|FILE.py:FN",
                        help=f"workload to run (repeatable): built-in {', '.join(BUILTIN)}, or a user file "
                             "path/to/file.py:function (default: the four built-ins; ddp: gpt-small, resnet50)")
    parser.add_argument("--dataset-cache", type=Path, metavar="DIR",
                        help="where the dataloader collector keeps its synthetic JPEGs, made once and reused "
                             "(default: $XDG_CACHE_HOME/gpuplan or ~/.cache/gpuplan; never inside --out)")
    parser.add_argument("--fresh", action="store_true",
                        help="measure every workload point again instead of reusing the documents already in "
                             "OUT/MACHINE (they are replaced as the new points come in)")
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
    return parser


def run_collection(options: Options) -> tuple[Path, list[str]]:
    """Run the chosen collectors; returns the machine folder and one summary line per document."""
    machine_id = sanitize_machine_id(options.machine) if options.machine else default_machine_id()
    folder = options.out / machine_id
    lines: dict[str, str] = {}  # a document saved again as its points come in keeps its last line
    for name in options.only or list(COLLECTORS):
        c = COLLECTORS[name]
        started = time.perf_counter()
        with Progress(name, total=1) as progress:
            for stem, payload in c.run(progress, folder, options):
                if isinstance(payload, Document):  # already saved, by rank 0 of a multi-GPU launch
                    path, payload = folder / f"{stem}.json", payload.payload
                else:
                    doc = build_document(KIND_OF[type(payload)], c.name, c.version, machine_id, payload)
                    path = save_document(doc, folder / f"{stem}.json")
                lines[stem] = f"{stem:<24} {time.perf_counter() - started:6.1f}s  {path}  {summary_of(payload)}"
            progress.advance("done")
    return folder, list(lines.values())


def summary_of(payload: Any) -> str:
    if isinstance(payload, environment.EnvironmentPayload):
        gpus = ", ".join(g.name for g in payload.gpus) or f"no GPU ({payload.gpu_absent_reason})"
        return f"{payload.cpu.model}; {gpus}"
    if isinstance(payload, WorkloadPayload):
        ok = [p for p in payload.points if p.status == "ok"]
        best = max(ok, key=lambda p: p.throughput_per_s or 0, default=None)
        bounds = ", ".join(f"{b.precision} {b.max_batch}" for b in payload.boundaries if b.max_batch)
        head = f"best {best.throughput_per_s:.4g} {payload.unit}/s ({best.precision}, batch {best.batch})" if best \
            else "no point ran"
        return head + (f"; max batch {bounds}" if bounds else "")
    if isinstance(payload, RooflinePayload):
        return roofline.summarize_roofline(payload)
    if isinstance(payload, DataloaderPayload):
        return dataloader_collector.summary_of(payload)
    if isinstance(payload, ceilings.CeilingsPayload):
        parts = [f"{m.dtype} {m.flops_per_s.median / 1e12:.3g} TFLOP/s" for m in payload.matmul if m.flops_per_s]
        parts += [f"{b.name} {b.bytes_per_s.median / 1e9:.4g} GB/s" for b in payload.memory if b.bytes_per_s]
        return "; ".join(parts)
    return distributed.summarize(payload)


def run_from_args(args: argparse.Namespace) -> int:
    options = Options(args.out, args.machine, args.only, args.profile, args.workloads, args.dataset_cache, args.fresh,
                      args.gpus, args.dist_backend, args.batches, args.dist_timeout)
    problem = cache_inside_results(options)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        # Every workload is loaded before anything runs or is written: a bad user file fails in
        # a second, not after the other collectors have spent minutes.
        for spec in options.workloads or []:
            load_workload(spec)
        distributed.check_options(options.gpus, options.dist_backend, options.batches)
        folder, lines = run_collection(options)
    except (WorkloadError, distributed.DistributedOptionError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except LaunchError as e:  # not bad input: the documents written so far stay
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"\nCollected into {folder}:")
    print("\n".join(lines))
    return 0


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
    return run_from_args(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
