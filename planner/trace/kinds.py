"""What kind of work an op is, and the time it would take at a GPU's roofs.

The kind is the op's aten name, with the names that one GPU kernel family goes by on different paths folded
together: cuDNN's and the native batch norm (the profile's names; the trace tells them apart by its variant: an NHWC,
a native per-channel and a native channels-last batch norm are kinds of their own), the attention kernels (cuDNN's,
the memory-efficient and flash ones), and the in-place and out-of-place forms of one elementwise op. The per-op
efficiency (planner/trace/efficiency.py) is learned per kind.
"""

from __future__ import annotations

from dataclasses import dataclass

FOLDED = {
    "cudnn_batch_norm": "batch_norm", "native_batch_norm": "batch_norm", "_native_batch_norm_legit": "batch_norm",
    "_native_batch_norm_legit_no_training": "batch_norm", "_batch_norm_impl_index": "batch_norm",
    "cudnn_batch_norm_backward": "batch_norm_backward", "native_batch_norm_backward": "batch_norm_backward",
    "_scaled_dot_product_cudnn_attention": "attention", "_scaled_dot_product_efficient_attention": "attention",
    "_scaled_dot_product_flash_attention": "attention",
    "_scaled_dot_product_cudnn_attention_backward": "attention_backward",
    "_scaled_dot_product_efficient_attention_backward": "attention_backward",
    "_scaled_dot_product_flash_attention_backward": "attention_backward",
}
# cuDNN's RNNs: one call, two kernels a time step, layer and direction (collectors/trace/rnn.py)
RNN_KINDS = frozenset({"_cudnn_rnn", "_cudnn_rnn_backward"})
# Kinds whose time is set by tensor-core math at their size: their efficiency is learned per kind and size.
MATMUL_BASE = frozenset({"mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward", "attention",
                         "attention_backward", *RNN_KINDS})
# The attention variants with kernels of their own (TracedOp.variant; planner/trace/training.py kind_and_class)
VARIANT_SUFFIX = {"masked": "_masked", "causal": "_causal"}
VARIANTS = tuple(VARIANT_SUFFIX.values())
# A 3-D convolution (a 5-D input: nn.Conv3d) runs cuDNN's volumetric kernels, and no reference profile ran one (each
# profiled convolution is 1-D or 2-D): a kind of its own, timed with the convolutions' learned figures where it has
# none (the same implicit GEMM at the tensor-core roof, an NCDHW one transposed as an NCHW one), but counted unknown
# (efficiency.py time_s), so that a video model's plan says its main kernels were never measured
VOLUMETRIC = "_3d"
CONVOLUTIONS = ("convolution", "convolution_backward")
MATMUL_KINDS = frozenset({*MATMUL_BASE, *(k + v for k in MATMUL_BASE for v in VARIANTS),
                          *(k + VOLUMETRIC for k in CONVOLUTIONS)})


# A batch norm of an NHWC network (planner/trace/training.py) runs cuDNN's NHWC kernels, not the NCHW ones: a kind of
# its own, never timed as the NCHW one (held out, ResNet-50's batch norms timed so took twice their time)
NHWC = "_nhwc"
BATCH_NORMS = frozenset({"batch_norm", "batch_norm_backward"})
# A training batch norm that runs ATen's per-channel NCHW kernels, not cuDNN's (the trace's "native" variant:
# collectors/trace/batchnorm.py; bf16 autocast, an InstanceNorm): a kind of its own, timed by the share of the SMs its
# one block per channel fills (planner/trace/plane.py)
NATIVE = "_native"
# One that runs ATen's channels-last kernels (an NHWC network's under bf16 autocast or with fp16 weights, a 2-D
# input's: `batch_norm_choose_impl`): a kind of its own, as neither cuDNN's NHWC kernels nor the
# per-channel ones run alike. Its statistics (`batch_norm_collect_statistics_channels_last_kernel`, a Welford update
# per element) are set by the SMs' arithmetic, not the bandwidth: ResNet-50's bf16 forward took 3.8x its bytes' time
# on the H100 and 5.1x on the H200 (the same 9 ms for the statistics on both), mlp-stgan's BatchNorm1d 3.7x and 4.5x
# (the same 0.26 ms), where cuDNN's NHWC kernels took 1.7-2x (results/*/roofline-resnet50*.json `kernels`)
CHANNELS_LAST = "_native_cl"
# A depthwise convolution on ATen's own kernels (planner/trace/depthwise.py: every dtype but cuDNN's fp16 shapes, NCHW):
# a kind of its own in a class of its own, timed by the SM cycles the kernels were measured to take, not by a
# dense convolution's tensor-core roof or bytes (MobileNetV3's backward, so timed: 16 ms for 52 measured on an H200)
DEPTHWISE = "_depthwise"
SM_BOUND = "sm"
# A scan along an outer dimension (planner/trace/scan.py): ATen's outer-dimension kernel, timed by its dependent steps
SCAN_OUTER = "_scan_outer"
# The variants with kernels of their own: never timed as their base kind, nor with a family's figures
OWN_KERNELS = (NHWC, CHANNELS_LAST, NATIVE, DEPTHWISE, SCAN_OUTER)
ROLL = "roll"   # torch.roll: its index arithmetic an element (planner/trace/roll.py)


# A row gather and a scatter-add by atomics (planner/trace/scatter.py): a row's index lookup, an element's atomic
INDEXED = ("index_select", "index_add")


def measured_cycles(kind: str) -> bool:
    """Whether a kind is timed by SM cycles measured on a grid, not learned (efficiency.py: known without a profile):
    a depthwise convolution's, an outer scan's, a roll's, a row gather's and a scatter-add's."""
    return kind.endswith((DEPTHWISE, SCAN_OUTER)) or kind == ROLL or kind in INDEXED
# Kinds that run ATen's kernels of one block per row (planner/trace/rows.py), timed by the share of the GPU those
# blocks fill: the layer norm's forward (its backward's kernels keep up with the wide rows' per byte)
ROW_KINDS = frozenset({"native_layer_norm"})


def own_roof(kind: str) -> bool:
    """Whether a kind's learned slowdown is of a roof of its own (a native or cuDNN NCHW batch norm's per-channel one, a
    layer norm's per-row one), not of its bytes at the copy roof: no family's figure, nor the pooled one, for kinds it
    never saw."""
    return kind.endswith(NATIVE) or kind in ROW_KINDS or kind in BATCH_NORMS


# Kinds of one family run alike (one kernel pattern: an activation reads its input once and writes its output; a
# normalisation reads its input for the statistics and again to apply them), so a kind no profile showed is timed with
# its family's learned figures (planner/trace/efficiency.py) before the pooled ones of every memory kind. On the H200
# (results/h200/diagnostics/heldout3-2026-11-28, ddpm-unet) GroupNorm ran 3.5-4.8x its bandwidth time, as the
# references' layer and batch norms do (2.4-5.1x), and SiLU 1.0-1.3x, as their GELU and ReLU do; the pooled figure
# (1.5x and a fixed cost a call) timed GroupNorm 2.3x fast and SiLU 1.5x slow. The backward of each is its own
# family (a normalisation's backward reduces twice). Elementwise arithmetic is not one: its learned kinds' medians
# (1.1x on the H100, 1.5x on the H200, from a dozen kinds of few rows) timed llama-mini's pow no better than the pool.
ACTIVATIONS = frozenset("""   # relu's backward is aten's threshold_backward
relu gelu silu sigmoid tanh hardtanh leaky_relu elu celu selu mish hardswish hardsigmoid softplus log_sigmoid_forward
glu prelu threshold gelu_backward silu_backward sigmoid_backward tanh_backward hardtanh_backward leaky_relu_backward
elu_backward mish_backward hardswish_backward hardsigmoid_backward softplus_backward log_sigmoid_backward
glu_backward threshold_backward
""".split())
NORMALIZATIONS = frozenset({"batch_norm", "native_layer_norm", "native_group_norm", "_fused_rms_norm",
                            "batch_norm_backward", "native_layer_norm_backward", "native_group_norm_backward",
                            "_fused_rms_norm_backward"})
# An embedding's and an embedding bag's backward run one kernel pattern (ATen's EmbeddingBackwardKernel.cu
# `embedding_backward_cuda_kernel`: a radix sort of the indices, then `compute_grad_weight` or
# `compute_grad_weight_bags` and `sum_and_scatter`, a segment reduction per unique index), set by the SMs' sort and
# per-index loop, not by the bytes: dlrm-small's bag backward took the same 14.3-14.7 + 9.7 ms in those two kernels
# on the H100 and the H200 (results/*/roofline-dlrm-small.json `kernels`, bf16 at 1,048,576), 2.1-2.6x its bytes'
# time, as the references' embedding_dense_backward takes 2.8-3.8x (20+ rows). Timed pooled (1.3-1.4x), a held-out
# bag backward was 2.6x fast.
GATHER_BACKWARDS = frozenset({"embedding_dense_backward", "_embedding_bag_backward", "_embedding_bag_dense_backward",
                              "embedding_backward", "_embedding_bag_per_sample_weights_backward"})


def kind_family(kind: str) -> str | None:
    """'native_group_norm' → 'normalization'; 'silu_backward' → 'activation_backward'; '_embedding_bag_backward' →
    'gather_backward'; None: a kind of no family.
    An NHWC batch norm has none: cuDNN's NHWC kernels (fp16, fp32) are no normalisation's pattern, and ResNet-50's
    held out as one ran 25-53 % slower than measured in fp16 and TF32 (timed pooled: within 23 %); nor have ATen's
    per-channel one (its figures are of another roof: planner/trace/plane.py) and its channels-last one (a
    statistics pass set by the SMs' arithmetic: CHANNELS_LAST)."""
    if kind.endswith(OWN_KERNELS) or own_roof(kind):   # figures of another roof than its bytes'
        return None
    base = base_kind(kind)
    if base in GATHER_BACKWARDS:
        return "gather_backward"
    family = "activation" if base in ACTIVATIONS else "normalization" if base in NORMALIZATIONS else None
    if family is None:
        return None
    return f"{family}_backward" if base.endswith("_backward") else family


def base_kind(kind: str) -> str:
    """The kind without its variant: what the profile's one row per op name covers."""
    for v in (*VARIANTS, *OWN_KERNELS, VOLUMETRIC):
        kind = kind.removesuffix(v)
    return kind


def op_kind(name: str) -> str:
    """'aten::cudnn_batch_norm' → 'batch_norm'; 'aten::relu_' → 'relu'; 'aten::mm' → 'mm'."""
    base = name.split("::")[-1]
    base = FOLDED.get(base, base)
    if base.endswith("_") and not base.startswith("_") and not base.endswith("__"):
        base = base[:-1]
    return base


# Bytes an element of each traced dtype (TracedOp.dtype)
ELEMENT_BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

@dataclass(frozen=True)
class Roofs:
    """A GPU's measured roofs: dense matmul FLOP/s per dtype, copy bandwidth (bytes read + written per second)."""

    flops_per_s: dict[str, float]
    bytes_per_s: float
    sms: int = 0              # the GPU's SMs and boost clock (its catalog entry): what SM-bound kernels' cycles take
    clock_hz: float = 0.0     # (planner/trace/depthwise.py); 0: unknown, such a kernel is timed by its bytes

    def math_s(self, flops: float | None, dtype: str | None, precision: str) -> float:
        """FLOPs at the matmul roof of the op's dtype (fp32 at TF32's under a tf32 run); 0 where no FLOPs."""
        if not flops or not dtype:
            return 0.0
        if dtype == "fp32" and precision == "tf32":
            dtype = "tf32"
        peak = self.flops_per_s.get(dtype) or self.flops_per_s.get("fp32")
        return flops / peak if peak else 0.0

    @property
    def half_over_tf32(self) -> float:
        """How many times faster the half (bf16) tensor roof is than the TF32 one (1 where either is unmeasured)."""
        half, tf32 = self.flops_per_s.get("bf16") or self.flops_per_s.get("fp16"), self.flops_per_s.get("tf32")
        return half / tf32 if half and tf32 else 1.0

    def roof_s(self, flops: float | None, moved: float, dtype: str | None, precision: str) -> float:
        """The roofline's time for one call: the larger of its math and memory times."""
        return max(self.math_s(flops, dtype, precision), moved / self.bytes_per_s)
