"""Matrix products on shapes that are not a multiple of 8, found in the per-op profile.

A GEMM whose inner dimensions are not multiples of 8 (16 bytes of bf16) cannot use the tensor-core kernels
built for aligned loads: cuBLAS falls back to CUTLASS kernels named `…_align1` / `…_align2`, written for
Turing (`cutlass_75_…`); gpt-small's 50257-wide output layer is the classic case (docs/history.md,
"Unaligned matrix products"; docs/measured.md). The profile of any workload, a user's included, says how much
of its step such kernels take; the plan reads only documents of the contract, so the benchmark's own figures
stay in the docs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuplan_schema.payloads import RooflinePayload
from planner.plan.recommend import Recommendation

UNALIGNED_KERNEL = re.compile(r"_align[12](?![0-9])")
WORTH_SAYING = 0.05  # of the GPU's time: below this, padding is not worth a line


@dataclass(frozen=True)
class UnalignedGemms:
    workload: str
    precision: str
    batch: int
    seconds: float       # per step, in kernels for unaligned shapes
    gpu_s: float         # per step, in every kernel the profile saw (the GPU's working time)
    kernels: int         # distinct kernel names

    @property
    def share(self) -> float:
        return self.seconds / self.gpu_s


def unaligned_gemms(roofline: RooflinePayload) -> UnalignedGemms | None:
    """The step's time in GEMM kernels for unaligned shapes; None where the profile has none (or no kernels)."""
    if roofline.status != "ok":
        return None
    kernels = [k for op in roofline.ops for k in op.kernels or []]
    unaligned = [k for k in kernels if UNALIGNED_KERNEL.search(k.name)]
    if not unaligned:
        return None
    gpu_s = sum(k.time_s for k in kernels) + (roofline.unattributed_s or 0.0)
    return UnalignedGemms(roofline.workload, roofline.precision, roofline.batch, sum(k.time_s for k in unaligned),
                          gpu_s, len({k.name for k in unaligned}))


def recommend_alignment(rooflines: list[RooflinePayload]) -> list[Recommendation]:
    """One recommendation per workload whose profiled step spends WORTH_SAYING or more of its GPU time in
    unaligned GEMMs (a host-set step gains from padding only once the GPU's time sets it: a larger batch)."""
    out = []
    for roofline in rooflines:
        if roofline.extra_precision:
            continue  # the advice reads the step the plan recommends, in half precision (a tf32 profile is beside it)
        found = unaligned_gemms(roofline)
        if found is None or found.share < WORTH_SAYING:
            continue
        out.append(Recommendation(
            found.workload, "gemm_shapes", "pad matrix dimensions to a multiple of 64",
            f"{found.share:.0%} of the GPU's time in the {found.precision} step at batch {found.batch} "
            f"({found.seconds * 1e3:.3g} of {found.gpu_s * 1e3:.3g} ms) runs in {found.kernels} GEMM kernels for "
            "shapes that are not a "
            "multiple of 8 (`…_align1/2`, fallback kernels without aligned tensor-core loads): pad the odd "
            "dimension (a vocabulary, a hidden or feature size) and keep the padding out of the data",
            "64"))
    return out
