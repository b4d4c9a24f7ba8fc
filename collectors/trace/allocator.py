"""What the CUDA caching allocator would reserve for a traced step: its allocations and frees replayed in their order.

A step runs out of memory when the allocator needs a new segment and the GPU has no room for it, after it returned
its cached empty segments (c10/cuda/CUDACachingAllocator.cpp). So what sets the largest batch is not the live bytes
at the peak but the segments that hold live blocks when a request finds no free block big enough: live bytes plus
the holes between them (fragmentation), plus the new segment. This replays the trace's allocations through the
allocator's rules and returns the most that ever needed:

- a request is rounded up to 512 bytes; up to 1 MiB it comes from the small pool (2 MiB segments), larger from the
  large pool (20 MiB segments up to 10 MiB, else its size rounded up to 2 MiB);
- the smallest free block of its pool that holds it is used (best fit; of equal ones the newer segment's, Block.key),
  split where the rest is at least 512 bytes (small pool) or more than 1 MiB (large pool); a freed block merges with
  free neighbours of its segment;
- without a free block a segment is allocated: needed = the bytes of the segments holding a live block + the new one.

PyTorch's defaults (no max_split_size, no expandable segments, no garbage collection threshold).

Two policies bound what the allocator does with the segments it caches empty. While the GPU has room it keeps them,
and a later block that fits one is carved out of it (a long-lived block in a cached 18 GiB logits segment keeps the
next logits out of it); once a new segment does not fit, it returns them (release_cached_blocks) and carves nothing
it does not hold. `release_empty` replays the second from the start. Measured at the H100's boundaries, the first
reproduces gpt-small's reservation (83.3 GB replayed, 83.5 GB reserved, where the second needs 91.0) and the second
Transformer-XL's (80.3 GB against 80.4 GB at batch 96 in fp32, where the first needs 97.6) and dlrm-small's (80.7
against 81.4 GB, the first 85.7): where between them a workload falls is not known from its allocations alone (the
planner learns which of the two to read from the measured boundaries, planner/trace/learn.py). Both leave cuDNN's
workspaces out (workspace.py): capacity.py replays the allocator at a capacity with them (`capacity`: the bytes its
segments may take, OutOfMemory past them), the replay the planner reads where a trace has it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20          # kSmallSize: the largest small-pool request
SMALL_BUFFER = 2 << 20        # kSmallBuffer: a small-pool segment
LARGE_BUFFER = 20 << 20       # kLargeBuffer: a segment for requests of 1 to 10 MiB
MIN_LARGE_ALLOC = 10 << 20    # kMinLargeAlloc
ROUND_LARGE = 2 << 20         # kRoundLarge
NEWEST = 1 << 62              # above any segment's index: where a pool's search for a size starts


class OutOfMemory(Exception):  # noqa: N818 - named as torch's OutOfMemoryError, which it stands for
    """No segment of `size` bytes fits the allocator's capacity, even after it returned its cached ones."""


def round_size(size: int) -> int:
    return MIN_BLOCK if size < MIN_BLOCK else -(-size // MIN_BLOCK) * MIN_BLOCK


def segment_size(size: int) -> int:
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    return LARGE_BUFFER if size < MIN_LARGE_ALLOC else -(-size // ROUND_LARGE) * ROUND_LARGE


@dataclass
class Block:
    segment: int
    offset: int
    size: int
    free: bool = True
    prev: Block | None = field(default=None, repr=False)
    next: Block | None = field(default=None, repr=False)

    @property
    def key(self) -> tuple[int, int, int]:
        """Best fit's order: by size, then by address. The allocator compares addresses; CUDA gives each new large
        segment a lower address than the last (every H100 record: 0x7f53d0…, 0x7f4b5c…, 0x7f4958…), so of two
        equal free blocks the newer segment's is taken (sensor-cnn's second convolution's output went into the
        norm's cached fp32 copy, not into an older segment's equal hole)."""
        return self.size, -self.segment, self.offset


@dataclass
class Pool:
    free: list[tuple[int, int, int]] = field(default_factory=list)   # (size, segment, offset), sorted
    by_key: dict[tuple[int, int, int], Block] = field(default_factory=dict)

    def add(self, block: Block) -> None:
        bisect.insort(self.free, block.key)
        self.by_key[block.key] = block

    def remove(self, block: Block) -> None:
        key = block.key
        self.free.pop(bisect.bisect_left(self.free, key))
        del self.by_key[key]

    def best_fit(self, size: int) -> Block | None:
        i = bisect.bisect_left(self.free, (size, -NEWEST, -1))
        return self.by_key[self.free[i]] if i < len(self.free) else None


@dataclass
class Allocator:
    small: Pool = field(default_factory=Pool)
    large: Pool = field(default_factory=Pool)
    segments: list[int] = field(default_factory=list)       # segment → its size
    in_small: list[bool] = field(default_factory=list)      # segment → whether it is the small pool's
    used: list[int] = field(default_factory=list)           # segment → its live blocks
    live: dict[int, Block] = field(default_factory=dict)    # storage key → its block
    held: int = 0                                           # bytes of the segments holding a live block
    needed: int = 0                                         # the most `held` + a new segment ever came to
    release_empty: bool = False   # return the cached empty segments before each new one (module docstring)
    empty: set[int] = field(default_factory=set)            # the segments with no live block (cached)
    capacity: int | None = None   # the bytes its segments may take (capacity.py); None: as many as it needs
    reserved: int = 0             # bytes of the segments it holds, live or cached

    def malloc(self, key: int, nbytes: int) -> None:
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        pool = self.small if small else self.large
        block = pool.best_fit(size)
        if block is None:
            block = self._segment(segment_size(size), small)
            pool.add(block)
        pool.remove(block)
        rest = block.size - size
        if rest >= MIN_BLOCK if small else rest > SMALL_SIZE:
            tail = Block(block.segment, block.offset + size, rest, True, block, block.next)
            if block.next:
                block.next.prev = tail
            block.next, block.size = tail, size
            pool.add(tail)
        block.free = False
        if self.used[block.segment] == 0:
            self.empty.discard(block.segment)
            self.held += self.segments[block.segment]
            self.needed = max(self.needed, self.held)
        self.used[block.segment] += 1
        self.live[key] = block

    def _segment(self, size: int, small: bool) -> Block:
        self.needed = max(self.needed, self.held + size)
        if self.release_empty:
            self.release_cached()
        if self.capacity is not None and self.reserved + size > self.capacity:
            self.release_cached()   # at its limit the allocator returns its cached segments and tries again
            if self.reserved + size > self.capacity:
                raise OutOfMemory(size)
        self.reserved += size
        self.segments.append(size)
        self.in_small.append(small)
        self.used.append(0)
        return Block(len(self.segments) - 1, 0, size)

    def release_cached(self) -> None:
        """cudaFree every segment with no live block (the allocator's release_cached_blocks; empty_cache too): their
        blocks leave the pools, and what is allocated next takes a fresh segment or a hole in a held one."""
        for segment in self.empty:
            pool = self.small if self.in_small[segment] else self.large
            pool.remove(pool.by_key[(self.segments[segment], -segment, 0)])
            self.reserved -= self.segments[segment]
            self.segments[segment] = 0
        self.empty.clear()

    def release(self, key: int) -> None:
        block = self.live.pop(key, None)
        if block is None:
            return
        pool = self.small if self.in_small[block.segment] else self.large
        block.free = True
        for neighbour in (block.prev, block.next):
            if neighbour is not None and neighbour.free:
                pool.remove(neighbour)
                block = _merge(block, neighbour)
        pool.add(block)
        self.used[block.segment] -= 1
        if self.used[block.segment] == 0:
            self.empty.add(block.segment)
            self.held -= self.segments[block.segment]



def _merge(block: Block, other: Block) -> Block:
    first, second = (block, other) if block.offset < other.offset else (other, block)
    first.size += second.size
    first.next = second.next
    if second.next:
        second.next.prev = first
    first.free = True
    return first


def replay(events: list[tuple[int, int]], release_empty: bool = False,
           workspaces: frozenset[int] = frozenset()) -> Allocator:
    """Replay `events` ((storage key, bytes) an allocation, (key, -1) a free: the weights, the batch, both steps),
    leaving out the convolutions' workspaces (`workspaces`: their keys; capacity.py replays them)."""
    allocator = Allocator(release_empty=release_empty)
    for key, nbytes in events:
        if key in workspaces:
            continue
        if nbytes < 0:
            allocator.release(key)
        else:
            allocator.malloc(key, nbytes)
    return allocator


def reserved_peak(events: list[tuple[int, int]], release_empty: bool = False,
                  workspaces: frozenset[int] = frozenset()) -> int:
    """The most the allocator needed over `events`: the segments holding a live block and the one a request had to
    add. `release_empty`: returning its empty segments before each new one, as it does when the GPU is full."""
    allocator = replay(events, release_empty, workspaces)
    return max(allocator.needed, allocator.held)
