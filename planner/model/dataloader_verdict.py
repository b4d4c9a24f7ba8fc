"""Would training be input-bound? The loader's measured samples/s against each workload's GPU appetite.

For each worker count the loader's best configuration (over prefetch and pin_memory) is compared with the
workload's measured throughput at its main batch (bf16 where measured, else the fastest precision): the
fewest workers whose loader delivers at least that many samples per second feed the GPU; with fewer,
training waits on input and runs at the loader's rate. When no worker count keeps up, the 1-worker rate
gives a lower bound on the workers needed (linear scaling; the measured scaling says how far from it).

The JPEG pipeline (224×224 crops of ImageNet-sized photos) is the input of image classifiers only: of the
reference workloads, resnet50. The others get a line saying the measurement does not apply to them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gpuplan_schema.payloads import DataloaderPayload, LoaderPoint, WorkloadPayload, WorkloadPoint
from planner.model.workload_verdict import judged_point, main_batch
from planner.units import format_number, format_percent

IMAGE_WORKLOADS = ("resnet50",)   # trained on 224×224 crops of JPEG photos: what the loader makes
APPETITE_PRECISION = "bf16"


@dataclass(frozen=True)
class WorkerRate:
    """The fastest measured configuration at one worker count."""

    workers: int
    samples_per_s: float
    prefetch: int | None
    pin_memory: bool
    cpu_cores_busy: float | None
    time_to_first_batch_s: float | None


def configuration_words(precision: str | None, compiled: bool, batch: int | None) -> str:
    """'bf16, compiled, batch 512': one wording for the configuration in a verdict's sentence and its chart label."""
    return f"{precision}{', compiled' if compiled else ''}, batch {batch}"


@dataclass(frozen=True)
class FeedVerdict:
    workload: str
    applies: bool
    sentence: str
    gpu_samples_per_s: float | None = None
    precision: str | None = None
    batch: int | None = None
    workers_needed: int | None = None   # the fewest measured workers that keep up; None: none does
    best_fraction: float | None = None  # the loader's best rate over the GPU's
    compiled: bool = False              # the GPU's rate is a torch.compile'd step's

    @property
    def configuration(self) -> str:
        """'resnet50 bf16, compiled, batch 512': the configuration whose GPU rate the loader was set against."""
        return f"{self.workload} {configuration_words(self.precision, self.compiled, self.batch)}"

    @property
    def compared(self) -> bool:
        """Whether the loader was set against the GPU (not a line saying why it could not be)."""
        return self.best_fraction is not None


def best_per_workers(payload: DataloaderPayload) -> list[WorkerRate]:
    """One row per worker count: its fastest ok point."""
    best: dict[int, LoaderPoint] = {}
    for p in payload.points:
        if p.status == "ok" and p.samples_per_s and (
                p.workers not in best or p.samples_per_s.median > best[p.workers].samples_per_s.median):
            best[p.workers] = p
    return [WorkerRate(w, p.samples_per_s.median, p.prefetch, p.pin_memory, p.cpu_cores_busy,
                       p.time_to_first_batch_s) for w, p in sorted(best.items())]


def appetite_point(workload: WorkloadPayload) -> WorkloadPoint | None:
    """The GPU's measured rate at the main batch: bf16's default run if there is one, else the fastest."""
    main = main_batch(workload)
    if main is None:
        return None
    bf16 = [p for p in workload.points if p.batch == main and p.precision == APPETITE_PRECISION and p.status == "ok"
            and p.variant == "default" and p.seq_len is None and p.throughput_per_s]
    return max(bf16, key=lambda p: p.throughput_per_s, default=None) or judged_point(workload, main)


def build_feed_verdicts(loader: DataloaderPayload, workloads: list[WorkloadPayload]) -> list[FeedVerdict]:
    """Image workloads first (the verdicts that apply), then one line for each other workload, each against the
    workload's main-batch run (appetite_point): the report's, where no plan was made (a plan sets the loader against
    its recommended configuration, advice.advise_workload)."""
    return applicable_first(workload_feed(loader, w) for w in workloads)


def applicable_first(verdicts: Iterable[FeedVerdict]) -> list[FeedVerdict]:
    """The verdicts that apply (image workloads) before the lines saying the loader does not, each group in the
    order given: the one order of the report's section, whether its verdicts are a plan's or build_feed_verdicts'."""
    return sorted(verdicts, key=lambda v: not v.applies)


def workload_feed(loader: DataloaderPayload, workload: WorkloadPayload, point: WorkloadPoint | None = None
                  ) -> FeedVerdict:
    """The loader against `point`'s GPU rate (default: appetite_point), or why it says nothing of the workload."""
    if workload.workload not in IMAGE_WORKLOADS:
        return FeedVerdict(workload.workload, False, f"{workload.workload} does not train on images decoded from "
                           "files: this JPEG pipeline says nothing about its input (its benchmark makes batches on the "
                           "device)")
    return feed_verdict(loader, best_per_workers(loader), workload, point)


def feed_verdict(loader: DataloaderPayload, rates: list[WorkerRate], workload: WorkloadPayload,
                 point: WorkloadPoint | None = None) -> FeedVerdict:
    name = workload.workload
    point = point or appetite_point(workload)
    if point is None or not rates:
        missing = "no GPU throughput was measured" if point is None else "no loader point ran"
        return FeedVerdict(name, True, f"no verdict for {name}: {missing}")
    gpu = point.throughput_per_s
    compiled = point.variant == "compile"
    keys = dict(gpu_samples_per_s=gpu, precision=point.precision, batch=point.batch, compiled=compiled)
    if workload.scale == "tiny" or loader.scale == "tiny":
        return FeedVerdict(name, True, f"no verdict for {name}: the workload or the loader ran at the reduced sizes "
                           "of a CPU test, so comparing them says nothing about training", **keys)
    best = max(rates, key=lambda r: r.samples_per_s)
    enough = next((r for r in rates if r.samples_per_s >= gpu), None)
    fraction = best.samples_per_s / gpu
    what = f"{name} at {configuration_words(point.precision, compiled, point.batch)} " \
           f"({format_number(gpu)} images/s on the GPU)"
    if enough is not None:
        sentence = fed_sentence(what, enough, rates, gpu, loader.logical_cores)
        return FeedVerdict(name, True, sentence, workers_needed=enough.workers, best_fraction=fraction, **keys)
    sentence = starved_sentence(what, best, rates, gpu, loader.logical_cores)
    return FeedVerdict(name, True, sentence, best_fraction=fraction, **keys)


def workers_text(n: int) -> str:
    return "no workers (the main process loading)" if n == 0 else f"{n} worker{'s' if n != 1 else ''}"


def fed_sentence(what: str, enough: WorkerRate, rates: list[WorkerRate], gpu: float, cores: int) -> str:
    below = [r for r in rates if r.workers < enough.workers]
    n = enough.workers
    text = (f"{workers_text(n)} {'is' if n == 1 else 'are'} enough for {what}: "
            f"{format_number(enough.samples_per_s)} images/s delivered ({format_number(enough.samples_per_s / gpu)}× "
            f"the GPU's rate); with the main process that is {n + 1} of the {cores} cores")
    if enough.workers + 1 > cores:
        text += ", more than there are, so the training loop would compete with the workers"
    if below:
        r = below[-1]
        text += (f". With {workers_text(r.workers)} training would be input-bound at about "
                 f"{format_number(r.samples_per_s)} images/s, the GPU busy {format_percent(r.samples_per_s / gpu)} "
                 "of the time")
    return text


def starved_sentence(what: str, best: WorkerRate, rates: list[WorkerRate], gpu: float, cores: int) -> str:
    text = (f"this machine cannot feed {what}: its best, {format_number(best.samples_per_s)} images/s with "
            f"{workers_text(best.workers)}, is {format_percent(best.samples_per_s / gpu)} of what the GPU takes, so "
            f"training would be input-bound at about that rate")
    one = next((r for r in rates if r.workers == 1), None)
    if one is not None:
        needed = math.ceil(gpu / one.samples_per_s)
        scaling = best.samples_per_s / (best.workers * one.samples_per_s) if best.workers else None
        text += (f". One worker makes {format_number(one.samples_per_s)} images/s, so even with perfect scaling it "
                 f"would take {needed} workers ({needed + 1} cores with the main process; this machine has "
                 f"{cores})")
        if scaling is not None:
            text += f", and {workers_text(best.workers)} here reached {format_percent(scaling)} of perfect scaling"
    return text
