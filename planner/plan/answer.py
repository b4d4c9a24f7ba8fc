"""The answer first: per workload and target, what to run and what to expect, as data.

A `WorkloadAnswer` is read from the plan (the recommendations' `Settings` and the `Expected` throughput
built with them), never computed on its own, so the terminal (`gpuplan plan`), the report's decision page
and the snippets say the same thing as the recommendations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from planner.plan.expect import Expected
from planner.plan.plan import Plan, Target
from planner.plan.recommend import MEASURE_LOADER
from planner.plan.settings import Settings
from planner.plan.untimed import Untimed

ALLOCATOR_ENV = "PYTORCH_CUDA_ALLOC_CONF"
LOADER_DEFAULT, WIDE_RANGE, UNTIMED, FROM_TRACE = "loader-default", "wide-range", "untimed", "from-trace"
TRACE_WORDS = ("predicted from a trace: no GPU measured (gpuplan trace); the range is the spread of predicting each "
               "reference workload from its trace without its own measurements (docs/trace.md)")


@dataclass(frozen=True)
class Note:
    """A flag on an answer, typed: `kind` says what it is (LOADER_DEFAULT: the worker count is a stated default;
    WIDE_RANGE: the range is wider than ±25% and `text` says why; FROM_TRACE: the plan's source is a trace, nothing
    of it measured; a partial collection adds its own kinds), `text`
    says it in words. Outputs print each distinct note once and mark the answers that carry it."""

    kind: str
    text: str


@dataclass(frozen=True)
class WorkloadAnswer:
    workload: str
    target: str              # the GPU or instance name as the plan lists it
    gpu: str
    gpu_count: int
    measured: bool           # the source GPU's answer (True: measured there, or predicted there from a trace when
                             # `traced`), or another GPU's, carried over with a predicted batch
    settings: Settings
    expected: Expected | None
    reasons: dict[str, str]  # setting → why (the recommendation's reason)
    loader_note: str         # where the data-loader figures come from
    validated: bool = True   # False: no published benchmark checks predictions for this GPU (marked †)
    notes: tuple[Note, ...] = ()
    untimed: list[Untimed] = field(default_factory=list)  # the collection's stages not timed (planner/plan/untimed.py)
    traced: bool = False     # the plan's source is a trace (planner/trace): no figure of it was measured

    @property
    def how(self) -> str:
        """How its figures were obtained, in the words every output uses."""
        return "predicted from a trace" if self.traced else "measured" if self.measured else "predicted"

    @property
    def bound(self) -> str:
        """The bound's label ('memory-bandwidth-bound'; 'undetermined' without an expected figure)."""
        return self.expected.judgement.label if self.expected else "undetermined"

    @property
    def allocator_env(self) -> dict[str, str]:
        return {ALLOCATOR_ENV: self.settings.allocator} if self.settings.allocator else {}

    def to_dict(self) -> dict:
        out = asdict(self)
        out["expected"] = self.expected.to_dict() if self.expected else None
        out["allocator_env"] = self.allocator_env
        out["bound"] = self.bound
        out["measured"] = self.measured and not self.traced
        return out


def answer_notes(settings: Settings, expected: Expected | None, measured: bool,
                 untimed: list[Untimed] = (), traced: bool = False) -> tuple[Note, ...]:
    """The flags an answer carries, from its typed fields; a stage of the collection not timed is one note each
    (UNTIMED), so a plan from a cut collection says what it lacks beside every answer it touches; a plan from a
    trace says so beside every answer (FROM_TRACE)."""
    notes = [Note(FROM_TRACE, TRACE_WORDS)] if traced else []
    notes += [Note(UNTIMED, f"{u.what} not timed here: {u.could_change}") for u in untimed]
    if measured and not settings.loader.measured:
        notes.append(Note(LOADER_DEFAULT, f"loader workers not measured for this input: {settings.loader.workers} "
                                          f"is a default; {MEASURE_LOADER}"))
    if expected and expected.wide_note:
        notes.append(Note(WIDE_RANGE, expected.wide_note))
    return tuple(notes)


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
        expected = target.expected.get(workload)
        untimed = source.untimed.get(workload, [])
        out.append(WorkloadAnswer(workload, target.name, target.gpu.name, target.gpu_count, target.is_source,
                                  settings, expected, reasons.get(workload, {}), note, target.validated,
                                  answer_notes(settings, expected, target.is_source, untimed, plan.traced), untimed,
                                  plan.traced))
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
