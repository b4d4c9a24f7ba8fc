"""Per-operation efficiency on one GPU, learned from its measured per-op profiles (results/<gpu>/roofline-*.json).

Each op kind (planner/trace/kinds.py) gets two numbers: a fixed cost per call (`per_call_s`: launch, tail,
synchronisation inside the kernel) and how much slower than its roofline time it runs (`slowdown` = 1 /
efficiency), so that an op's time on that GPU is

    time = calls × per_call_s + slowdown × Σ_calls roof_s(call)

where roof_s is the larger of the call's math time (FLOPs at the measured matmul roof of its dtype) and memory time
(bytes at the measured copy bandwidth). For the matrix products (gemm.py) a call's math time is first divided by
how well its shape fills the GPU (waves of tiles, the reduction depth K / (K + k_half)) and, for a dimension off the
8-element alignment, by its alignment's factor: a bert-base matmul and gpt-small's 50,257-wide head are one kind,
not one efficiency. Matmul kinds are learned per math class (half: fp16 and bf16; tf32; fp32), the others across them.

The profiles aggregate each op over its calls (per name), so the fit is on sums: per kind, a non-negative least
squares over every profiled op row (each row weighted by 1 / its profile's step, so that every profile counts
alike), the two shape parameters by a grid search on the matmul rows. A kind no profile shows is timed with the
pooled memory-kind figures and counted as unlearned: its share of the predicted step is the plan's unknown share.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from planner.trace.gemm import Gemm
from planner.trace.kinds import base_kind

K_HALVES = (0.0, 32.0, 64.0, 128.0, 256.0, 512.0)
EVEN = (1.0, 0.8, 0.6, 0.45, 0.3)          # the efficiency of an even, not 8-aligned product against an aligned one
ODD = (0.5, 0.3, 0.2, 0.15, 0.1, 0.07)     # of one with an odd dimension
MIN_ROWS = 2
ANY = "any"   # the class of a kind learned across dtypes


def math_class(dtype: str | None, precision: str) -> str:
    if dtype in ("fp16", "bf16", "fp8"):
        return "half"
    return "tf32" if precision == "tf32" else "fp32"


@dataclass(frozen=True)
class Shape:
    """How a matrix product's shape sets its efficiency (gemm.py): the reduction depth at half efficiency, and the
    efficiency of an even and of an odd product against an 8-aligned one."""

    k_half: float = 0.0
    even: float = 1.0
    odd: float = 1.0

    def aligned(self, alignment: int) -> float:
        return 1.0 if alignment >= 8 else self.odd if alignment == 1 else self.even


@dataclass(frozen=True)
class Group:
    """Calls of one op with one shape, on one GPU: per-call math and memory seconds at the roofs."""

    calls: int
    math_s: float
    memory_s: float
    gemm: Gemm | None = None

    def roof_s(self, sms: int, shape: Shape) -> float:
        """Σ over the calls of the roofline time, the math time stretched by the shape's fill (matmul kinds)."""
        math_s = self.math_s
        if self.gemm is not None and math_s:
            math_s /= self.gemm.fill(sms, shape.k_half) * shape.aligned(self.gemm.alignment)
        return self.calls * max(math_s, self.memory_s)


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
    shape: Shape
    kinds: dict[str, KindFit]                 # "mm/half", "add", …
    pooled: KindFit                           # any kind no profile showed
    workloads: tuple[str, ...] = field(default_factory=tuple)   # what it was learned from

    def key(self, kind: str, cls: str) -> str | None:
        """The learned entry for an op: its kind in its math class (matmuls; else in the nearest class), else the
        kind without its variant (an NHWC convolution no profile showed is timed as an NCHW one); None: unlearned."""
        for k in dict.fromkeys((kind, base_kind(kind))):
            if cls == ANY and k in self.kinds:
                return k
            for c in (cls, "tf32" if cls == "fp32" else "half", "half") if cls != ANY else ():
                if f"{k}/{c}" in self.kinds:
                    return f"{k}/{c}"
        return None

    def time_s(self, kind: str, cls: str, groups: Iterable[Group]) -> tuple[float, bool]:
        """(predicted seconds of these calls, whether the kind was learned)."""
        groups = list(groups)
        key = self.key(kind, cls)
        fit = self.kinds[key] if key else self.pooled
        roof = sum(g.roof_s(self.sms, self.shape) for g in groups)
        return sum(g.calls for g in groups) * fit.per_call_s + fit.slowdown * roof, key is not None


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
    return sum(g.roof_s(sms, shape) for g in row.groups)


def fit_kind(rows: list[Row], sms: int, shape: Shape) -> KindFit:
    x1 = [float(r.calls) for r in rows]
    x2 = [_roof(r, sms, shape) for r in rows]
    a, b = _nnls2(x1, x2, [r.measured_s for r in rows], [1.0 / (r.step_s * r.step_s) for r in rows])
    return KindFit(a, b if b > 0 else 1.0, len(rows))  # no roof signal (ops of ~no work): their time is their calls'


def _key(row: Row) -> str:
    return row.kind if row.cls == ANY else f"{row.kind}/{row.cls}"


def _error(fits: dict[str, KindFit], rows: list[Row], sms: int, shape: Shape) -> float:
    """Σ of the squared errors, each over its profile's step (what the fit minimises)."""
    total = 0.0
    for r in rows:
        fit = fits[_key(r)]
        total += ((r.calls * fit.per_call_s + fit.slowdown * _roof(r, sms, shape) - r.measured_s) / r.step_s) ** 2
    return total


def fit_shape(matmul: dict[str, list[Row]], sms: int) -> tuple[Shape, dict[str, KindFit]]:
    """The shape parameters (a grid; the matmul kinds refitted at each point) that fit the matmul rows best."""
    rows = [r for rs in matmul.values() for r in rs]
    best: tuple[float, Shape, dict[str, KindFit]] | None = None
    for k_half, even, odd in itertools.product(K_HALVES, EVEN, ODD):
        shape = Shape(k_half, even, odd)
        fits = {k: fit_kind(rs, sms, shape) for k, rs in matmul.items()}
        error = _error(fits, rows, sms, shape)
        if best is None or error < best[0]:
            best = (error, shape, fits)
    return (best[1], best[2]) if best else (Shape(), {})


def fit_efficiency(rows: list[Row], sms: int) -> Efficiency:
    """Learn one GPU's efficiency from its profiled op rows (module docstring)."""
    by_key: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_key[_key(r)].append(r)
    shape, kinds = fit_shape({k: rs for k, rs in by_key.items() if "/" in k}, sms)
    for k, rs in by_key.items():
        if k not in kinds and len(rs) >= MIN_ROWS:
            kinds[k] = fit_kind(rs, sms, shape)
    memory = [f for k, f in kinds.items() if "/" not in k]
    pooled = KindFit(statistics.median(f.per_call_s for f in memory) if memory else 5e-6,
                     statistics.median(f.slowdown for f in memory) if memory else 2.0, 0)
    return Efficiency(sms, shape, kinds, pooled, tuple(sorted({r.workload for r in rows})))


def efficiency_to_dict(e: Efficiency) -> dict:
    return {"sms": e.sms, "shape": {"k_half": e.shape.k_half, "even": e.shape.even, "odd": e.shape.odd},
            "workloads": list(e.workloads), "pooled": e.pooled.to_dict(),
            "kinds": {k: f.to_dict() for k, f in sorted(e.kinds.items())}}


def efficiency_from_dict(d: dict) -> Efficiency:
    return Efficiency(int(d["sms"]), Shape(**d["shape"]), {k: KindFit(**f) for k, f in d["kinds"].items()},
                      KindFit(**d["pooled"]), tuple(d.get("workloads", ())))
