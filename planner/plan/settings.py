"""One workload's recommended settings as typed values, read from its recommendations.

The recommendations (planner/plan/recommend.py) are the one source of truth: the balanced preset, the
answer that `gpuplan plan` prints first and the copy-paste snippets are all `Settings` read from them
here, so that none of them can say something the recommendations do not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.plan.recommend import DEFAULT_WORKERS, Recommendation

LOADER_EXTRAS = "pin_memory / persistent_workers / prefetch_factor"


@dataclass(frozen=True)
class LoaderSettings:
    workers: int
    prefetch_factor: int
    pin_memory: bool
    persistent_workers: bool
    measured: bool          # False: `workers` is a stated default, not a measurement of this machine
    reason: str


@dataclass(frozen=True)
class Settings:
    """What to run a workload with. `compile_gain` is the measured throughput change of torch.compile
    (None: not measured), timed in `compile_precision` (the sweep's: beside another precision's answer, gnmt's
    fp16, the gain says nothing of this precision); `channels_last` None where it was not measured (only
    convolutional workloads)."""

    workload: str
    precision: str
    batch: int | None
    torch_compile: bool
    compile_gain: float | None
    channels_last: bool | None
    cudnn_benchmark: bool | None
    allocator: str | None   # the PYTORCH_CUDA_ALLOC_CONF value, None: leave the default
    loader: LoaderSettings
    compile_precision: str | None = None
    known: str = "measured"   # how the figures behind it are known: 'predicted' where the plan read a trace

    @property
    def compile_gain_here(self) -> float | None:
        """torch.compile's measured gain where it was timed in this precision; None elsewhere."""
        return self.compile_gain if self.compile_precision in (None, self.precision) else None

    def with_batch(self, batch: int | None) -> Settings:
        return replace(self, batch=batch)


def settings_from(workload: str, recs: list[Recommendation], fallback_precision: str = "bf16",
                  compiled_in: str | None = None, known: str = "measured") -> Settings:
    """The Settings the workload's recommendations state (a setting with no recommendation keeps PyTorch's
    default: eager mode, the default allocator). `compiled_in`: the precision torch.compile was timed in."""
    by = {r.setting: r for r in recs if r.workload == workload}
    precision = by["precision"].choice if "precision" in by else fallback_precision
    batch = by["batch_size"].amount if "batch_size" in by else None
    compile_rec = by.get("torch_compile")
    return Settings(
        workload=workload, precision=precision, batch=batch,
        torch_compile=compile_rec is not None and compile_rec.choice == "true",
        compile_gain=compile_rec.gain if compile_rec else None,
        channels_last=_flag(by.get("channels_last")), cudnn_benchmark=_flag(by.get("cudnn_benchmark")),
        allocator=by["allocator"].choice if "allocator" in by else None, loader=loader_from(by),
        compile_precision=compiled_in if compile_rec else None, known=known)


def _flag(rec: Recommendation | None) -> bool | None:
    # 'either' (no measurable difference) keeps PyTorch's default, like no recommendation at all
    return None if rec is None or rec.choice not in ("true", "false") else rec.choice == "true"


def loader_from(by: dict[str, Recommendation]) -> LoaderSettings:
    workers = by.get("num_workers")
    extras = by.get(LOADER_EXTRAS)
    pin, persistent, prefetch = (extras.choice.split("/") if extras else ("true", "true", "2"))
    if workers is None:
        return LoaderSettings(DEFAULT_WORKERS, int(prefetch), pin == "true", persistent == "true", False,
                              f"not measured: {DEFAULT_WORKERS} is a default")
    return LoaderSettings(workers.amount or DEFAULT_WORKERS, int(prefetch), pin == "true", persistent == "true",
                          workers.measured, workers.reason)
