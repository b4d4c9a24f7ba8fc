"""Algorithm and bus bandwidth of collectives, with the definitions of nccl-tests (doc/PERFORMANCE.md).

`size` is what nccl-tests calls the message size: the whole buffer of all_reduce and broadcast, and
for all_gather and reduce_scatter the whole gathered (or scattered) buffer, n × each rank's shard.
algbw = size / time. busbw = algbw × a factor that makes figures of different rank counts comparable
with the hardware's link speed: the bytes each rank must send or receive per byte of `size`.

    all_reduce       2 (n - 1) / n     (a reduce-scatter then an all-gather)
    all_gather       (n - 1) / n
    reduce_scatter   (n - 1) / n
    broadcast        1

Standard library only: the planner uses it too.
"""

from __future__ import annotations

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")


def bus_factor(op: str, ranks: int) -> float:
    if ranks < 1:
        raise ValueError(f"{ranks} ranks: a collective needs at least one")
    factors = {"all_reduce": 2 * (ranks - 1) / ranks, "all_gather": (ranks - 1) / ranks,
               "reduce_scatter": (ranks - 1) / ranks, "broadcast": 1.0}
    if op not in factors:
        raise ValueError(f"{op!r} is not one of {', '.join(OPS)}")
    return factors[op]


def shard_elements(op: str, size_bytes: int, ranks: int, element_bytes: int) -> tuple[int, int]:
    """(input elements, output elements) per rank for a message of `size_bytes` (nccl-tests' size),
    rounded down so that the whole buffer splits into equal shards of whole elements."""
    elements = size_bytes // element_bytes
    if op in ("all_gather", "reduce_scatter"):
        shard = max(1, elements // ranks)
        return (shard, shard * ranks) if op == "all_gather" else (shard * ranks, shard)
    return elements, elements


def message_bytes(op: str, input_elements: int, output_elements: int, element_bytes: int) -> int:
    """nccl-tests' size of a call, from its buffers: the larger of input and output."""
    return max(input_elements, output_elements) * element_bytes


def algbw(size_bytes: int, seconds: float) -> float:
    return size_bytes / seconds


def busbw(op: str, ranks: int, size_bytes: int, seconds: float) -> float:
    return algbw(size_bytes, seconds) * bus_factor(op, ranks)
