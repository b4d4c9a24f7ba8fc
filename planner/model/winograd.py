"""A tensor-core step predicted on CUDA cores: cuDNN runs its 3×3 convolutions as Winograd there.

A GPU without TF32 (a V100, a Turing card) runs our TF32 step as plain fp32 (performance.STAND_IN), on CUDA cores,
where cuDNN runs a dense 3×3 stride-1 convolution's forward and input gradient with its Winograd kernel
(`volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1` in V100 fp32 profiles of ResNet-50's 3×3 layers):
F(2×2, 3×3) makes 16 products for 4 outputs where the direct convolution counted in flops_per_step makes 36. The
source's TF32 step ran the same layers as tensor-core implicit GEMMs (every convolution kernel of our H100/H200
TF32 profiles is an `xmma_*implicit_gemm*`), so its counted FLOPs are the work it did; on the target those FLOPs
take 4/9 of the counted multiplies, the rest (the weight gradient, 1×1 and strided convolutions, matmuls) all of
them. The evidence it rests on, and what it moved: docs/prediction-model.md § 4, "The V100's fp32 convolutions".

Carried as the rate of the point's counted FLOPs on the target (the FLOPs stay the count; the kernels do fewer), so
the split, the bound and the ceiling check read one figure. Only the stand-in run: a measured fp32 point's own
kernels on the source are not known (no fp32 profile), nor a half-precision step's (tensor cores everywhere).
"""

from __future__ import annotations

from gpuplan_schema.payloads import WorkloadPoint

# F(2×2, 3×3): (2 + 3 − 1)² = 16 multiplies for a 2×2 output tile, where the direct 3×3 convolution makes 4 × 9 = 36
WINOGRAD_MULTIPLIES = 16 / 36


def counted_work(point: WorkloadPoint) -> float:
    """The share of the point's counted FLOPs the target's CUDA-core kernels do: 1 where nothing is eligible or the
    document did not count it (winograd_flops_per_step None: the model as before)."""
    flops, eligible = point.flops_per_step, point.winograd_flops_per_step
    if not flops or not eligible:
        return 1.0
    share = min(1.0, eligible / flops)
    return 1.0 - share * (1.0 - WINOGRAD_MULTIPLIES)


def on_cuda_cores(measured: str, run: str, cuda: bool) -> bool:
    """Whether a step measured in `measured` runs on the target's CUDA cores in `run` through cuDNN: a tensor-core
    TF32 step run as plain fp32 (performance.STAND_IN) on an NVIDIA GPU."""
    return cuda and measured == "tf32" and run == "fp32"
