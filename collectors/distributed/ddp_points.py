"""From the ranks' step times to one `ddp` point: throughput, scaling efficiency, straggler.

Plain functions of the gathered results, apart from torch.distributed, so they are tested alone.
"""

from __future__ import annotations

from gpuplan_schema.payloads import DdpPoint, DdpWorkload, RankStep
from gpuplan_schema.stats import Stat

# What one rank sends to rank 0 for a world size: (problem, step without sync, step with sync), where
# a problem is (status, reason).
RankResult = tuple[tuple[str, str] | None, Stat | None, Stat | None]


def world_sizes(ranks: int) -> list[int]:
    """1, 2, 4, … below `ranks`, then `ranks` itself: 1, 2, 4 on four GPUs; 1, 2, 3 on three."""
    sizes, k = [], 1
    while k < ranks:
        sizes.append(k)
        k *= 2
    return sizes + [ranks]


def build_point(workload: str, gpus: int, batch: int, precision: str, results: list[RankResult],
                baseline: DdpPoint | None, info: DdpWorkload | None) -> DdpPoint:
    """The point of `gpus` ranks. Throughput counts the samples of all ranks over the slowest rank's step;
    efficiency compares it with `gpus` times the 1-GPU point (the same DDP code on one GPU)."""
    problems = [r[0] for r in results if r[0] is not None]
    if problems:
        status, reason = problems[0]
        return DdpPoint(workload, gpus, batch, precision, status, reason=reason)  # type: ignore[arg-type]
    ranks = [RankStep(i, synced, alone) for i, (_, alone, synced) in enumerate(results)]
    timed = [r for r in ranks if r.step_s is not None and r.compute_step_s is not None]
    if len(timed) != len(ranks):
        return DdpPoint(workload, gpus, batch, precision, "error", reason="a rank returned no step time", ranks=ranks)
    slowest = max(timed, key=lambda r: r.step_s.median)
    straggler = max(timed, key=lambda r: r.compute_step_s.median)
    throughput = gpus * batch / slowest.step_s.median
    tokens = throughput * info.tokens_per_sample if info is not None and info.tokens_per_sample else None
    if gpus == 1:
        efficiency = 1.0
    elif baseline is not None and baseline.throughput_per_s:
        efficiency = throughput / (gpus * baseline.throughput_per_s)
    else:
        efficiency = None
    return DdpPoint(workload, gpus, batch, precision, "ok", step_s=slowest.step_s,
                    compute_step_s=straggler.compute_step_s, throughput_per_s=throughput, tokens_per_s=tokens,
                    scaling_efficiency=efficiency, straggler_rank=straggler.rank, ranks=ranks)


def parse_batch_pairs(pairs: list[str]) -> dict[str, int]:
    """`--batch gpt-small=64` options as {name: per-GPU batch}; ValueError names the bad one."""
    batches = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if not name or not value.isdigit() or int(value) < 1:
            raise ValueError(f"--batch {pair}: expected NAME=N, N a positive whole number (e.g. gpt-small=32)")
        batches[name] = int(value)
    return batches
