"""What a measured out-of-memory boundary was measured against: the memory the search's probes could have.

The collector searches a boundary in a child process (collectors/workloads/boundary_process.py) while its own
process waits with the GPU parked. What the parent still holds is not the probe's: usually its CUDA context
(0.5-1.6 GiB), but on the H100 Transformer-XL's bf16 search met 19.19 GiB held by it (and the H200's 1.97 GiB), so
the boundary measured there, 75, says less about the model than its fp16 one, 112. CUDA's out-of-memory message
names every other process on the GPU with what it holds ("Process 472 has 19.19 GiB memory in use"), and the search
keeps the message of each probe that failed: the memory the probes had is the card less that.

A trace predicts a job alone on its GPU; checked against a measured boundary, it is given the card less what the
other processes held during that search.
"""

from __future__ import annotations

import re
import statistics

from gpuplan_schema.payloads import OomBoundary, WorkloadPayload

_OTHER = re.compile(r"Process \d+ has ([\d.]+) (GiB|MiB|KiB|B) memory in use")
_UNIT = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "B": 1}


def others_in(reason: str | None) -> float | None:
    """The bytes other processes held, from one CUDA out-of-memory message (None: not such a message)."""
    if not reason or "out of memory" not in reason.lower():
        return None
    return sum(float(n) * _UNIT[u] for n, u in _OTHER.findall(reason))


def others_during(payload: WorkloadPayload, boundary: OomBoundary) -> float:
    """The median bytes other processes held while `boundary` was searched (its failed probes' messages); 0 where
    no probe failed with a message to read."""
    held = [b for p in payload.points
            if p.sweep == "probe" and p.precision == boundary.precision and p.status == "oom"
            and p.allocator == boundary.allocator and (b := others_in(p.reason)) is not None]
    return statistics.median(held) if held else 0.0
