"""The memory a traced step holds, op by op, as a GPU's caching allocator would count it.

Meta tensors hold no memory, but each still has a storage of a size, and a storage lives as long as any tensor
addresses it (PyTorch keeps one Python object per storage while it lives, so a weak reference's callback fires
when the last tensor on it is freed). The live bytes are counted as `torch.cuda.memory_allocated` counts them:
each storage rounded up to the allocator's 512-byte blocks. Every storage is counted in the category of the phase
that made it (parameters and inputs before the step, optimizer state in the optimizer's first step, the forward's
activations, the backward's gradients and buffers), and the breakdown at the peak is kept.

A storage is counted once per allocation, and a storage can share another's allocation (`share`): what an op writes
in place on a GPU but into a new tensor on meta (the recorder says which) keeps the one allocation alive until the
last storage on it is freed, as the GPU's one tensor lives.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import torch

BLOCK = 512  # the CUDA caching allocator rounds every block up to this (c10/cuda/CUDACachingAllocator.cpp)
CATEGORIES = ("parameters", "inputs", "gradients", "optimizer", "activations", "other")
PHASE_CATEGORY = {"forward": "activations", "backward": "gradients", "optimizer": "optimizer"}


def rounded(nbytes: int) -> int:
    return -(-nbytes // BLOCK) * BLOCK if nbytes else 0


@dataclass
class LiveMemory:
    """Live bytes by category, the peak, the breakdown at the peak and a timeline (op index, live bytes)."""

    live: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    peak: int = 0
    at_peak: dict[str, int] = field(default_factory=dict)
    timeline: list[tuple[int, int]] = field(default_factory=list)
    seen: dict[int, tuple[str, int]] = field(default_factory=dict)   # allocation → (category, bytes)
    ops: int = 0
    largest: int = 0   # the largest block allocated in the step: what fragmentation must find room for
    events: list[tuple[int, int]] = field(default_factory=list)   # (allocation, bytes) made, (allocation, -1) freed
    owner: dict[int, int] = field(default_factory=dict)    # a live storage (its _cdata) → its allocation
    storages: dict[int, int] = field(default_factory=dict)  # allocation → how many live storages are on it
    allocations: int = 0
    workspaces: dict[int, tuple[int, ...]] = field(default_factory=dict)   # cuDNN's workspaces → their plans'
                                                                            # sizes, in turn (workspace.py)

    @property
    def total(self) -> int:
        return sum(self.live.values())

    def adopt(self, tensors: object, category: str) -> None:
        """Count tensors made outside the recorder (the model's weights, the batch, the optimizer's state)."""
        for t in _tensors(tensors):
            self.add(t, category)

    def add(self, t: torch.Tensor, category: str) -> None:
        if t.layout != torch.strided:
            return
        storage = t.untyped_storage()
        if storage._cdata in self.owner:
            return
        self.allocations += 1
        key = self.allocations
        size = rounded(storage.nbytes())
        self.events.append((key, storage.nbytes()))
        self.largest = max(self.largest, size)
        self.seen[key] = (category, size)
        self.live[category] += size
        self._hold(storage, key)
        if self.total > self.peak:
            self.peak = self.total
            self.at_peak = dict(self.live)

    def hold(self, nbytes: int, category: str = "other") -> None:
        """An allocation no tensor stands for, kept to the end, that a step run before this one made (a cuBLAS
        handle's workspace): live from now on, first in the allocator's replay."""
        self.allocations += 1
        size = rounded(nbytes)
        self.events.insert(0, (self.allocations, nbytes))
        self.seen[self.allocations] = (category, size)
        self.live[category] += size
        if self.total > self.peak:
            self.peak = self.total
            self.at_peak = dict(self.live)

    def workspace(self, plans: tuple[int, ...]) -> None:
        """A workspace allocated and freed inside one call, of the first of `plans` that fits: an allocation of the
        allocator's replay (capacity.py), not of the live bytes (at the largest batch that fits, it is what is
        left over)."""
        if not plans or plans[0] <= 0:
            return
        self.allocations += 1
        self.workspaces[self.allocations] = plans
        self.events += [(self.allocations, plans[0]), (self.allocations, -1)]

    def allocation(self, t: object) -> int | None:
        """The allocation a live tensor's storage is on (None: not a strided tensor this counted)."""
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            return None
        return self.owner.get(t.untyped_storage()._cdata)

    def share(self, t: torch.Tensor, base: torch.Tensor) -> None:
        """Count `t` on `base`'s allocation (no new bytes): the GPU writes it into `base`'s memory."""
        storage = t.untyped_storage()
        key = self.allocation(base)
        if key is None or storage._cdata in self.owner:
            self.add(t, "other")
            return
        self._hold(storage, key)

    def unshare(self, t: torch.Tensor, category: str) -> None:
        """`t` shared an allocation (share) but lives beside it after all: a block of its own from now."""
        key = self.owner.pop(t.untyped_storage()._cdata, None)
        if key is not None:
            self.storages[key] -= 1
        self.add(t, category)

    def _hold(self, storage: torch.UntypedStorage, key: int) -> None:
        cdata = storage._cdata
        self.owner[cdata] = key
        self.storages[key] = self.storages.get(key, 0) + 1
        weakref.finalize(storage, self._free, cdata)

    def _free(self, cdata: int) -> None:
        key = self.owner.pop(cdata, None)
        if key is None:
            return
        self.storages[key] -= 1
        if self.storages[key]:
            return
        del self.storages[key]
        category, size = self.seen.pop(key, ("other", 0))
        self.live[category] -= size
        self.events.append((key, -1))

    def mark(self) -> None:
        """One op done: a point of the timeline."""
        self.ops += 1
        self.timeline.append((self.ops, self.total))

    def reset_peak(self) -> None:
        """Start a new step: its peak is measured from what is live now."""
        self.peak = self.total
        self.at_peak = dict(self.live)
        self.timeline = [(0, self.total)]
        self.ops = 0
        self.largest = 0


def _tensors(value: object) -> list[torch.Tensor]:
    from torch.utils._pytree import tree_leaves
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def thin(timeline: list[tuple[int, int]], points: int = 64) -> list[tuple[int, int]]:
    """At most `points` of the timeline, the peak and the ends kept (a document holds a chart's worth, not every op)."""
    if len(timeline) <= points:
        return list(timeline)
    step = len(timeline) / points
    keep = {int(i * step) for i in range(points)} | {0, len(timeline) - 1,
                                                     max(range(len(timeline)), key=lambda i: timeline[i][1])}
    return [timeline[i] for i in sorted(keep)]
