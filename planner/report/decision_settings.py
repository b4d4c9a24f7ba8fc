"""The decision page's settings per workload: the measured GPU's answers (planner/plan/answer.py), the one
source the terminal's `gpuplan plan` and the snippets read too, so the page cannot say anything the
recommendations do not. `settings_of(plan)` is the adapter the page and the frame use."""

from __future__ import annotations

from dataclasses import dataclass

from planner.plan.answer import WorkloadAnswer, build_answers
from planner.plan.plan import Plan
from planner.plan.recommend import Recommendation
from planner.report.snippets import build_snippet_python, build_snippet_yaml


@dataclass(frozen=True)
class Settings:
    """One workload's recommended settings on the measured GPU, as the page needs them."""

    answer: WorkloadAnswer
    extra: list[Recommendation]     # learning rate, gradient accumulation: said in words under the snippet

    @property
    def workload(self) -> str:
        return self.answer.workload

    @property
    def precision(self) -> str:
        return self.answer.settings.precision

    @property
    def batch(self) -> int | None:
        return self.answer.settings.batch

    @property
    def compile(self) -> bool:
        return self.answer.settings.torch_compile

    @property
    def channels_last(self) -> bool:
        return bool(self.answer.settings.channels_last)

    @property
    def expandable_segments(self) -> bool:
        return self.answer.settings.allocator is not None

    @property
    def num_workers(self) -> int | None:
        """The worker count where the input pipeline was measured, else None (the page says so)."""
        loader = self.answer.settings.loader
        return loader.workers if loader.measured else None


def settings_of(plan: Plan | None) -> dict[str, Settings]:
    """Per workload of the measured GPU."""
    if plan is None:
        return {}
    source = next((t for t in plan.targets if t.is_source), None)
    extra = [r for r in (source.recommendations if source else []) if r.setting in ("learning_rate",
                                                                                      "gradient_accumulation",
                                                                                      "gemm_shapes")]
    return {a.workload: Settings(a, [r for r in extra if r.workload == a.workload])
            for a in build_answers(plan) if a.measured and a.gpu_count == 1}


def snippet_python(s: Settings) -> str:
    return build_snippet_python(s.answer)


def snippet_yaml(s: Settings) -> str:
    return build_snippet_yaml(s.answer)
