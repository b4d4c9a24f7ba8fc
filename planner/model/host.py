"""What an instance's CPUs can feed: the source machine's measured input pipeline (the dataloader document:
JPEG decode and augmentation, samples/s per worker count) applied to another instance's vCPUs.

Workers per GPU = vCPUs / GPUs − 1 (one core for the training process itself), at least 1. The feed rate at a worker
count is the measured rate, linear between measured counts; past the largest useful measured count (the
fastest), it grows linearly from that point's rate per worker. Assumed: the instance's cores decode as
fast as the source machine's (the catalog names the instance's CPU, `InstanceSpec.host_cpu`, but no
instance's host was measured, nor is the source's CPU identified in its committed environment), and the
loader's settings are the fastest measured. Only workloads the loader's input is made for (224×224 image
crops: resnet50) get a limit; the others have no measured input pipeline and none is assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.results import MachineResults
from planner.model.dataloader_verdict import IMAGE_WORKLOADS, best_per_workers


@dataclass(frozen=True)
class LoaderFeed:
    """Measured (workers, samples/s) points of one machine, workers ≥ 1."""

    machine: str
    rates: tuple[tuple[int, float], ...]

    def samples_per_s(self, workers: int) -> float:
        best_w, best_r = max(self.rates, key=lambda wr: wr[1])
        if workers >= best_w:
            return best_r * workers / best_w
        below = max((wr for wr in self.rates if wr[0] <= workers), default=None)
        above = min((wr for wr in self.rates if wr[0] >= workers), key=lambda wr: wr[0])
        if below is None:
            return above[1] * workers / above[0]
        if below[0] == above[0]:
            return below[1]
        w = (workers - below[0]) / (above[0] - below[0])
        return below[1] + w * (above[1] - below[1])


@dataclass(frozen=True)
class FeedLimit:
    workers_per_gpu: int
    samples_per_s_per_gpu: float
    vcpus: int
    note: str


def load_feed(machine: MachineResults, workload: str) -> LoaderFeed | None:
    if workload not in IMAGE_WORKLOADS:
        return None
    loader = next((d.payload for d in machine.documents.values() if d.kind == "dataloader"), None)
    rates = tuple((r.workers, r.samples_per_s) for r in best_per_workers(loader) if r.workers >= 1) if loader else ()
    return LoaderFeed(machine.machine, rates) if rates else None


def feed_limit(feed: LoaderFeed, vcpus: int, gpu_count: int) -> FeedLimit:
    workers = max(1, vcpus // max(1, gpu_count) - 1)  # at least one: the main process can load
    rate = feed.samples_per_s(workers)
    return FeedLimit(workers, rate, vcpus, f"{vcpus} vCPUs ({workers} loader workers per GPU) feed ≈ "
                                           f"{rate * gpu_count:,.0f} samples/s at {feed.machine}'s measured rate")
