"""fp8 jobs: no reference workload trains in fp8, so an fp8 step is estimated from the bf16 step with its
matmul share at the fp8 matmul rate (what Transformer Engine or torchao's float8 linear layers change:
the matmuls; the rest of the step stays as measured in bf16). It needs the measured GPU's fp8 matmul
ceiling, so that the source's own fp8 efficiency scales the target's datasheet fp8 rate.
"""

from __future__ import annotations

from dataclasses import replace

from planner.model.performance import Rates
from planner.rank.jobs import Job, JobError

MEASURED_AS = "bf16"


def require_fp8(job: Job, source: Rates, machine: str) -> None:
    if job.precision == "fp8" and "fp8" not in source.flops_per_s:
        measured = ", ".join(sorted(source.flops_per_s)) or "none"
        raise JobError(job.spec, "fp8", f"{machine} measured no fp8 matmul (its ceilings.json has {measured}); "
                                        "fp8 needs the measured GPU's fp8 rate: choose bf16 or fp16")


def measured_precision(job: Job) -> str:
    """The precision whose measured points the job's prediction starts from."""
    return MEASURED_AS if job.precision == "fp8" else job.precision


def as_fp8(rates: Rates, job: Job) -> Rates:
    """Rates whose bf16 matmul rate is the fp8 one (unchanged for other jobs); a GPU without fp8 keeps none."""
    if job.precision != "fp8":
        return rates
    flops = {k: v for k, v in rates.flops_per_s.items() if k != MEASURED_AS}
    if "fp8" in rates.flops_per_s:
        flops[MEASURED_AS] = rates.flops_per_s["fp8"]
    return replace(rates, flops_per_s=flops, basis=rates.basis + "; fp8 matmuls in place of bf16")
