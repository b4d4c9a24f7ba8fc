"""Three presets per workload, generated from its recommendations (the `Settings` read from them):

- balanced: the recommendations exactly: precision, batch, torch.compile, allocator, data loader.
- conservative: the same precision and loader; eager mode (no compile time, nothing to break when the model
  changes); the default allocator; the batch at most CONSERVATIVE_SHARE of the default allocator's boundary.
- aggressive: the same precision and loader; torch.compile where it was measured faster (never where it was
  measured slower); expandable segments where they measurably raised the boundary; the batch of the best
  measured throughput when it is larger than the knee. Never a batch that was not measured to run and
  never one past the memory model's boundary with its margin.

Each non-balanced preset lists what it changes against balanced, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.plan.recommend import Knee
from planner.plan.settings import Settings

CONSERVATIVE_SHARE = 0.75  # leave a quarter of the default allocator's boundary free
AGGRESSIVE_MIN_GAIN = 0.02  # a larger batch only for a gain above the ~1 % that repeated runs differ by


@dataclass(frozen=True)
class Preset:
    name: str
    settings: Settings
    changes: tuple[str, ...]   # what differs from balanced, each with its reason; empty for balanced

    def to_dict(self) -> dict:
        s = self.settings
        return {"name": self.name, "precision": s.precision, "batch_size": s.batch, "torch_compile": s.torch_compile,
                "allocator": s.allocator, "num_workers": s.loader.workers, "changes": list(self.changes)}


@dataclass(frozen=True)
class Bounds:
    """The largest batches the memory model allows for the balanced precision on the measured GPU."""

    default_max: int | None          # the boundary with the default allocator
    safe: int | None                 # …with the model's margin
    expandable_safe: int | None      # with expandable segments and the margin, where measured


def build_presets(balanced: Settings, knee: Knee | None, bounds: Bounds) -> list[Preset]:
    return [conservative_preset(balanced, bounds), Preset("balanced", balanced, ()),
            aggressive_preset(balanced, knee, bounds)]


def conservative_preset(balanced: Settings, bounds: Bounds) -> Preset:
    changes, s = [], balanced
    if s.torch_compile:
        changes.append(f"eager mode: no compile time and no recompiles when the model changes, at the measured "
                       f"{_pct(s.compile_gain)} throughput of torch.compile")
        s = replace(s, torch_compile=False)
    if s.allocator:
        changes.append("default allocator: no environment variable to carry; the batch stays far from the boundary")
        s = replace(s, allocator=None)
    limit = int(bounds.default_max * CONSERVATIVE_SHARE) if bounds.default_max else None
    if s.batch and limit and s.batch > limit:
        changes.append(f"batch {limit}: {CONSERVATIVE_SHARE:.0%} of the default allocator's boundary "
                       f"{bounds.default_max}, room for longer inputs or a larger model")
        s = s.with_batch(limit)
    return Preset("conservative", s, tuple(changes) or ("nothing: the recommendations are already cautious",))


def aggressive_preset(balanced: Settings, knee: Knee | None, bounds: Bounds) -> Preset:
    changes, s = [], balanced
    # compile's gain timed in another precision (gnmt's fp16 answer) says nothing of this one
    gain = s.compile_gain_here
    if not s.torch_compile and gain is not None and gain > 0:
        changes.append(f"torch.compile: {s.known} {_pct(gain)}, below the 10% that pays for its compile "
                       "time in a short run")
        s = replace(s, torch_compile=True)
    limit = bounds.expandable_safe or bounds.safe
    if knee and s.batch and knee.best_batch > s.batch and (limit is None or knee.best_batch <= limit) \
            and knee.best_throughput_per_s >= (1 + AGGRESSIVE_MIN_GAIN) * knee.throughput_per_s:
        gain = knee.best_throughput_per_s / knee.throughput_per_s - 1
        changes.append(f"batch {knee.best_batch}: the best {s.known} throughput ({_pct(gain)} over the knee); "
                       "scale the learning rate with it")
        s = s.with_batch(knee.best_batch)
    return Preset("aggressive", s, tuple(changes) or (f"nothing: no {s.known} setting is faster than balanced",))


def _pct(gain: float | None) -> str:
    return "unmeasured" if gain is None else f"{gain:+.0%}"


def settings_yaml_lines(s: Settings, indent: str = "") -> list[str]:
    """The settings as YAML mapping lines (plain scalars, so any YAML or a tiny reader parses them)."""
    batch = s.batch if s.batch else "null"
    lines = [f"precision: {s.precision}", f"batch_size: {batch}", f"torch_compile: {str(s.torch_compile).lower()}"]
    if s.channels_last is not None:
        lines.append(f"channels_last: {str(s.channels_last).lower()}")
    lines += [f"allocator: \"{s.allocator or 'default'}\"", f"num_workers: {s.loader.workers}",
              f"prefetch_factor: {s.loader.prefetch_factor}", f"pin_memory: {str(s.loader.pin_memory).lower()}",
              f"persistent_workers: {str(s.loader.persistent_workers).lower()}"]
    return [indent + line for line in lines]


def render_presets_yaml(workload: str, presets: list[Preset]) -> str:
    """The presets as one YAML block to copy; each preset's changes as comments above it."""
    lines = [f"# {workload}: presets from this machine's measurements (balanced = the recommendations)"]
    for p in presets:
        lines += [f"# {p.name}: {c}" for c in p.changes if p.name != "balanced"]
        lines += [f"{p.name}:", *settings_yaml_lines(p.settings, "  ")]
    return "\n".join(lines) + "\n"
