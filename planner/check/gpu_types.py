"""One machine per GPU type: what the checks between machines compare.

A fleet holds many hosts of a few GPU types. The accuracy pairs (one GPU predicting another) and the published
cross-architecture checks compare GPU types, so they are made from one machine of each type: a root of 200
H100 and H200 hosts costs two machines' checks, not 200 × 200 pairs, and every plan built from that root reads
the same checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpuplan_schema.results import MachineResults
from planner.specs import match_gpu


def gpu_type(machine: MachineResults) -> str:
    """The catalog GPU's name, or the machine's own name where its GPU is not in the catalog (it stands alone)."""
    spec = match_gpu(machine.gpu_name) if machine.gpu_name else None
    return spec.name if spec else f"machine:{machine.machine}"


def one_per_gpu_type(machines: Iterable[MachineResults], usable: Callable[[MachineResults], bool]
                     ) -> list[MachineResults]:
    """Of the usable machines, the one per GPU type that measured the most workloads (then the first by name),
    ordered by name so that the result does not depend on the order the machines were given in."""
    best: dict[str, MachineResults] = {}
    for m in machines:
        if not usable(m):
            continue
        kind = gpu_type(m)
        if kind not in best or (-len(m.workloads), m.machine) < (-len(best[kind].workloads), best[kind].machine):
            best[kind] = m
    return sorted(best.values(), key=lambda m: m.machine)
