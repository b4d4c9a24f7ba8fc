"""Data-parallel scaling: what fraction of N × one GPU's throughput an N-GPU instance delivers.

A measured efficiency (a multi-GPU collection) always wins; this module supplies the assumed one,
labelled as such, used wherever none was measured. It compounds a factor per doubling of GPUs:
efficiency(N) = factor ** log2(N).

Why these factors:
- NVLink / NVSwitch / Infinity Fabric, 0.95 per doubling (0.86 at 8 GPUs). NVIDIA's ResNet-50
  v1.5 PyTorch examples (DeepLearningExamples, pytorch-21.03 container, mixed precision, DALI)
  report 8-GPU strong scaling of 6.72× on a DGX A100 and 6.93×–6.96× on DGX-1 V100 machines,
  i.e. 0.84–0.87 at 8 GPUs = 0.944–0.955 per doubling. TF32/FP32 runs scale better (7.72×–7.76×:
  slower steps hide the gradient all-reduce), so 0.95 is the cautious end for fast steps.
- PCIe only, 0.85 per doubling (0.72 at 4 GPUs, 0.61 at 8). Without NVLink the all-reduce
  crosses PCIe (and often the host bridge); published results span 0.97 at 4 GPUs (ResNet-50
  fp16, batch 1024/GPU, Quadro RTX 8000 with PCIe peer-to-peer, tf_cnn_benchmarks) down to
  0.59 at 2 GPUs (ResNet-50 on consumer cards without peer-to-peer). No cloud PCIe instance has
  been measured here, so the factor is a middle assumption, not a fit.
- NVLink bridge (H100 NVL pairs): NVLink within a pair, PCIe between pairs.

These factors ignore the model: a larger gradient (gpt-small's 163 M parameters against ResNet-50's
26 M) or a shorter step exposes more of the all-reduce. They stand only where no multi-GPU run was
measured at all; otherwise planner/scaling/intra_node.py models the job's own gradient and step. Treat
multi-GPU figures from the assumed factors as ±15 % (the band they carry).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from planner.specs import InstanceSpec

PER_DOUBLING = {"nvlink": 0.95, "infinity-fabric": 0.95, "pcie": 0.85}


GRADIENT_BYTES_PER_PARAMETER = 4  # DDP reduces fp32 gradients under autocast
ASSUMED_SPREAD = 0.15             # the ±15 % the factors are stated with (the module docstring)


class Scaling(NamedTuple):
    """Data-parallel efficiency of an instance (1.0 for one GPU), why, whether it was measured, and the
    band of the efficiency (`low`, `high`; None: none known)."""

    efficiency: float
    note: str
    measured: bool
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class SyncLoad:
    """What one GPU of the job synchronises per step: its gradient, and the compute step it follows."""

    workload: str
    gradient_bytes: float
    compute_s: float

    @classmethod
    def of(cls, workload: str, parameters: int, batch: int, samples_per_s: float) -> SyncLoad:
        return cls(workload, parameters * GRADIENT_BYTES_PER_PARAMETER, batch / samples_per_s)


# The planner passes the instance and, where the job's gradient and step are known, its SyncLoad; a measured
# provider looks up its own results by GPU, count and link, a modelled one (intra_node.py) uses the load.
ScalingProvider = Callable[[InstanceSpec, SyncLoad | None], Scaling]


def assumed_scaling(instance: InstanceSpec, load: SyncLoad | None = None) -> Scaling:
    """The labelled default: a per-doubling factor for the instance's GPU interconnect."""
    n = instance.gpu_count
    if n == 1:
        return Scaling(1.0, "one GPU: no data-parallel overhead", measured=False)
    efficiency, factors = assumed_efficiency(n, instance.gpu_interconnect)
    return Scaling(efficiency, f"assumed, not measured: {factors} → {efficiency:.2f} on {n} GPUs "
                               f"(see planner/scaling/assumed_scaling.py)", measured=False,
                   low=efficiency * (1 - ASSUMED_SPREAD), high=min(1.0, efficiency * (1 + ASSUMED_SPREAD)))


def assumed_efficiency(n: int, link: str | None) -> tuple[float, str]:
    """The per-doubling factors' efficiency on `n` GPUs over `link`, and the words for it."""
    if link == "nvlink-bridge":
        # Pairs share NVLink; beyond a pair the all-reduce crosses PCIe.
        efficiency = PER_DOUBLING["nvlink"] * PER_DOUBLING["pcie"] ** math.log2(n / 2)
        return efficiency, "0.95 for the NVLink-bridged pair" + (", 0.85 per doubling beyond it" if n > 2 else "")
    factor = PER_DOUBLING[link] if link in PER_DOUBLING else PER_DOUBLING["pcie"]
    return factor ** math.log2(n), f"{factor:g} per doubling over {link}"
