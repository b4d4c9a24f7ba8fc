"""A measured step split into the parts that scale differently on another GPU (docs/prediction-model.md).

    host        the GPU idles, waiting for the host: Python, launches, synchronisation. From the workload
                point's `gpu_busy_s` where recorded (step − busy), else the roofline's time in no op.
    math roof   math-bound ops' time at the matmul roof of their dtype (their FLOPs at the measured rate)
    memory roof memory-bound ops' time at the copy-bandwidth roof (their bytes at the measured bandwidth)
    latency     latency-bound ops (a launch each, too small to reach either roof)
    below roof  the rest of the ops' time: they run slower than their roof (low occupancy, reductions,
                fp32 arithmetic in a normalisation). No roof bounds it, so performance.py scales it with the
                SMs' cycles per second (SM count × boost clock), the source's speed where a clock is unknown.

Two bases. `roofline`: the per-op document of the same workload and precision (each op's time by its
class, the roof part from its FLOPs and bytes), taken at the nearest measured batch at or above half
of it, linearly interpolated between two measured batches where several exist; a torch.compile point takes
its eager twin's split (so its measured compile gain carries over to the target). `counts`: no roofline
for the configuration, so the point's own FLOP and byte counts give the roof parts (its
`achieved_*_fraction`) and all the rest is below roof (the class of that rest is unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuplan_schema.payloads import RooflinePayload, WorkloadPoint
from gpuplan_schema.payloads.roofline import RooflineAtBatch
from gpuplan_schema.payloads.workloads import PLAIN_VARIANTS  # noqa: F401 - re-exported

COMPILED = "compile"


@dataclass(frozen=True)
class OpRoof:
    """One profiled op of the math or memory class, as shares of the source step: its time, its FLOPs at the matmul
    rate of its dtype (`math`) and its bytes at the copy bandwidth (`memory`). Its roof at the source is its class's
    (`roof`: never more than its time); the rest of its time is below roof."""

    dtype: str | None
    math: float
    memory: float
    time: float
    math_class: bool

    @property
    def roof(self) -> float:
        return min(self.time, self.math if self.math_class else self.memory)

    def scaled_on(self, flops_ratio: float, bytes_ratio: float, sm_ratio: float) -> float:
        """Its time on a target whose matmuls take `flops_ratio`×, bytes `bytes_ratio`× and SM cycles `sm_ratio`× the
        source's: its class's roof scaled by that roof's ratio plus its below-roof time by the SM cycles."""
        roof = self.roof * (flops_ratio if self.math_class else bytes_ratio)
        return roof + (self.time - self.roof) * sm_ratio

    def floor(self, flops_ratio: float, bytes_ratio: float) -> float:
        """The larger of its two roofs on the target (as a share of the source step), at the ratios given (the
        target's datasheet rates: no kernel runs faster than its roof there). The ridge point moves with the GPU:
        a convolution memory-bound on an H100 (its FLOPs take 5.1 ms at the tensor rate, its bytes 5.5 ms) is
        math-bound on a V100, whose tensor rate falls 7.9× where its bandwidth falls 3.7×."""
        peak = max(self.math, self.memory)
        if peak <= 0:
            return 0.0
        return min(self.time, peak) * max(self.math * flops_ratio, self.memory * bytes_ratio) / peak

    def scaled(self, k: float) -> OpRoof:
        return OpRoof(self.dtype, self.math * k, self.memory * k, self.time * k, self.math_class)


@dataclass(frozen=True)
class StepSplit:
    """Fractions of the source step; they add up to 1. The `*_class` fields are the whole time of each
    op class (its roof part plus its below-roof part): what the bound reads."""

    host: float
    math_roof: dict[str, float]
    memory_roof: float
    latency: float
    below_roof: float
    math_class: float
    memory_class: float
    basis: str
    host_measured: bool = False
    notes: list[str] = field(default_factory=list)
    host_issue: float | None = None  # the host's time to issue the step, over the step (measured; None: not)
    ops: tuple[OpRoof, ...] = ()     # the math- and memory-class ops' two roofs (a profile's split; () on counts):
                                     # where present the target's roof time is theirs, op by op (performance.py)

    @property
    def gpu_busy(self) -> float:
        """The share of the step the GPU is busy: all but the host's idle share."""
        return 1 - self.host

    @property
    def unattributed(self) -> float:
        """Below-roof time that belongs to no known class (the counts basis)."""
        return max(0.0, 1 - self.host - self.latency - self.math_class - self.memory_class)


def split_from_roofline(payload: RooflinePayload) -> StepSplit | None:
    """The split of the roofline document's main batch."""
    return split_from_profile(payload.profiled_at(payload.batch), payload.precision)


def split_from_profile(profile: RooflineAtBatch, precision: str) -> StepSplit | None:
    """The split of one profiled batch: each op's time by its class, the step's time in no op as the host's."""
    op_time = sum(op.time_s.median for op in profile.ops)
    total = max(profile.step_s.median if profile.step_s else 0.0, op_time)
    if profile.status != "ok" or total <= 0 or not profile.ops:
        return None
    math_roof: dict[str, float] = {}
    memory_roof = latency = math_class = memory_class = 0.0
    ops = []
    for op in profile.ops:
        t = op.time_s.median / total
        dtype = op.dtype or precision
        if dtype == "fp32" and precision == "tf32":  # fp32 tensors under TF32 mode run at the tf32 rate, the
            dtype = "tf32"                            # roof the collector timed them against (op_roofline)
        math, memory = (op.math_s or 0.0) / total, (op.memory_s or 0.0) / total
        if op.op_class == "math-bound":
            math_roof[dtype] = math_roof.get(dtype, 0.0) + min(t, math)
            math_class += t
        elif op.op_class == "memory-bound":
            memory_roof += min(t, memory)
            memory_class += t
        elif op.op_class == "latency-bound":
            latency += t
        if op.op_class in ("math-bound", "memory-bound"):
            ops.append(OpRoof(dtype if math > 0 else None, math, memory, t, op.op_class == "math-bound"))
    host = max(0.0, 1 - op_time / total)
    below = max(0.0, 1 - host - latency - sum(math_roof.values()) - memory_roof)
    return StepSplit(host, math_roof, memory_roof, latency, below, math_class, memory_class,
                     f"roofline {precision} batch {profile.batch}", ops=tuple(ops))


def split_from_counts(point: WorkloadPoint, flops_fraction: float | None, bytes_fraction: float | None) -> StepSplit:
    """The FLOP/byte-count split: each fraction of its measured ceiling is the time at that roof. Where the point
    measured its GPU's busy time, the rest of the step is the host's idle: it comes out of the time below the roofs,
    not out of the roofs (a count's FLOPs take as long at the rate whether or not the GPU also waits on the host;
    with_measured_host, scaling every part to the busy share, shrank them: BERT-large's TF32 step at batch 8 on the
    H200, 29 % idle, lost 29 % of its FLOPs, and a V100 runs those at its fp32 rate)."""
    f, b = max(0.0, flops_fraction or 0.0), max(0.0, bytes_fraction or 0.0)
    busy = _busy_share(point)
    if f + b > busy:  # the byte model is an estimate: never let the roof parts exceed the GPU's time
        f, b = busy * f / (f + b), busy * b / (f + b)
    return StepSplit(1 - busy, {point.precision: f}, b, 0.0, busy - f - b, f, b, "FLOP/byte counts")


def _busy_share(point: WorkloadPoint) -> float:
    """The GPU's measured busy time over the step (`gpu_busy_s`); 1 where it was not recorded."""
    busy = _seconds(getattr(point, "gpu_busy_s", None))
    if busy is None or point.step_s is None or point.step_s.median <= 0:
        return 1.0
    return min(1.0, max(0.0, busy / point.step_s.median))


def interpolate(splits: dict[int, StepSplit], batch: int) -> StepSplit | None:
    """The split at `batch` from the roofline splits measured at other batches of the same configuration:
    linear between the two measured batches around it, the nearest one outside them; None below half the
    smallest (small batches are launch-dominated: a split from a larger one would not describe them)."""
    if not splits or batch < min(splits) / 2:
        return None
    below = [b for b in splits if b <= batch]
    above = [b for b in splits if b >= batch]
    if not below or not above:
        return splits[min(above) if above else max(below)]
    lo, hi = max(below), min(above)
    if lo == hi:
        return splits[lo]
    return _mix(splits[lo], splits[hi], (batch - lo) / (hi - lo))


def _mix(a: StepSplit, b: StepSplit, w: float) -> StepSplit:
    def lerp(x: float, y: float) -> float:
        return (1 - w) * x + w * y
    dtypes = set(a.math_roof) | set(b.math_roof)
    return StepSplit(lerp(a.host, b.host), {d: lerp(a.math_roof.get(d, 0), b.math_roof.get(d, 0)) for d in dtypes},
                     lerp(a.memory_roof, b.memory_roof), lerp(a.latency, b.latency), lerp(a.below_roof, b.below_roof),
                     lerp(a.math_class, b.math_class), lerp(a.memory_class, b.memory_class),
                     f"{a.basis} and {b.basis.split(' batch ')[-1]}, interpolated",
                     ops=tuple(op.scaled(1 - w) for op in a.ops) + tuple(op.scaled(w) for op in b.ops))


def _seconds(value: object) -> float | None:
    """A recorded time as seconds: the fields may be a statistic (`.median`) or a plain number."""
    if value is None:
        return None
    return float(getattr(value, "median", value))  # type: ignore[arg-type]


def with_measured_host(split: StepSplit, point: WorkloadPoint) -> StepSplit:
    """Replace the host share by the point's own measurement where the collector recorded `gpu_busy_s`
    (absent in older results: then the split's host share stands, from the roofline's time in no op)."""
    busy = _seconds(getattr(point, "gpu_busy_s", None))
    if busy is None or point.step_s is None or point.step_s.median <= 0:
        return split
    issue = _seconds(getattr(point, "host_issue_s", None))
    host = max(0.0, 1 - busy / point.step_s.median)
    gpu = 1 - split.host
    k = (1 - host) / gpu if gpu > 0 else 0.0
    return replace(split, host=host, math_roof={d: v * k for d, v in split.math_roof.items()},
                   memory_roof=split.memory_roof * k, latency=split.latency * k, below_roof=split.below_roof * k,
                   math_class=split.math_class * k, memory_class=split.memory_class * k, host_measured=True,
                   ops=tuple(op.scaled(k) for op in split.ops),
                   host_issue=issue / point.step_s.median if issue is not None else None)


def roofline_splits(rooflines: list[RooflinePayload], workload: str, precision: str) -> dict[int, StepSplit]:
    """The split of each profiled batch of the workload in `precision`, by batch. Kept per list of rooflines (a
    machine's, made once per plan): a plan predicts each measured point on every catalog GPU, and split every
    profile again for each (a third of a plan's time). The dict returned is shared: read it, never change it."""
    memo = _memo_of(rooflines)
    key = (workload, precision, len(rooflines))
    if key not in memo:
        memo[key] = _roofline_splits(rooflines, workload, precision)
    return memo[key]


def _memo_of(rooflines: list[RooflinePayload]) -> dict:
    """The memo kept for this list of rooflines (a machine's, made once per plan; the oldest list's dropped)."""
    memo = _SPLIT_MEMO.get(id(rooflines))
    if memo is None or memo[0] is not rooflines:
        memo = _SPLIT_MEMO[id(rooflines)] = (rooflines, {})
        while len(_SPLIT_MEMO) > SPLIT_MEMO_SIZE:
            _SPLIT_MEMO.pop(next(iter(_SPLIT_MEMO)))  # the oldest list: its plan is done
    return memo[1]


# id of a list of rooflines → (the list, held so that its id is not reused while kept; its splits by workload and
# its points' splits, each point held beside its split for the same reason)
_SPLIT_MEMO: dict[int, tuple[list[RooflinePayload], dict[tuple, object]]] = {}
SPLIT_MEMO_SIZE = 8


def _roofline_splits(rooflines: list[RooflinePayload], workload: str, precision: str) -> dict[int, StepSplit]:
    out = {}
    for r in rooflines:
        if r.workload == workload and r.precision == precision and r.device == "cuda":
            # a profile predicted from the model's trace (planner/trace/hybrid.py) says so in its split's basis
            words = getattr(r, "basis_words", "")
            for profile in r.profiled():  # the main batch and, from roofline collector 2, a few others
                split = split_from_profile(profile, r.precision)
                if split:
                    out[profile.batch] = replace(split, basis=f"{split.basis} ({words})") if words else split
    return out


def split_point(point: WorkloadPoint, rooflines: list[RooflinePayload], workload: str,
                flops_fraction: float | None, bytes_fraction: float | None) -> StepSplit:
    """The split of one measured point: from the roofline where one describes it (same precision, a plain
    variant, the default sequence length), else from its counts. Kept with the rooflines' splits (roofline_splits):
    a plan splits each point once, not once per GPU it predicts it on."""
    if not rooflines:  # from its counts, quickly; and the one empty list's memo would hold every machine's points
        return _split_point(point, rooflines, workload, flops_fraction, bytes_fraction)
    memo = _memo_of(rooflines)
    key = ("point", id(point), workload, flops_fraction, bytes_fraction)
    kept = memo.get(key)
    if kept is None or kept[0] is not point:
        kept = memo[key] = (point, _split_point(point, rooflines, workload, flops_fraction, bytes_fraction))
    return kept[1]


def _split_point(point: WorkloadPoint, rooflines: list[RooflinePayload], workload: str,
                 flops_fraction: float | None, bytes_fraction: float | None) -> StepSplit:
    split = None
    if point.variant in (*PLAIN_VARIANTS, COMPILED) and point.seq_len is None:
        split = interpolate(roofline_splits(rooflines, workload, point.precision), point.batch)
        if split is None and point.precision in HALF_SIBLING:
            split = sibling_split(rooflines, workload, point.precision, point.batch)
        if split is not None and point.variant == COMPILED:
            # the roofline profiles the eager step: the compiled one is taken to change on another GPU as
            # its eager twin does, i.e. the source's measured torch.compile gain carries over
            split = replace(split, basis=f"{split.basis} (eager twin; the measured compile gain carried over)")
    if split is None:
        split = split_from_counts(point, flops_fraction, bytes_fraction)
    return with_measured_host(split, point)


# fp16 and bf16 autocast run the same kernels on the same 2-byte tensors at the same tensor-core rate (every
# GPU in the catalog that has both): a step profiled at one is split alike at the other (the rooflines are
# collected at the main precision only). The matmul part is the other dtype's, scaled by its own rate.
HALF_SIBLING = {"fp16": "bf16", "bf16": "fp16"}


def sibling_split(rooflines: list[RooflinePayload], workload: str, precision: str, batch: int) -> StepSplit | None:
    sibling = HALF_SIBLING[precision]
    split = interpolate(roofline_splits(rooflines, workload, sibling), batch)
    if split is None:
        return None
    ops = tuple(replace(op, dtype=precision if op.dtype == sibling else op.dtype) for op in split.ops)
    return replace(split, math_roof=as_dtype(split.math_roof, sibling, precision), ops=ops,
                   basis=f"{split.basis} (its {precision} twin split alike)")


def as_dtype(math_roof: dict[str, float], old: str, new: str) -> dict[str, float]:
    """The math roof with `old`'s matmuls counted as `new`'s. A step can hold both dtypes already (cuDNN's LSTMs run
    in fp16 under bf16 autocast: gnmt), so the two add up; a dict comprehension renaming the key kept only one of
    them, and the V100's gnmt fp16 step lost a fifth of its time (+115 % against Lambda's row; +35 % after)."""
    out: dict[str, float] = {}
    for d, v in math_roof.items():
        key = new if d == old else d
        out[key] = out.get(key, 0.0) + v
    return out


def sibling_compile_points(points: list[WorkloadPoint], precision: str) -> list[WorkloadPoint]:
    """torch.compile points measured at the half-precision twin only, carried to `precision`: the compiled step
    × this precision's eager step over the twin's, at the same batch (the plan recommends torch.compile with
    the gain measured at the twin; a ranking at this precision then uses the same gain)."""
    sibling = HALF_SIBLING.get(precision)
    if sibling is None or any(p.precision == precision and p.variant == COMPILED and p.step_s for p in points):
        return []

    def eager(prec: str, batch: int) -> float | None:
        return next((p.step_s.median for p in points if p.precision == prec and p.batch == batch and p.step_s
                     and p.status == "ok" and p.variant in PLAIN_VARIANTS and p.seq_len is None), None)
    out = []
    for c in points:
        if c.precision == sibling and c.variant == COMPILED and c.status == "ok" and c.step_s and c.seq_len is None:
            mine, theirs = eager(precision, c.batch), eager(sibling, c.batch)
            if mine and theirs:
                step = c.step_s.scaled(mine / theirs)
                out.append(replace(c, precision=precision, step_s=step, throughput_per_s=c.batch / step.median,
                                   host_issue_s=None, gpu_busy_s=None))
    return out


def machine_rooflines(machine: object) -> list[RooflinePayload]:
    """A loaded machine's roofline documents (`MachineResults.documents`)."""
    docs = getattr(machine, "documents", {}) or {}
    return [d.payload for d in docs.values() if d.kind == "roofline"]
