"""Collection profiles: how much of the workload sweeps to run.

quick     main point of each workload at the main precision (≤ 60 s on an H100)
standard  batch sweep to the OOM boundary at every precision, sequence scaling, variants and a
          repeat at the main precision (≤ 5 min on an H100)
full      everything at every precision, with higher caps
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    sweep_precisions: tuple[str, ...]   # batch sweep (and OOM boundary) at these
    detail_precisions: tuple[str, ...]  # variants, sequence scaling and repeat at these
    boundary: bool                      # double to OOM, then bisect
    sequence: bool
    variants: bool
    compile: bool
    repeat: bool
    cap_factor: int                     # batch cap = main batch × this


PROFILES = {
    "quick": Profile("quick", (), ("bf16",), boundary=False, sequence=False, variants=False, compile=False,
                     repeat=False, cap_factor=1),
    "standard": Profile("standard", ("fp32", "tf32", "fp16", "bf16"), ("bf16",), boundary=True, sequence=True,
                        variants=True, compile=True, repeat=True, cap_factor=64),
    "full": Profile("full", ("fp32", "tf32", "fp16", "bf16"), ("fp32", "tf32", "fp16", "bf16"), boundary=True,
                    sequence=True, variants=True, compile=True, repeat=True, cap_factor=1024),
}

# The batch each workload is judged at (acceptance: gpt-small 32, resnet50 256 on an H100),
# and a cap on the sweep so that a tiny model does not double for ever.
MAIN_BATCH = {"gpt-small": 32, "resnet50": 256, "mlp-stgan": 4096, "conv-rollout": 40}
SWEEP_CAP = {"gpt-small": 2048, "resnet50": 8192, "mlp-stgan": 1 << 22, "conv-rollout": 320}
SEQUENCE_BATCH, SEQUENCE_START, SEQUENCE_CAP = 8, 1024, 65536

# On a CPU the reference sizes would take minutes a step: the CPU run uses tiny sizes, says so
# in its documents (scale = "tiny"), and is for testing the path, not for planning.
CPU_MAIN_BATCH = {"gpt-small": 2, "resnet50": 2, "mlp-stgan": 256, "conv-rollout": 2}
CPU_SWEEP_CAP = {"gpt-small": 4, "resnet50": 4, "mlp-stgan": 512, "conv-rollout": 4}
CPU_PRECISIONS = ("fp32", "bf16")
