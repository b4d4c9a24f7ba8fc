"""`collectives` collector, run on every rank by torchrun: NCCL bandwidth and latency between the GPUs.

all_reduce (sum), all_gather, reduce_scatter (sum) and broadcast (from rank 0) of fp32 tensors, at
message sizes from 8 KiB to 1 GiB (4 GiB in the full profile; up to 1 MiB on CPU ranks). fp32 as
nccl-tests' default and as DDP reduces its gradients. A sample is several back-to-back operations
between two CUDA events, started after a host barrier so that the ranks start together; a sample's
time is the mean over the ranks (as nccl-tests averages), and the point keeps the median and spread
of the samples. Sizes and bandwidths follow nccl-tests (collectors/distributed/busbw.py).

    python -m torch.distributed.run --standalone --nproc_per_node 4 -m collectors.distributed.collectives \
        --folder results/MACHINE --machine MACHINE
(`gpuplan collect --only collectives` does this, with NVLink multicast off.)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from collectors.core.device import free_memory, is_oom
from collectors.core.timing import Timer, synchronize
from collectors.distributed import busbw, rank
from collectors.distributed.topology import read_topology
from gpuplan_schema.payloads import CollectivePoint, CollectivesPayload
from gpuplan_schema.progress import Progress
from gpuplan_schema.stats import summarize

NAME, VERSION, STEM = "collectives", "1", "collectives"
DTYPE, DTYPE_NAME, ELEMENT_BYTES = torch.float32, "fp32", 4
SMALLEST = 8 << 10
LARGEST = {"quick": 1 << 30, "standard": 1 << 30, "full": 4 << 30}
CPU_LARGEST = 1 << 20
SAMPLES = {"quick": 5, "standard": 10, "full": 20}
WARMUP_OPS = 5
SAMPLE_BYTES = 1 << 24    # a sample runs this many bytes' worth of operations: ~1 ms of small messages
MAX_OPS_PER_SAMPLE = 64
CPU_MAX_OPS_PER_SAMPLE = 8  # gloo on CPU processes: a test of the path, kept short


def message_sizes(profile: str, device_type: str) -> list[int]:
    """Powers of two from 8 KiB; the quick profile takes every third one and the largest."""
    largest = CPU_LARGEST if device_type == "cpu" else LARGEST[profile]
    sizes = [1 << p for p in range(SMALLEST.bit_length() - 1, largest.bit_length())]
    if profile == "quick":
        sizes = sorted(set(sizes[::3] + [largest]))
    return sizes


def ops_per_sample(size_bytes: int, device_type: str = "cuda") -> int:
    """The same on every rank (each must call the collective equally often), from the size alone."""
    most = CPU_MAX_OPS_PER_SAMPLE if device_type == "cpu" else MAX_OPS_PER_SAMPLE
    return max(1, min(most, SAMPLE_BYTES // size_bytes))


def build_call(op: str, size_bytes: int, ranks: int, device: torch.device) -> tuple[Callable[[], object], int]:
    """The collective as a call on ready buffers, and its nccl-tests size. Inputs are random, not zeros;
    repeated sums let them grow, which changes nothing of a collective's speed."""
    n_in, n_out = busbw.shard_elements(op, size_bytes, ranks, ELEMENT_BYTES)
    x = torch.randn(n_in, device=device, dtype=DTYPE)
    out = torch.empty(n_out, device=device, dtype=DTYPE) if op in ("all_gather", "reduce_scatter") else x
    # all_gather_single / reduce_scatter_single are the newer names (torch 2.13) of the same calls.
    gather_fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter_fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    calls = {"all_reduce": lambda: dist.all_reduce(x), "broadcast": lambda: dist.broadcast(x, src=0),
             "all_gather": lambda: gather_fn(out, x), "reduce_scatter": lambda: scatter_fn(out, x)}
    return calls[op], busbw.message_bytes(op, n_in, n_out, ELEMENT_BYTES)


def time_samples(ctx: rank.RankContext, fn: Callable[[], object], ops: int, samples: int) -> list[float]:
    """This rank's seconds per operation in each sample."""
    timer = Timer(ctx.device)
    for _ in range(WARMUP_OPS):
        fn()
    synchronize(ctx.device)
    times = []
    for _ in range(samples):
        dist.barrier(group=ctx.control)  # the ranks start a sample together (to tens of µs)
        started = timer.start()
        for _ in range(ops):
            fn()
        times.append(timer.stop(started) / ops)
    return times


def measure_point(ctx: rank.RankContext, op: str, size_bytes: int, samples: int) -> CollectivePoint | None:
    """One op at one size on every rank; the point on rank 0 (None elsewhere). Buffers are allocated and
    agreed on first: a rank that cannot allocate must not leave the others waiting inside a collective."""
    problem, fn, size = None, None, size_bytes
    try:
        fn, size = build_call(op, size_bytes, ctx.world_size, ctx.device)
    except RuntimeError as e:
        problem = ("oom" if is_oom(e) else "error", f"{type(e).__name__}: {e}"[:500])
    problems = [p for p in rank.agree(ctx, problem) if p]
    ops = ops_per_sample(size, ctx.device.type)
    times = time_samples(ctx, fn, ops, samples) if not problems and fn else []
    fn = None
    free_memory(ctx.device)
    per_rank = rank.gather(ctx, times)
    if per_rank is None:
        return None
    if problems:
        return CollectivePoint(op, size, problems[0][0], reason=problems[0][1])
    mean_over_ranks = [statistics.fmean(sample) for sample in zip(*per_rank, strict=True)]
    time_s = summarize(mean_over_ranks)
    algbw = time_s.inverted(size)
    return CollectivePoint(op, size, "ok", time_s=time_s, algbw_bytes_per_s=algbw,
                           busbw_bytes_per_s=algbw.scaled(busbw.bus_factor(op, ctx.world_size)),
                           ops_per_sample=ops)


def run_points(ctx: rank.RankContext, profile: str) -> list[CollectivePoint]:
    sizes = message_sizes(profile, ctx.device.type)
    points = []
    with Progress(NAME, total=len(busbw.OPS) * len(sizes), stream=rank.progress_stream(ctx)) as bar:
        # The first collective sets up the communicator (seconds with NCCL): keep it out of the timings.
        dist.all_reduce(torch.ones(1, device=ctx.device))
        for op in busbw.OPS:
            for size in sizes:
                point = measure_point(ctx, op, size, SAMPLES[profile])
                if point is not None:
                    points.append(point)
                    bw = point.busbw_bytes_per_s
                    result = f"{bw.median / 1e9:.1f} GB/s bus" if bw else point.status
                    bar.advance(f"{op} {size >> 10} KiB: {result}")
    return points


def main(argv: list[str] | None = None) -> int:
    args = rank.build_parser("Time NCCL collectives on every rank; rank 0 writes collectives.json.").parse_args(argv)
    started = time.perf_counter()
    ctx = rank.start(args.backend, args.timeout)
    topology, why = read_topology(ctx.world_size) if ctx.is_root else (None, None)
    points = run_points(ctx, args.profile)
    launch = rank.launch_info(ctx)
    if launch is not None:
        payload = CollectivesPayload(
            backend=ctx.backend, device=ctx.device.type, world_size=ctx.world_size, dtype=DTYPE_NAME,
            profile=args.profile, points=points, launch=launch, elapsed_s=time.perf_counter() - started,
            topology=topology, topology_absent_reason=why, scale="tiny" if ctx.device.type == "cpu" else "reference")
        rank.save_from_root(ctx, NAME, NAME, VERSION, args.machine, payload, args.folder / f"{STEM}.json")
    rank.finish(ctx)  # leaves the process: exit status 0


if __name__ == "__main__":
    sys.exit(main())
