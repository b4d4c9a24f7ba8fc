"""The answer first: per workload and target, what to run and what to expect, as data.

A `WorkloadAnswer` is read from the plan (the recommendations' `Settings` and the `Expected` throughput
built with them), never computed on its own, so the terminal (`gpuplan plan`), the report's decision page
and the snippets say the same thing as the recommendations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from planner.plan.expect import Expected
from planner.plan.plan import Plan, Target
from planner.plan.settings import Settings
from planner.plan.untimed import Untimed

ALLOCATOR_ENV = "PYTORCH_CUDA_ALLOC_CONF"


@dataclass(frozen=True)
class WorkloadAnswer:
    workload: str
    target: str              # the GPU or instance name as the plan lists it
    gpu: str
    gpu_count: int
    measured: bool           # settings measured on this GPU (True) or carried over with a predicted batch
    settings: Settings
    expected: Expected | None
    reasons: dict[str, str]  # setting → why (the recommendation's reason)
    loader_note: str         # where the data-loader figures come from
    validated: bool = True   # False: no published benchmark checks predictions for this GPU (marked †)
    untimed: list[Untimed] = field(default_factory=list)  # the collection's stages not timed (planner/plan/untimed.py)

    @property
    def allocator_env(self) -> dict[str, str]:
        return {ALLOCATOR_ENV: self.settings.allocator} if self.settings.allocator else {}

    def to_dict(self) -> dict:
        out = asdict(self)
        out["expected"] = self.expected.to_dict() if self.expected else None
        out["allocator_env"] = self.allocator_env
        return out


def answers_of_target(plan: Plan, target: Target) -> list[WorkloadAnswer]:
    source = next(t for t in plan.targets if t.is_source)
    reasons: dict[str, dict[str, str]] = {}
    for r in source.recommendations + (target.recommendations if not target.is_source else []):
        reasons.setdefault(r.workload, {})[r.setting] = r.reason
    out = []
    for workload, settings in target.settings.items():
        loader = settings.loader
        note = loader.reason if target.is_source else \
            f"measured on {plan.machine}'s host, not this one: {loader.reason}"
        out.append(WorkloadAnswer(workload, target.name, target.gpu.name, target.gpu_count, target.is_source,
                                  settings, target.expected.get(workload), reasons.get(workload, {}), note,
                                  target.validated, source.untimed.get(workload, [])))
    return out


def measured_answers(plan: Plan | None) -> dict[str, WorkloadAnswer]:
    """Per workload, the measured GPU's answer (one GPU), as the report's sections read it."""
    if plan is None:
        return {}
    source = next(t for t in plan.targets if t.is_source)
    return {a.workload: a for a in answers_of_target(plan, source) if a.gpu_count == 1}


def build_answers(plan: Plan) -> list[WorkloadAnswer]:
    """Every workload's answer on every target of the plan, the measured GPU first."""
    return [a for t in plan.targets for a in answers_of_target(plan, t)]
