"""The least memory a traced step runs in: the caching allocator replayed at a capacity, cuDNN's workspaces with it.

The two replays of allocator.py bound what the allocator does with its cached segments (kept, or returned before
each new one). On a GPU it does one, then the other: it keeps them while cudaMalloc finds room, and only when a new
segment does not fit does it return its cached ones and try again, failing when that does not fit either
(c10/cuda/CUDACachingAllocator.cpp `malloc`: alloc_block, then release_cached_blocks and alloc_block again). That is
a rule of the capacity, so this replays it at one: `fits` says whether the step runs in `capacity` bytes of
segments, and `least_capacity` finds the least that does (by bisection: a step that fits in some bytes fits in more).

A convolution's workspace (workspace.py) is replayed as cuDNN takes it. PyTorch allocates it through the caching
allocator inside the convolution and frees it before it returns; where that allocation runs out of memory, it tries
the next plan cuDNN offers (aten/src/ATen/native/cudnn/Conv_v8.cpp `run_single_conv`: `try_configs` catches
c10::OutOfMemoryError), so a workspace never makes a step fail: it shrinks to what fits. Seen on an H100
(results/h100-80gb/diagnostics/memory-history-2026-11-28b): the conv rollout's TF32 3x3 convolution asked 16 GiB at
8,723 realizations, failed, and ran in 8 GiB, the same kernels over half as many images; here a failed workspace
is asked again at half its size, down to none. Its segment stays cached after it, and the step's next blocks are
carved out of it: the rollout's 3-channel outputs went into the workspace's 8 GiB segment where, without one, they
pinned a free 36.6 GB activation segment and the next activation needed a third (the replays without workspaces
needed 1.45 times the live peak, 111.5 GB, where the GPU reserved 83.5: exactly what it allocated).
"""

from __future__ import annotations

from collections.abc import Mapping

from collectors.trace.allocator import ROUND_LARGE, Allocator, OutOfMemory

FALLBACK_FLOOR = 1 << 20   # a plan's workspace below this: the plans that need none (nothing allocated)
PRECISION = 1 / 1024       # the least capacity found within this share of itself (or one 2 MiB segment rounding)
Plans = tuple[int, ...]


def _workspace(allocator: Allocator, key: int, plans: Plans, ran: dict[Plans, int]) -> None:
    """Allocate a workspace as PyTorch runs cuDNN: the plan that last ran for these shapes first (its cache), then
    every plan from the first; the first whose workspace is allocated runs and is cached; none fits: a plan that
    needs no workspace (cuDNN's fallback list)."""
    for nbytes in ((ran[plans],) if plans in ran else ()) + plans:
        if nbytes < FALLBACK_FLOOR:
            break
        try:
            allocator.malloc(key, nbytes)
            ran[plans] = nbytes
            return
        except OutOfMemory:
            continue
    ran[plans] = 0


def run(events: list[tuple[int, int]], workspaces: Mapping[int, Plans], capacity: int | None,
        release_empty: bool = False) -> Allocator:
    """Replay `events` at `capacity` bytes of segments (None: unbounded); raises OutOfMemory where a block does not
    fit after the cached segments were returned. `release_empty`: returned before each new segment, full or not."""
    allocator = Allocator(capacity=capacity, release_empty=release_empty)
    ran: dict[Plans, int] = {}
    for key, nbytes in events:
        if nbytes < 0:
            allocator.release(key)
        elif key in workspaces:
            _workspace(allocator, key, workspaces[key], ran)
        else:
            allocator.malloc(key, nbytes)
    return allocator


def fits(events: list[tuple[int, int]], workspaces: Mapping[int, Plans], capacity: int,
         release_empty: bool = False) -> bool:
    try:
        run(events, workspaces, capacity, release_empty)
    except OutOfMemory:
        return False
    return True


def least_capacity(events: list[tuple[int, int]], workspaces: Mapping[int, Plans] | None = None,
                   live_peak: int = 0, release_empty: bool = False) -> int:
    """The least capacity (bytes of segments) the step runs in: above the live peak (no allocator holds less), at
    most what the allocator reserves giving every workspace its first plan's size, keeping every segment (or
    returning the empty ones before each new one: `release_empty`)."""
    workspaces = workspaces or {}
    high = _most(events, workspaces, release_empty)
    low = min(live_peak, high) - 1
    while high - low > max(ROUND_LARGE, int(high * PRECISION)):
        middle = (low + high) // 2
        if fits(events, workspaces, middle, release_empty):
            high = middle
        else:
            low = middle
    return high


def _most(events: list[tuple[int, int]], workspaces: Mapping[int, Plans], release_empty: bool) -> int:
    """The most the unbounded allocator held in segments at once: a capacity the step surely runs in."""
    allocator = Allocator(release_empty=release_empty)
    most = 0
    ran: dict[Plans, int] = {}
    for key, nbytes in events:
        if nbytes < 0:
            allocator.release(key)
            continue
        if key in workspaces:
            _workspace(allocator, key, workspaces[key], ran)
        else:
            allocator.malloc(key, nbytes)
        most = max(most, allocator.reserved)
    return most
