"""Per-operation efficiency on one GPU, learned from its measured per-op profiles (results/<gpu>/roofline-*.json).

Each op kind (planner/trace/kinds.py) gets two numbers: a fixed cost per kernel launch (`per_call_s`: launch,
tail, synchronisation inside the kernel) and how much slower than its roofline time it runs (`slowdown` = 1 /
efficiency), so that an op's time on that GPU is

    time = launches × per_call_s + slowdown × Σ_calls roof_s(call)

An op launches one kernel a call but a cuDNN RNN (kinds.py RNN_KINDS), which launches two a time step, layer and
direction (collectors/trace/rnn.py: GNMT's eight LSTMs 577 a forward, a 2-layer LSTM over 128 tokens 518 a call), so
its fixed cost grows with its sequences, not its calls: learned per call from GNMT, the held-out LSTM's bf16
recurrent ops were timed 40-73 % fast on both GPUs, per launch 0-43 % (benchmarks/rnn_launches.py has the counts).

roof_s is the larger of the call's math time (FLOPs at the measured matmul roof of its dtype) and memory time
(bytes at the measured copy bandwidth). For the matrix products (gemm.py) a call's math time is first divided by
how well its shape fills the GPU (waves of tiles, split-K) and, for a dimension off the 8-element alignment, by its
alignment's factor: a bert-base matmul and gpt-small's 50,257-wide head are one kind, not one efficiency; an NCHW
convolution adds its transposes, and a convolution with a bias its bias add, timed outright at the element rate the
profiles show for ATen's broadcast add (BIAS_ADD_OPS, the fit learning the rest). Matmul kinds are learned per math
class (half: fp16 and bf16; tf32), never faster than the measured roof (slowdown at least 1); plain fp32 products (no
profile ran them) take a slowdown per family learned from the measured fp32 steps (Fp32Scale, learn.py); the other
kinds are learned across dtypes.

The profiles aggregate each op over its calls (per name), so the fit is on sums: per kind, a non-negative least
squares over every profiled op row (each row weighted by 1 / its profile's step, so that every profile counts
alike), the alignment factors by a search over their grids on the matmul rows, per family (cuBLAS products, cuDNN
convolutions). A kind no profile shows is counted as unlearned (its share of the predicted step is the plan's unknown
share) and timed with the figures of its family where it has one (kinds.py `kind_family`: the medians of the learned
activations, or normalisations, forward or backward), else with the pooled figures of every memory kind. Both are
medians weighing each kind by the profile rows that taught it: a kind one workload alone runs (an embedding bag, a
random gather at 2.5-3.5x its bytes) is one workload's figure, not one in twenty of every unseen op's (unweighted,
dlrm-small's two bag kinds moved the pooled slowdown 1.39 -> 1.59 on the H100 and 1.54 -> 1.95 on the H200).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol

from planner.trace.gemm import ALIGN, Gemm
from planner.trace.kinds import (
    BATCH_NORMS,
    NATIVE,
    OWN_KERNELS,
    VOLUMETRIC,
    base_kind,
    kind_family,
    measured_cycles,
    own_roof,
)

# The reduction depth at half efficiency (gemm.Gemm.fill): 32 to 512 were tried, and the held-out median did not move
# once split-K was modelled; kept at 0 (no depth penalty), a grid of one
K_HALVES = (0.0,)
# An NCHW convolution's transposes move its bytes twice more (cuDNN transposes the input in and the output back):
# counted once each at the roof, not learned (the profiles hold one NHWC network, ResNet-50, whose held-out fit
# could only learn the NCHW convolutions' overhead into the convolution's own efficiency)
NCHW_TRANSPOSES = 1.0
# cuDNN convolves without the bias: ATen adds it after (`output.add_(reshape_bias(...))`), a broadcast add that
# TensorIterator cannot vectorise, so its legacy kernel (`elementwise_kernel<128, 4>`) is bound by the index
# arithmetic of each element, not by the bytes: in the profiles' `kernels` it took the same time in bf16 as in fp32 and
# on the H200 as on the H100 (conv-rollout's 17 G elements: 55 and 59 ms on the H100, 53 and 54 on the H200; vit-b16's
# patch embedding at 512: 0.25 and 0.24 ms), 300-320 G elements/s, as the two cards' FP32 roofs (53 TFLOP/s) are
# equal where their bandwidths are not. So it is timed outright, not learned: BIAS_ADD_OPS FP32 operations an
# element at the card's FP32 roof (52.9 T / 308 G = 172 on the H100's vit-b16, 165-185 on the others)
BIAS_ADD_OPS = 170.0
EVEN = (1.0, 0.8, 0.6, 0.45, 0.3)          # the efficiency of an even, not 8-aligned product against an aligned one
ODD = (0.5, 0.3, 0.2, 0.15, 0.1, 0.07)     # of one with an odd dimension
MIN_ROWS = 2
ANY = "any"   # the class of a kind learned across dtypes
# torch.compile's pad_mm pass (torch/_inductor/fx_passes/pad_mm.py) pads an mm, addmm or bmm with a dimension off its
# dtype's alignment (8 elements of 2 bytes, 4 of fp32) to that alignment where the product is compute-bound (its
# arithmetic intensity above half the card's FLOPs per byte: `is_mm_compute_bound`) and a benchmark finds the padded
# product faster: a compiled step runs gpt-small's 50,257-wide head on aligned kernels (on the H200 its products took
# 33.4 ms compiled, 32.9 padded by hand and 84.8 eager; on the H100 47.6, 33.4 and 84.5, one of the three align1
# kernels left: results/*/diagnostics/vocab-padding.json)
PADDED_KINDS = ("mm", "addmm", "bmm")
PAD_BALANCE = 0.5   # pad_mm's compute-bound test: math time over memory time at the roofs above this


@dataclass(frozen=True)
class Fp32Scale:
    """Plain fp32's slowdown over the card's FP32 roof: cuBLAS's SIMT SGEMM (`gemm`), cuDNN's fp32 implicit-GEMM
    convolutions (`conv`) and those it runs as FFT or Winograd transforms (`transform`: 3x3 stride 1, fewer
    multiplications than the direct product counted, so well under 1). No profile ran fp32, and one slowdown for all
    left them apart in the leave-one-out (H100: ResNet-50's fp32 steps -37 %, SSD300's -20 %, where BERT-base's were
    +16 %, gpt-small's +19 %, mlp-stgan's +41 %)."""

    gemm: float = 1.0
    conv: float = 1.0
    transform: float = 1.0

    def of(self, kind: str, group: Group) -> float:
        if family(kind) != "conv":
            return self.gemm
        return self.transform if group.transform else self.conv


AT_ROOF = Fp32Scale()   # fp32 products at the FP32 roof: what a model with no fp32 step measured takes
# The convolutions' fp32 slowdowns, measured (benchmarks/conv_fp32_fit.py on the grid of
# results/h200/diagnostics/conv-fp32-grid-2026-11-28), not learned: learned from the reference workloads' fp32 steps
# the implicit GEMMs' slowdown was whatever their few badly filled layers needed (conv-rollout's 64 -> 3 channels at
# 60x its roof), ResNet-50's held out +47 %
FP32_CONV = Fp32Scale(1.0, 1.98, 1.05)


def math_class(dtype: str | None, precision: str) -> str:
    if dtype in ("fp16", "bf16", "fp8"):
        return "half"
    return "tf32" if precision == "tf32" else "fp32"


@dataclass(frozen=True)
class Shape:
    """How a matrix product's shape sets its efficiency (gemm.py): the reduction depth at half efficiency, the
    efficiency of an even and of an odd product against an 8-aligned one, and how many times its transposes' bytes
    an NCHW convolution moves beside its product (cuDNN's nchwToNhwc and back, the bias added apart)."""

    k_half: float = 0.0
    even: float = 1.0
    odd: float = 1.0
    nchw: float = NCHW_TRANSPOSES
    vector: int = ALIGN          # the elements of one 16-byte load: a product aligned to them is aligned
    tf32_scale: float | None = None   # the half (bf16) roof over the TF32 roof, measured (`of`; None: alike)
    split_waves: bool = False    # a deep reduction split along K whatever its waves (gemm.Gemm.fill; `simt`)

    def aligned(self, alignment: int, vector: int | None = None) -> float:
        return 1.0 if alignment >= (vector or self.vector) else self.odd if alignment == 1 else self.even

    def of(self, cls: str) -> Shape:
        """The factors for a product of a math class. `even` and `odd` are a half product's; an unaligned product's
        kernels load element by element (or by 2-4), and those loads, not the tensor cores, set its rate: the same
        FLOP/s whatever its dtype (on the H100 the odd LM heads ran at 110-135 TFLOP/s in bf16 and 105-130 in TF32,
        0.11-0.21 and 0.24-0.31 of their roofs). So a TF32 product's factors are the half ones × the half roof over
        the TF32 roof (at most 1), and its 16-byte loads are of 4 elements (4-aligned is aligned). Shown for cuBLAS's
        products; a family without `tf32_scale` (cuDNN's convolutions) takes its factors alike in every class."""
        if cls != "tf32" or self.tf32_scale is None:
            return self
        scale = self.tf32_scale
        return replace(self, even=min(1.0, self.even * scale), odd=min(1.0, self.odd * scale), vector=4)

    @property
    def unaligned(self) -> Shape:
        """The same without the alignment factors: plain fp32 products run on SIMT kernels, which take any."""
        return Shape(self.k_half, 1.0, 1.0, self.nchw)

    @property
    def simt(self) -> Shape:
        """A plain fp32 cuBLAS product's: unaligned, and its deep reductions split along K even where its tiles
        fill more than one wave. Measured on an H200 (benchmarks/gpu_gemm_grid.py,
        results/h200/diagnostics/gemm-grid-2026-11-28): cuBLAS's SIMT SGEMM ran weight gradients of 144 tiles (3000 x
        700, 768 x 3072 over 65,536-131,072 rows) at 0.85-0.99 of the fp32 roof, with split-K kernels (a memset or
        `splitKreduce_kernel`), where two waves of whole tiles would be 0.49-0.55; TF32's tensor-core kernels did
        not split them (0.61 of the TF32 roof)."""
        return replace(self.unaligned, split_waves=True)


class Blocks(Protocol):
    """A launch of ATen's kernels of one block per channel (plane.py) or per row (rows.py), whose time is set by the
    share of the GPU its blocks keep busy, not by the card's bandwidth alone."""

    def fill(self, sms: int) -> float: ...


@dataclass(frozen=True)
class Group:
    """Calls of one op with one shape, on one GPU: per-call math and memory seconds at the roofs."""

    calls: int
    math_s: float
    memory_s: float
    gemm: Gemm | None = None
    nchw_s: float = 0.0       # per call: an NCHW convolution's transposes (its bytes twice, at the copy roof)
    plane: Blocks | None = None   # a native batch norm's per-channel kernels (plane.py), a layer norm's (rows.py)
    plane_s: float = 0.0      # per call: what those kernels move, at the copy roof
    sm_s: float = 0.0         # per call: the SM cycles of kernels no roof sets, at the GPU's clock (depthwise.py)
    bias_s: float = 0.0       # per call: a cuDNN convolution's bias add (BIAS_ADD_OPS), outside the kind's slowdown
    transform: bool = False   # an fp32 convolution cuDNN runs as an FFT or Winograd transform (training.transformed)
    launches: int | None = None   # the kernels these calls launch (None: one a call)

    @property
    def kernels(self) -> int:
        """What the kind's fixed cost is paid for: its kernel launches."""
        return self.calls if self.launches is None else self.launches

    @property
    def outright_s(self) -> float:
        """What these calls take beside their kind's learned figures (their bias adds)."""
        return self.calls * self.bias_s

    def roof_s(self, sms: int, shape: Shape) -> float:
        """Σ over the calls of the roofline time, the math time stretched by the shape's fill (matmul kinds), the
        per-channel kernels' bytes by the share of the SMs their blocks fill; a call whose kernels' SM cycles were
        measured (`sm_s`) takes at least those."""
        math_s = self.math_s
        if self.gemm is not None and math_s:
            math_s /= (self.gemm.fill(sms, shape.k_half, shape.split_waves)
                       * shape.aligned(self.gemm.alignment, self.gemm.vector))
        plane_s = self.plane_s / self.plane.fill(sms) if self.plane is not None else 0.0
        return self.calls * (max(math_s, self.memory_s, self.sm_s) + shape.nchw * self.nchw_s + plane_s)


@dataclass(frozen=True)
class Row:
    """One op of one profiled step: its kind, its calls by shape (from the trace), its measured time."""

    kind: str
    cls: str
    groups: tuple[Group, ...]
    measured_s: float
    step_s: float
    workload: str

    @property
    def calls(self) -> int:
        return sum(g.calls for g in self.groups)

    @property
    def kernels(self) -> int:
        return sum(g.kernels for g in self.groups)


@dataclass(frozen=True)
class KindFit:
    per_call_s: float
    slowdown: float
    rows: int

    def to_dict(self) -> dict:
        return {"per_call_s": self.per_call_s, "slowdown": self.slowdown, "rows": self.rows}


@dataclass(frozen=True)
class Efficiency:
    """One GPU's learned per-op efficiency (module docstring)."""

    sms: int
    shapes: dict[str, Shape]                  # family (FAMILIES) → its shape parameters
    kinds: dict[str, KindFit]                 # "mm/half", "add", …
    pooled: KindFit                           # any kind no profile showed
    workloads: tuple[str, ...] = field(default_factory=tuple)   # what it was learned from

    def key(self, kind: str, cls: str) -> str | None:
        """The learned entry for an op: its kind in its math class (matmuls; else in the nearest class), else the
        kind without its variant (an NHWC convolution no profile showed is timed as an NCHW one, a 3-D one as the
        others; an NHWC or a native batch norm, per-channel or channels-last, never as cuDNN's NCHW one: each runs
        kernels of its own); None: unlearned."""
        for k in dict.fromkeys((kind,) if kind.endswith(OWN_KERNELS) else (kind, base_kind(kind))):
            if cls == ANY and k in self.kinds:
                return k
            for c in (cls, "tf32" if cls == "fp32" else "half", "half") if cls != ANY else ():
                if f"{k}/{c}" in self.kinds:
                    return f"{k}/{c}"
        return None

    @cached_property
    def families(self) -> dict[str, KindFit]:
        """Per kind family (kinds.py `kind_family`), the medians of its learned kinds' fixed cost and slowdown."""
        members: dict[str, list[KindFit]] = defaultdict(list)
        for k, fit in self.kinds.items():
            if "/" not in k and (name := kind_family(k)):
                members[name].append(fit)
        return {name: median_fit(fits) for name, fits in members.items()}

    def unlearned(self, kind: str) -> KindFit:
        """The figures a kind no profile showed is timed with: a native batch norm's, its other pass's (below); a cuDNN
        NCHW one's, its other pass's, else ATen's per-channel kind's (the same roof, training.CUDNN_NCHW_BYTES); its
        family's, else the pooled ones. ATen's per-channel forward and backward both launch one block per channel
        and are timed against that one roof (plane.py), and ran alike against it: SSD300's bf16 forward at 2.00x and
        backward at 1.98x on the H100, 2.41x and 2.61x on the H200, where the pooled figures (1.26x, of bytes at the
        copy roof) timed its held-out backward 37-43 % fast."""
        if kind.endswith(NATIVE):
            forward = kind.replace("_backward", "")
            other = forward if forward != kind else kind.replace("batch_norm", "batch_norm_backward")
            if other in self.kinds:
                return self.kinds[other]
        if kind in BATCH_NORMS:   # cuDNN's NCHW kernels: its other pass's, else ATen's per-channel kind's of the pass
            for other in (kind.replace("_backward", "") if kind.endswith("_backward") else kind + "_backward",
                          kind + NATIVE):
                if other in self.kinds:
                    return self.kinds[other]
        name = kind_family(kind)
        if not name:
            return self.pooled
        # a family no kind of which was learned takes its other pass's: a normalisation's forward that of the
        # backwards (layer norm's) since cuDNN's NCHW batch norm, the one forward the profiles had, is timed by its
        # per-channel roof, not its bytes (GroupNorm on the H200, 3.5-4.8x its bytes, by the pooled 1.4x: 2.4x fast)
        other = name.removesuffix("_backward") if name.endswith("_backward") else name + "_backward"
        return self.families.get(name) or self.families.get(other) or self.pooled

    def time_s(self, kind: str, cls: str, groups: Iterable[Group], fp32: Fp32Scale = AT_ROOF
               ) -> tuple[float, bool]:
        """(predicted seconds of these calls, whether the kind was learned). No profile ran plain fp32: an fp32
        product takes its kind's fixed cost per call and its family's fp32 slowdown (learned from the measured fp32
        steps, learn.py) times its roof, the alignment factors left out (SIMT kernels)."""
        groups = list(groups)
        key = self.key(kind, cls)
        if key is None and measured_cycles(kind):   # its kernels' cycles were measured, not learned: known
            return sum(g.kernels * self.pooled.per_call_s + g.roof_s(self.sms, Shape()) + g.outright_s
                       for g in groups), True
        fit = self.fit_of(kind, cls)
        # a 3-D convolution timed with the 2-D ones' figures is not learned (kinds.py VOLUMETRIC)
        learned = key is not None and (key.split("/")[0] == kind or not kind.endswith(VOLUMETRIC))
        shape = self.shapes.get(family(kind), Shape()).of(cls)
        kernels, outright = sum(g.kernels for g in groups), sum(g.outright_s for g in groups)
        if cls == "fp32":
            simt = shape.unaligned if family(kind) == "conv" else shape.simt   # cuDNN's fp32 scale is measured as is
            roof = sum(fp32.of(kind, g) * g.roof_s(self.sms, simt) for g in groups)
            return kernels * fit.per_call_s + roof + outright, learned
        roof = sum(g.roof_s(self.sms, shape) for g in groups)
        return kernels * fit.per_call_s + fit.slowdown * roof + outright, learned

    def fit_of(self, kind: str, cls: str) -> KindFit:
        """The figures an op is timed with: its learned entry's (key), else those of a kind no profile showed."""
        key = self.key(kind, cls)
        return self.kinds[key] if key else self.unlearned(kind)

    def padded_excess_s(self, kind: str, cls: str, groups: Iterable[Group]) -> float:
        """Of time_s, what the alignment factors add to a compute-bound product off its alignment: what a compiled
        step does not pay, as Inductor pads it (PADDED_KINDS). A plain fp32 product's SIMT kernels take any shape."""
        if cls not in ("half", "tf32") or base_kind(kind) not in PADDED_KINDS:
            return 0.0
        shape = self.shapes.get(family(kind), Shape()).of(cls)
        aligned = replace(shape, even=1.0, odd=1.0)
        padded = [g for g in groups if g.gemm is not None and g.math_s > PAD_BALANCE * g.memory_s]
        return self.fit_of(kind, cls).slowdown * sum(g.roof_s(self.sms, shape) - g.roof_s(self.sms, aligned)
                                                     for g in padded)

    def plane_excess_s(self, kind: str, cls: str, groups: Iterable[Group]) -> float:
        """Of time_s, what the per-channel blocks' share of the SMs adds to a native batch norm (plane.py), the per-row
        blocks' to a layer norm (rows.py): what a compiled step does not pay, as Inductor lowers both to reductions of
        its own that fill the GPU."""
        return self.fit_of(kind, cls).slowdown * sum(g.calls * g.plane_s * (1 / g.plane.fill(self.sms) - 1)
                                                     for g in groups if g.plane is not None)


def _nnls2(x1: list[float], x2: list[float], y: list[float], w: list[float]) -> tuple[float, float]:
    """Weighted least squares y ≈ a·x1 + b·x2 with a, b ≥ 0 (the two-variable case of NNLS, in closed form)."""
    def dot(u: list[float], v: list[float]) -> float:
        return sum(wi * ui * vi for wi, ui, vi in zip(w, u, v, strict=True))
    s11, s22, s12, s1y, s2y = dot(x1, x1), dot(x2, x2), dot(x1, x2), dot(x1, y), dot(x2, y)
    det = s11 * s22 - s12 * s12
    if det > 1e-12 * s11 * s22 > 0:
        a, b = (s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det
        if a >= 0 and b >= 0:
            return a, b
    only_b = (0.0, max(0.0, s2y / s22)) if s22 else (0.0, 0.0)
    only_a = (max(0.0, s1y / s11), 0.0) if s11 else (0.0, 0.0)

    def err(ab: tuple[float, float]) -> float:
        return sum(wi * (yi - ab[0] * u - ab[1] * v) ** 2 for wi, yi, u, v in zip(w, y, x1, x2, strict=True))
    return min(only_b, only_a, key=err)


def _roof(row: Row, sms: int, shape: Shape) -> float:
    return sum(g.roof_s(sms, shape.of(row.cls)) for g in row.groups)


def _learnable(row: Row) -> float:
    """The row's measured seconds less what is timed outright (Group.outright_s)."""
    return max(0.0, row.measured_s - sum(g.outright_s for g in row.groups))


def fit_kind(rows: list[Row], sms: int, shape: Shape, least: float = 0.0, per_call: float | None = None) -> KindFit:
    """The kind's (per_call_s, slowdown) by the weighted least squares, the slowdown at least `least` (a matrix
    product never beats the measured matmul roof: 1 for the matmul kinds; caches can serve a memory-bound op's bytes
    faster than the copy bandwidth, so 0 for the others); the slowdown alone where `per_call` is given."""
    x1 = [float(r.kernels) for r in rows]
    x2 = [_roof(r, sms, shape) for r in rows]
    y, w = [_learnable(r) for r in rows], [1.0 / (r.step_s * r.step_s) for r in rows]
    if per_call is not None:   # the slowdown's weighted least squares, the fixed cost given
        b = max(least, sum(wi * zi * (yi - per_call * xi) for wi, xi, yi, zi in zip(w, x1, y, x2, strict=True))
                / max(sum(wi * zi * zi for wi, zi in zip(w, x2, strict=True)), 1e-300))
        return KindFit(per_call, b if b > 0 else 1.0, len(rows))
    a, b = _nnls2(x1, x2, y, w)
    if b < least:  # held at the floor, the fixed cost refitted to what is left
        b = least
        a = max(0.0, sum(wi * xi * (yi - b * zi) for wi, xi, yi, zi in zip(w, x1, y, x2, strict=True))
                / max(sum(wi * xi * xi for wi, xi in zip(w, x1, strict=True)), 1e-300))
    return KindFit(a, b if b > 0 else 1.0, len(rows))  # no roof signal (ops of ~no work): their time is their calls'


def _key(row: Row) -> str:
    return row.kind if row.cls == ANY else f"{row.kind}/{row.cls}"


def _error(fits: dict[str, KindFit], rows: list[Row], sms: int, shape: Shape) -> float:
    """Σ of the squared errors, each over its profile's step (what the fit minimises)."""
    total = 0.0
    for r in rows:
        fit = fits[_key(r)]
        total += ((r.kernels * fit.per_call_s + fit.slowdown * _roof(r, sms, shape) - _learnable(r)) / r.step_s) ** 2
    return total


FLOOR = 1.0
GRID = {"k_half": K_HALVES, "even": EVEN, "odd": ODD}
ROUNDS = 3


def fit_shape(matmul: dict[str, list[Row]], sms: int, start: Shape | None = None) -> tuple[Shape, dict[str, KindFit]]:
    """The shape parameters that fit these matmul rows best (the kinds refitted at each trial): each parameter in
    turn over its grid, the others held, for ROUNDS rounds (coordinate descent: the full grid is 180 points)."""
    rows = [r for rs in matmul.values() for r in rs]

    def trial(shape: Shape) -> tuple[float, Shape, dict[str, KindFit]]:
        fits = fit_matmul_kinds(matmul, sms, shape)
        return _error(fits, rows, sms, shape), shape, fits

    best = trial(start or Shape())
    for _ in range(ROUNDS):
        for name, values in GRID.items():
            best = min((trial(replace(best[1], **{name: v})) for v in values), key=lambda t: t[0])
    return best[1], best[2]


def fit_matmul_kinds(matmul: dict[str, list[Row]], sms: int, shape: Shape) -> dict[str, KindFit]:
    """Each matmul kind's figures in its class. One profile row cannot tell a fixed cost from a slowdown (its two-number
    fit is any split of the row's time: the H100's TF32 LSTMs took no fixed cost, the H200's no slowdown), so a kind
    of one row takes the fixed cost per launch its other class learned from more rows (the same kernels launched:
    GNMT's TF32 LSTMs, profiled at one batch, beside its bf16 ones at three) and learns its slowdown alone."""
    fits = {k: fit_kind(rs, sms, shape, FLOOR) for k, rs in matmul.items() if len(rs) >= MIN_ROWS}
    for k, rs in matmul.items():
        if k not in fits:
            sibling = next((f for o, f in fits.items() if o.split("/")[0] == k.split("/")[0]), None)
            fits[k] = fit_kind(rs, sms, shape, FLOOR, sibling.per_call_s if sibling else None)
    return fits


def family(kind: str) -> str:
    """Which shape parameters a kind's products take: convolutions' (implicit GEMMs, cuDNN's tiles) or the
    matrix products' (cuBLAS's); the others have no product shape."""
    return "conv" if kind.startswith("convolution") else "gemm"


def fit_efficiency(rows: list[Row], sms: int, tf32_scale: float = 1.0) -> Efficiency:
    """Learn one GPU's efficiency from its profiled op rows (module docstring): the shape parameters per family
    with its matmul kinds (`tf32_scale`: the GPU's half roof over its TF32 roof, Shape.of), then every other kind
    with enough rows."""
    by_key: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_key[_key(r)].append(r)
    shapes: dict[str, Shape] = {}
    kinds: dict[str, KindFit] = {}
    for name in ("gemm", "conv"):
        mine = {k: rs for k, rs in by_key.items() if "/" in k and family(k) == name}
        if mine:
            shapes[name], fits = fit_shape(mine, sms, Shape(tf32_scale=tf32_scale if name == "gemm" else None))
            kinds.update(fits)
    for k, rs in by_key.items():
        if k not in kinds and len(rs) >= MIN_ROWS:
            kinds[k] = fit_kind(rs, sms, Shape())
    # the pooled figures time an unseen kind by its bytes: a native batch norm's slowdown is of its per-channel roof,
    # a layer norm's of its per-row one (kinds.py own_roof)
    memory = [f for k, f in kinds.items() if "/" not in k and not own_roof(k)]
    pooled = median_fit(memory) if memory else KindFit(5e-6, 2.0, 0)
    return Efficiency(sms, shapes, kinds, pooled, tuple(sorted({r.workload for r in rows})))


def median_fit(fits: list[KindFit]) -> KindFit:
    """Each figure's median over `fits`, each kind weighing by its rows (module docstring)."""
    return KindFit(_weighted_median([(f.per_call_s, f.rows) for f in fits]),
                   _weighted_median([(f.slowdown, f.rows) for f in fits]), 0)


def _weighted_median(values: list[tuple[float, int]]) -> float:
    """The median of the values, each counted `weight` times (at least once): the mean of the middle two where the
    weights split evenly, as statistics.median."""
    ordered = sorted(values)
    total, acc = sum(max(w, 1) for _, w in ordered), 0
    for i, (value, weight) in enumerate(ordered):
        acc += max(weight, 1)
        if 2 * acc == total and i + 1 < len(ordered):
            return (value + ordered[i + 1][0]) / 2
        if 2 * acc > total:
            return value
    return ordered[-1][0]


def efficiency_to_dict(e: Efficiency) -> dict:
    return {"sms": e.sms, "shapes": {k: v.__dict__ for k, v in e.shapes.items()},
            "workloads": list(e.workloads), "pooled": e.pooled.to_dict(),
            "kinds": {k: f.to_dict() for k, f in sorted(e.kinds.items())}}


def efficiency_from_dict(d: dict) -> Efficiency:
    return Efficiency(int(d["sms"]), {k: Shape(**v) for k, v in d["shapes"].items()},
                      {k: KindFit(**f) for k, f in d["kinds"].items()},
                      KindFit(**d["pooled"]), tuple(d.get("workloads", ())))
