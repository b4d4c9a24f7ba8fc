"""Every precision a GPU supports, predicted for every workload (issue 39 item 3): the plan's answer names one
precision per workload, but a user choosing between TF32 on an A100 and bf16, or FP32 on a V100 and fp16, needs the
figure of each. This reads a target's predictions (the plan computes them all: performance.iter_predictions) and
keeps, per workload and precision the GPU runs, the fastest predicted configuration: the precision's knee there.

Which precisions a GPU supports: fp32 everywhere (TF32 off), tf32 where the GPU has TF32 (Ampere and later), bf16
where it has bf16, fp16 everywhere NVIDIA (the catalog's fp16 rate). A measured precision the GPU lacks runs in its
stand-in (performance.STAND_IN: bf16 as fp16 on a V100 or T4, tf32 as fp32), so a workload measured at bf16, fp16,
tf32 and fp32 gets a figure at every precision its target supports.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.performance import Prediction, run_precision
from planner.specs import GpuSpec

PRECISIONS = ("bf16", "fp16", "tf32", "fp32")


def supported_precisions(gpu: GpuSpec) -> list[str]:
    """The training precisions `gpu` runs natively, in PRECISIONS order (fp32 always: CUDA cores, TF32 off)."""
    return [p for p in PRECISIONS if p in gpu.flops_per_s or p == "fp32"]


def expected_precisions(gpu: GpuSpec, measured: set[str]) -> set[str]:
    """The precisions a workload measured in `measured` is predicted in on `gpu`: each one's own, or its stand-in."""
    return {run for p in measured if p in PRECISIONS and (run := run_precision(p, gpu.flops_per_s))}


@dataclass(frozen=True)
class PrecisionBest:
    """One workload's fastest predicted configuration at one precision on one GPU, with its band."""

    workload: str
    precision: str          # what the GPU runs
    measured_precision: str  # what the source measured (a stand-in's twin: bf16 for a V100's fp16)
    batch: int
    variant: str
    throughput_per_s: float
    throughput_low: float
    throughput_high: float
    band_basis: str

    @classmethod
    def of(cls, p: Prediction) -> PrecisionBest:
        t = p.throughput_per_s
        return cls(p.workload, p.precision, p.measured_precision or p.precision, p.batch, p.variant, t,
                   t * (1 - p.band_low), t * (1 + p.band_high), p.band_basis)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def by_precision(predictions: list[Prediction]) -> list[PrecisionBest]:
    """Per workload and precision run, the fastest prediction of the default sequence length (a workload's
    sequence sweep is another question); in workload, then PRECISIONS order."""
    best: dict[tuple[str, str], Prediction] = {}
    for p in predictions:
        if p.seq_len is not None:
            continue
        key = (p.workload, p.precision)
        if key not in best or p.throughput_per_s > best[key].throughput_per_s:
            best[key] = p
    order = {p: i for i, p in enumerate(PRECISIONS)}
    return [PrecisionBest.of(best[k]) for k in sorted(best, key=lambda k: (k[0], order.get(k[1], len(order))))]
