"""One workload's advice on the measured GPU: its recommendations, then the settings and presets read
from them (the recommendations are the one source; settings.py and presets.py only read them)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan_schema.payloads import WorkloadPayload
from planner.model.dataloader_verdict import FeedVerdict
from planner.model.memory import fit_memory
from planner.model.presets import Bounds, Preset, build_presets
from planner.model.recommend import (
    Knee,
    Recommendation,
    find_knee,
    recommend_allocator,
    recommend_batch,
    recommend_loader,
    recommend_precision,
    recommend_variants,
)
from planner.model.settings import Settings, settings_from
from planner.specs import GpuSpec

MAIN_PRECISION = "bf16"  # the precision the batch sweeps run in (collectors/core/profiles.py)
REFERENCE_BATCH = {"gpt-small": 32, "resnet50": 256, "mlp-stgan": 4096, "conv-rollout": 40}


@dataclass(frozen=True)
class WorkloadAdvice:
    recommendations: list[Recommendation]
    settings: Settings
    knee: Knee | None
    presets: list[Preset]


def advise_workload(spec: GpuSpec, payload: WorkloadPayload, fits: dict, feed: FeedVerdict | None,
                    cores: int | None) -> WorkloadAdvice:
    """One workload's recommendations, then the settings and presets read from them. The batch comes from
    the sweep (MAIN_PRECISION) under the memory margin of both the sweep's and the recommended precision."""
    card = spec.memory_bytes
    precision = recommend_precision(payload, spec.supports_bf16)
    chosen = precision.choice if precision else MAIN_PRECISION
    fit = fits.get((payload.workload, chosen)) or fits.get((payload.workload, MAIN_PRECISION))
    safes = [f.safe_batch(card) for f in (fits.get((payload.workload, MAIN_PRECISION)), fit) if f]
    knee = find_knee(payload, MAIN_PRECISION, min(safes) if safes else None)
    mine = [precision] if precision else []
    if knee:
        mine += recommend_batch(payload, knee, fit, card, REFERENCE_BATCH.get(payload.workload, knee.batch),
                                MAIN_PRECISION)
    mine += recommend_variants(payload, MAIN_PRECISION)
    mine += recommend_allocator(payload, chosen if payload.boundary(chosen) else MAIN_PRECISION)
    mine += recommend_loader(payload, feed, cores)
    settings = settings_from(payload.workload, mine, MAIN_PRECISION)
    expandable = fit_memory(payload, chosen, card, "expandable_segments") if settings.allocator else None
    bounds = Bounds(fit.max_batch(card) if fit else None, fit.safe_batch(card) if fit else None,
                    expandable.safe_batch(card) if expandable and expandable.usable_measured else None)
    return WorkloadAdvice(mine, settings, knee, build_presets(settings, knee, bounds))
