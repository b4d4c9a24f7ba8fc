"""What a plan reads of the machines loaded beside the one it plans, computed once and shared.

A plan cites its siblings for three things: the prediction bands (the accuracy pairs and published checks,
planner/check/bands.py), the GPUs a measurement validates, and the multi-GPU scaling and node ranking. The
site plans every machine of a root against the same siblings, so it builds one `Measured` and hands it to
every plan: each of those is then computed once per site build, not once per machine.

A plan reads its siblings only through this object, which is what makes `digest` an honest cache key: two
roots whose `digest` agree give a machine the same plan (planner/site/cache.py relies on it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from gpuplan_schema.results import MachineResults
from planner.check.accuracy import comparable
from planner.check.bands import BandTable, band_table_for
from planner.check.scaling_check import build_sync_model
from planner.rank.nodes import measured_node, socket_of
from planner.scaling.assumed_scaling import ScalingProvider
from planner.scaling.intra_node import SyncModel
from planner.scaling.network import MeasuredNode, SocketLink
from planner.scaling.scaling import MeasuredEfficiency, build_scaling, gather_efficiencies
from planner.specs import match_gpu


@dataclass(frozen=True, eq=False)
class Measured:
    machines: tuple[MachineResults, ...]  # every machine loaded, the planned one among them
    cited: tuple[MachineResults, ...]     # those whose multi-GPU runs set the scaling (the caller's `measured`)

    @classmethod
    def of(cls, machine: MachineResults, measured: Sequence[MachineResults] | Measured = ()) -> Measured:
        """The machines a plan of `machine` reads: `measured` itself where it already holds the machine."""
        if isinstance(measured, Measured):
            if any(m.machine == machine.machine for m in measured.machines):
                return measured
            measured = measured.cited
        everything = {m.machine: m for m in (machine, *measured)}
        return cls(tuple(everything.values()), tuple(measured))

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(m.machine for m in self.machines)

    @cached_property
    def band_table(self) -> BandTable:
        return band_table_for(self.machines)

    @cached_property
    def validated(self) -> frozenset[str]:
        """The catalog GPUs that a comparable measured machine among them validates."""
        return frozenset(g.name for m in self.machines if comparable(m) and (g := match_gpu(m.gpu_name or "")))

    @cached_property
    def efficiencies(self) -> list[MeasuredEfficiency]:
        return gather_efficiencies(self.cited)

    @cached_property
    def scaling(self) -> ScalingProvider:
        return build_scaling(self.efficiencies, self.sync_model)

    @cached_property
    def sync_model(self) -> SyncModel | None:
        return build_sync_model(self.cited)

    @cached_property
    def node(self) -> MeasuredNode | None:
        return measured_node(self.machines)

    @cached_property
    def socket(self) -> SocketLink | None:
        return socket_of(self.machines)

    def known_digest(self, digest: str) -> None:
        """`digest` as worked out before for the same machines (their folders' documents unchanged): the site's
        cache keeps it, so that an unchanged root need not build the band table to find its pages."""
        self.__dict__["digest"] = digest

    @cached_property
    def digest(self) -> str:
        """Everything above, as text: equal digests, equal reads (each value's repr holds every figure)."""
        parts = (self.band_table, sorted(self.validated), self.efficiencies, self.sync_model, self.node, self.socket)
        return hashlib.sha256(repr(parts).encode()).hexdigest()
