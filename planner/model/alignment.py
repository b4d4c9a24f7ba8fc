"""Matrix products on shapes that are not a multiple of 8: found in the per-op profile, with the measured gain
of padding them where it was measured.

A GEMM whose inner dimensions are not multiples of 8 (16 bytes of bf16) cannot use the tensor-core kernels
built for aligned loads: cuBLAS falls back to CUTLASS kernels named `…_align1` / `…_align2`, written for
Turing (`cutlass_75_…`); gpt-small's 50257-wide output layer is the classic case (docs/history.md,
"Unaligned matrix products"). The profile of any workload, a user's included, says how much of its step
such kernels take; the padding's gain is quoted where measured.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.payloads import RooflinePayload
from planner.model.recommend import Recommendation

UNALIGNED_KERNEL = re.compile(r"_align[12](?![0-9])")
WORTH_SAYING = 0.05  # of the GPU's time: below this, padding is not worth a line
PADDING_DIAGNOSTIC = Path("diagnostics") / "vocab-padding.json"


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


def measured_padding(folder: Path, workload: str) -> tuple[str, float] | None:
    """The padding benchmark's eager and compiled steps before → after, where it ran for this workload, and the
    eager step's throughput gain."""
    path = folder / PADDING_DIAGNOSTIC
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("workload") != workload:
            return None
        steps = {(r["vocab"], r["variant"]): min(s["median"] for s in r["step_s"]) for r in raw["rows"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a missing or broken diagnostic only loses the quote
    vocabs = sorted({v for v, _ in steps})
    if len(vocabs) < 2:
        return None
    small, large = vocabs[:2]
    if (small, "default") not in steps or (large, "default") not in steps:
        return None
    parts = [f"{label} {steps[(small, v)] * 1e3:.0f} → {steps[(large, v)] * 1e3:.0f} ms "
             f"({steps[(small, v)] / steps[(large, v)]:.2f}×)"
             for v, label in (("default", "eager"), ("compile", "compiled"))
             if (small, v) in steps and (large, v) in steps]
    return (f"measured on this GPU with the vocabulary padded from {small} to {large} (batch {raw.get('batch')}): "
            + ", ".join(parts) + f" ({path})"), steps[(small, "default")] / steps[(large, "default")] - 1


def recommend_alignment(rooflines: list[RooflinePayload], folder: Path) -> list[Recommendation]:
    """One recommendation per workload whose profiled step spends WORTH_SAYING or more of its GPU time in
    unaligned GEMMs (a host-set step gains from padding only once the GPU's time sets it: a larger batch)."""
    out = []
    for roofline in rooflines:
        found = unaligned_gemms(roofline)
        if found is None or found.share < WORTH_SAYING:
            continue
        evidence, gain = measured_padding(folder, found.workload) or (None, None)
        out.append(Recommendation(
            found.workload, "gemm_shapes", "pad matrix dimensions to a multiple of 64",
            f"{found.share:.0%} of the GPU's time in the {found.precision} step at batch {found.batch} "
            f"({found.seconds * 1e3:.3g} of {found.gpu_s * 1e3:.3g} ms) runs in {found.kernels} GEMM kernels for "
            "shapes that are not a "
            "multiple of 8 (`…_align1/2`, fallback kernels without aligned tensor-core loads): pad the odd "
            "dimension (a vocabulary, a hidden or feature size) and keep the padding out of the data"
            + (f"; {evidence}" if evidence else ""),
            "64", gain))
    return out
