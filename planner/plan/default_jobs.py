"""A default job per measured workload, and the instance ranking for each.

The report's decision page and the site's per-machine pages answer "which instance for this workload" with
a job a person would plausibly run: ResNet-50 for 100 ImageNet epochs, gpt-small for 10 B tokens. Any other
workload (the MLP, the rollout, user workloads) gets "a day on this GPU": the samples the measured GPU processes
in 24 hours at its fastest measured point, rounded to 1, 2 or 5 × 10^k, so that its hours read in hours, not
seconds; the job's `samples=` states the count. A job the user asked for (`--job`) replaces its workload's
default. The plan ranks them (planner/plan/jobs.py: one JobRanker, as `gpuplan plan --job` ranks: bands,
scaling, vCPU feed); the report and the site read its rankings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload
from planner.plan.advice import MAIN_PRECISION
from planner.rank.jobs import Job, parse_job
from planner.rank.ranking import OK, RankedInstance

DAY_S = 24 * 3600
DEFAULT_SAMPLES = "a day on this GPU"
DEFAULT_AMOUNT = {"resnet50": "epochs=100 dataset=imagenet", "gpt-small": "tokens=10B"}


PICKS_MORE = 3   # Pareto picks shown beside the fastest and the cheapest


@dataclass(frozen=True)
class JobRanking:
    job: Job
    rows: list[RankedInstance]   # every catalog instance, cheapest first (those that cannot run it last)
    asked: bool                  # the user's --job, not a default

    @property
    def ok(self) -> list[RankedInstance]:
        return [r for r in self.rows if r.status == OK and r.hours and r.cost_usd]

    @property
    def fastest(self) -> RankedInstance | None:
        return min(self.ok, key=lambda r: (r.hours, r.cost_usd), default=None)

    @property
    def cheapest(self) -> RankedInstance | None:
        return min(self.ok, key=lambda r: (r.cost_usd, r.hours), default=None)

    @property
    def front(self) -> list[RankedInstance]:
        return sorted((r for r in self.ok if r.pareto), key=lambda r: r.hours)

    @property
    def picks(self) -> list[tuple[str, RankedInstance]]:
        """(role, row): the fastest, the cheapest (one row where they are the same instance) and up to PICKS_MORE
        more of the time/cost Pareto front, fastest first: what every output shows of a ranking first."""
        fastest, cheapest = self.fastest, self.cheapest
        if fastest is None or cheapest is None:
            return []
        picks = [("fastest and cheapest" if fastest is cheapest else "fastest", fastest)]
        if cheapest is not fastest:
            picks.append(("cheapest", cheapest))
        return picks + [("Pareto front", r) for r in self.front if r is not fastest and r is not cheapest][:PICKS_MORE]


def nice_count(value: float) -> float:
    """value rounded to 1, 2 or 5 × 10^k (nearest on a log scale)."""
    if value <= 1:
        return 1.0
    exp = math.floor(math.log10(value))
    return min((m * 10 ** e for e in (exp, exp + 1) for m in (1, 2, 5)), key=lambda c: abs(math.log(c / value)))


def day_samples(payload: WorkloadPayload) -> float:
    best = max((p.throughput_per_s for p in payload.points if p.status == "ok" and p.throughput_per_s), default=1.0)
    return nice_count(best * DAY_S)


def default_job_spec(workload: str, precision: str = MAIN_PRECISION, samples: float = 1e7) -> str:
    return f"{workload} {precision} {DEFAULT_AMOUNT.get(workload, f'samples={samples:.0e}'.replace('e+', 'e'))}"


def rank_default_jobs(workloads: Sequence[WorkloadPayload], rank: Callable[[Job], list[RankedInstance]],
                      asked: Job | None = None, precisions: dict[str, str] | None = None) -> dict[str, JobRanking]:
    """Per measured workload: the ranking of `asked` when it is that workload's job, else of its default job at
    `precisions[workload]` (the recommended precision; bf16 when it is absent or ranks no instance)."""
    out = {}
    for payload in workloads:
        name = payload.workload
        if asked is not None and asked.workload == name:
            jobs = [(asked, True)]
        else:
            wanted = (precisions or {}).get(name, MAIN_PRECISION)
            samples = day_samples(payload)
            precisions_tried = dict.fromkeys((wanted, MAIN_PRECISION))
            jobs = [(parse_job(default_job_spec(name, p, samples)), False) for p in precisions_tried]
        for job, is_asked in jobs:
            ranking = JobRanking(job, rank(job), is_asked)
            if ranking.ok or is_asked or job is jobs[-1][0]:
                out[name] = ranking
                break
    return out
