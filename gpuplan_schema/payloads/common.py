"""Types that several documents' payloads share."""

from __future__ import annotations

from typing import Literal

Status = Literal["ok", "oom", "skipped", "error"]
# The CUDA caching allocator a boundary was searched with: PyTorch's default, or with expandable
# segments (collectors/core/allocator.py), where fragmentation no longer sets the boundary.
Allocator = Literal["default", "expandable_segments"]
