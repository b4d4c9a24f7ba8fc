"""Where a plan starts: the measured (or traced) machine as a Source, its rates, per-op profiles and prediction bands,
and the GPUs a published check validates; PlanError for a machine the planner cannot use."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuplan_schema.payloads import RooflinePayload, WorkloadPayload
from gpuplan_schema.results import MachineResults
from gpuplan_schema.schema import DocumentError
from planner.check.bands import BandTable
from planner.check.crossarch import CrossCheck, build_crosscheck
from planner.model.memory import Allocator, MemoryFit, fit_memory
from planner.model.performance import (
    Rates,
    measured_rates,
)
from planner.model.split import machine_rooflines
from planner.plan.measured import Measured
from planner.specs import GpuSpec, match_gpu
from planner.trace.bands import trace_bands
from planner.trace.hybrid import trace_rooflines
from planner.trace.machine import is_prediction
from planner.trace.model_file import load_learned


class PlanError(DocumentError):
    """A plan that cannot be made: an unknown target, a machine without the results a plan needs."""

    def __init__(self, where: str, problem: str):
        super().__init__(where, "", problem)


@dataclass(frozen=True)
class Source:
    machine: MachineResults
    spec: GpuSpec
    rates: Rates
    rooflines: list[RooflinePayload] = field(default_factory=list)   # the measured per-op profiles
    bands: BandTable = field(default_factory=BandTable)
    validated: frozenset[str] = frozenset()
    traced: bool = False   # predicted from a trace (planner/trace): no figure of the source GPU was measured
    # profiles of the steps the folder did not profile, from the model's trace beside it (planner/trace/hybrid.py):
    # they split those steps on other GPUs; the measured GPU's own verdicts read the measured profiles alone
    trace_rooflines: list[RooflinePayload] = field(default_factory=list)

    @property
    def split_rooflines(self) -> list[RooflinePayload]:
        """What a step predicted on another GPU is split by: the measured profiles, then the trace's."""
        memo = self.__dict__.setdefault("_split_rooflines", [])  # one list, so split.py's memo keeps its splits
        if not memo:
            memo.extend(self.rooflines + self.trace_rooflines)
        return memo

    def memory_fit(self, payload: WorkloadPayload, precision: str, allocator: Allocator = "default"
                   ) -> MemoryFit | None:
        """fit_memory of the measured card, worked out once per workload, precision and allocator: every GPU a plan
        predicts (its targets, each catalog GPU a ranking reads) asks for the same fits."""
        memo = self.__dict__.setdefault("_memory_fits", {})  # not a field: a replaced Source works them out anew
        key = (payload.workload, precision, allocator)
        if key not in memo:
            memo[key] = fit_memory(payload, precision, self.spec.memory_bytes, allocator)
        return memo[key]


def load_source(machine: MachineResults) -> Source:
    name = machine.gpu_name
    spec = match_gpu(name) if name else None
    if spec is None or machine.ceilings is None or not machine.workloads:
        missing = "catalog entry for its GPU" if spec is None else "ceilings.json" if machine.ceilings is None \
            else "workload documents"
        raise PlanError(str(machine.folder), f"a plan needs a GPU machine's ceilings and workloads: no {missing}")
    return Source(machine, spec, measured_rates(machine.ceilings), machine_rooflines(machine),
                  trace_rooflines=trace_rooflines(machine))


def plannable(machine: MachineResults) -> bool:
    name = machine.gpu_name
    return bool(name and match_gpu(name) and machine.ceilings is not None and machine.workloads)


def prepare_source(machine: MachineResults, context: Measured) -> tuple[Source, CrossCheck | None]:
    """The source with what its predictions carry: bands from the residuals of the loaded machines, and the GPUs
    a published cross-architecture check (or a measurement among them) validates. A machine predicted from a
    trace carries the trace's bands (planner/trace/bands.py) and validates no GPU: nothing of it was measured."""
    source = load_source(machine)
    if is_prediction(machine):
        return replace(source, bands=trace_bands(load_learned().residuals), traced=True), None
    check = build_crosscheck(machine)
    validated = (check.validated_gpus() if check else set()) | context.validated
    return replace(source, bands=context.band_table, validated=frozenset(validated)), check
