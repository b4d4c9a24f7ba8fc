"""Collection profiles: how much of the workload sweeps to run.

quick     the main point of each workload at the main precision (≤ 60 s on an H100)
standard  at the main precision a timed batch sweep (to its knee first, then on), torch.compile at the knee,
          every precision at the knee, the OOM boundary (bounded: 30 s a search), the main batch's trials,
          sequence scaling, the variants and a repeat; the points whose step the host's speed moves timed
          again in interleaved rounds (designed for 3 min a 5-250 M-parameter model on an H100: the order
          and the stages are collectors/workloads/stages.py's)
capacity  standard, plus the OOM boundary at every precision, each searched with PyTorch's default
          allocator and again with expandable segments (what the planner's memory model fits;
          about 4 min more, and only that when run after standard)
full      timed batch sweeps, boundaries and variants at every precision, cuDNN autotuning everywhere

A collection reuses the points a document of the same workload already holds (an interrupted run,
or a smaller profile run before), so `--profile capacity` after `--profile standard` only adds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan_schema.payloads.workloads import MAIN_BATCH, MAIN_PRECISION  # noqa: F401 - the contract's, re-exported

# The main precision first: its timed sweep draws the memory line that the other precisions' boundary
# searches start from (fp16 from bf16's boundary, tf32 from fp32's).
ALL_PRECISIONS = (MAIN_PRECISION, "fp16", "fp32", "tf32")
MAIN_ONLY = (MAIN_PRECISION,)


@dataclass(frozen=True)
class Profile:
    name: str
    precisions: tuple[str, ...]           # a main-batch point at each
    sweep_precisions: tuple[str, ...]     # a timed batch sweep at each
    detail_precisions: tuple[str, ...]    # variants, sequence scaling and the repeat at each
    boundary_precisions: tuple[str, ...]  # the OOM boundary (untimed probes) at each
    sequence: bool
    variants: bool
    compile: bool
    repeat: bool
    cap_factor: int                       # the timed sweep stops at main batch × this
    timed_step_limit_s: float             # … or once a step takes this long: larger batches are only probed
    # cuDNN autotuning runs again for every new input shape and costs 5–70 s a point for ResNet-50 on
    # an H100 (68 s at fp32, batch 256, for no gain): outside `full`, only the main precision's
    # trials autotune; the other points of a network with convolutions run without it and say so.
    autotune_everywhere: bool
    allocator_boundaries: bool = False    # each boundary again with expandable segments (collectors/core/allocator.py)
    steady: bool = True                   # points the host's speed moves, timed again (collectors/workloads/steady.py)
    knee_trials: bool = False             # the main batch's trials again at the sweep's knee (workloads/stages.py)
    main_compile: bool = False            # torch.compile at the main batch too, where the knee is another batch


QUICK = Profile("quick", MAIN_ONLY, (), MAIN_ONLY, (), sequence=False, variants=False, compile=False, repeat=False,
                cap_factor=1, timed_step_limit_s=0.0, autotune_everywhere=False, steady=False)
STANDARD = Profile("standard", ALL_PRECISIONS, MAIN_ONLY, MAIN_ONLY, MAIN_ONLY, sequence=True, variants=True,
                   compile=True, repeat=True, cap_factor=64, timed_step_limit_s=0.4, autotune_everywhere=False,
                   knee_trials=True)
PROFILES = {
    "quick": QUICK,
    "standard": STANDARD,
    "capacity": replace(STANDARD, name="capacity", boundary_precisions=ALL_PRECISIONS, allocator_boundaries=True),
    "full": Profile("full", ALL_PRECISIONS, ALL_PRECISIONS, ALL_PRECISIONS, ALL_PRECISIONS, sequence=True,
                    variants=True, compile=True, repeat=True, cap_factor=1024, timed_step_limit_s=4.0,
                    autotune_everywhere=True, allocator_boundaries=True, knee_trials=True, main_compile=True),
}

# MAIN_BATCH (the batch each workload is judged at) is the contract's; a ceiling on the boundary search so that a
# tiny model does not grow for ever.
SEARCH_CAP = {"gpt-small": 4096, "resnet50": 16384, "mlp-stgan": 1 << 24, "conv-rollout": 1 << 17}
DEFAULT_SEARCH_CAP_FACTOR = 4096  # user workloads: main batch × this
SEQUENCE_BATCH, SEQUENCE_START, SEQUENCE_CAP = 8, 1024, 65536

# On a CPU the reference sizes would take minutes a step: the CPU run uses tiny sizes, says so
# in its documents (scale = "tiny"), and is for testing the path, not for planning. A CPU does
# not run out of memory at these sizes, so its boundary search stops at the cap.
CPU_MAIN_BATCH = {"gpt-small": 2, "resnet50": 2, "mlp-stgan": 256, "conv-rollout": 2}
CPU_SWEEP_CAP = {"gpt-small": 4, "resnet50": 4, "mlp-stgan": 512, "conv-rollout": 4}
CPU_PRECISIONS = ("fp32", "bf16")
