"""Error bands from measured residuals and the measured spread between hosts: each prediction's band is what
comparable predictions missed by where the answer was then measured, plus what the host's share of its step
can move by on another host.

A step is the GPU's work and the host's (h: the host's share of the predicted step, each part of the measured
step's split scaled to the target: a slower GPU leaves the host a smaller share). The two move for
different reasons, so the band has two parts:

- the GPU part: the middle 90% of the errors of GPU-set predictions (host share under GPU_ONLY) of the same
  kind of jump: same architecture (compute capability major equal, e.g. H100 → H200: the H100 ↔ H200 accuracy
  rows, planner/check/accuracy.py, both directions) or another one (the published cross-architecture check,
  planner/check/crossarch.py). With e = predicted / measured − 1 the measurement lay at 1 / (1 + e) of the
  prediction, so low = p95 of (1 − 1 / (1 + e)) and high = p95 of (1 / (1 + e) − 1) (nearest rank): 5% of the
  residuals beyond each side, so nine in ten inside (a p90 on each side leaves one in ten out on each: eight in
  ten inside, which is what the held-out check found);
- the host part: how far the predicted step moves on a host S slower or faster (`HostExposure.steps`: the host's
  part of the step and its issue time scale, the GPU's work does not), where S is the 90th percentile of the
  spreads measured between two hosts of one GPU type for a host-set step (planner/check/repeatability.py, scope
  "another host"): the host of a rented machine is unknown until it is rented, and 9 in 10 such steps moved by
  less than S between two of them.

    high = max(FLOOR, gpu_high + 1 / faster − 1)        low = max(FLOOR, gpu_low + 1 − 1 / slower)

So a GPU-bound step keeps a narrow band and a host-bound one gets the spread measured there. Nothing comparable
measured: ±NO_COMPARABLE, labelled "no comparable measurement". planner/check/coverage.py checks the bands on
residuals they were not built from, and the accuracy page publishes what it finds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gpuplan_schema.results import MachineResults
from planner.check.accuracy import AccuracyTable, Compared, iter_accuracy_tables
from planner.check.crossarch import CrossCheck, build_crosscheck
from planner.check.gpu_centred import gpu_centred
from planner.check.gpu_types import one_per_gpu_type
from planner.check.repeatability import ANOTHER_LEND, all_repeat_pairs
from planner.model.performance import HostExposure, Prediction
from planner.model.split import COMPILED, PLAIN_VARIANTS

FLOOR = 0.03
NO_COMPARABLE = 0.50
NO_COMPARABLE_BASIS = "no comparable measurement"
GPU_ONLY = 0.10   # a residual whose host share is below this says what the GPU part of a prediction misses
SIDE_QUANTILE = 0.95  # each side of the GPU part: 5% of residuals beyond it, a central 90% between the two
HOST_QUANTILE = 0.90
HOST_WORDS = 0.02  # a host part that widens a side by less is left out of the band's words (not of the band)
MIN_COMPILED = 8  # compiled residuals of a scope a compiled band is read from alone (fewer: the eager band, widened)
NO_HOST = HostExposure()   # a step the host does not touch


@dataclass(frozen=True)
class Band:
    low: float
    high: float
    basis: str


@dataclass(frozen=True)
class Residual:
    same_architecture: bool
    host: HostExposure  # how the predicted step depended on its host
    error: float        # predicted / measured − 1
    group: str = ""     # its workload (H100 ↔ H200 rows) or its published GPU: what coverage.py leaves out
    bound: str = ""     # the source configuration's regime, for the accuracy page's grouping
    compiled: bool = False  # a torch.compile configuration's prediction (its own band: BandTable.compiled_band)
    gpu: str = ""           # a published row's GPU (its band is centred on it: planner/check/gpu_centred.py)
    family: str = ""        # the model predicted: a published row's family, a measured pair's workload


@dataclass(frozen=True)
class CompileShift:
    """How far a compiled prediction missed beyond its eager twin's (same workload, precision and batch, the same two
    GPUs): (1 + compiled error) / (1 + eager error) − 1, what torch.compile's gain moved by between the two GPU
    types that the eager twin's split, which a compiled point is predicted by, cannot see."""

    group: str          # its workload
    shift: float


@dataclass(frozen=True)
class BandTable:
    residuals: list[Residual] = field(default_factory=list)   # every compared prediction's
    host_spread: float = 0.0   # how far a host-set step moved between two hosts of one GPU type (host_spread())
    compile_shifts: list[CompileShift] = field(default_factory=list)  # compiled against eager, measured GPU pairs
    # what a band reads, worked out once per table: a plan asks for thousands of bands of one table (a new table,
    # `without` or `replace`, starts empty)
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def gpu_errors(self, same_architecture: bool, compiled: bool = False) -> list[float]:
        """The GPU-set residuals of a scope, of eager predictions or of compiled ones (compiled_band): a compiled
        prediction's misses (its compile gain moved) are not an eager one's."""
        key = ("errors", same_architecture, compiled)
        if key not in self._memo:
            self._memo[key] = [r.error for r in self.residuals if r.same_architecture == same_architecture
                               and gpu_set(r.host) and r.compiled == compiled]
        return self._memo[key]

    def without(self, group: str) -> BandTable:
        """The table a residual of `group` is checked against: built as if that group had not been measured."""
        return replace(self, residuals=[r for r in self.residuals if r.group != group],
                       compile_shifts=[c for c in self.compile_shifts if c.group != group])

    def without_family(self, family: str) -> BandTable:
        """The table a published row of `family` is checked against: as if that model had never been published (a
        user's model is not among the published families)."""
        return replace(self, residuals=[r for r in self.residuals if r.family != family],
                       compile_shifts=[c for c in self.compile_shifts if c.group != family])

    def band(self, same_architecture: bool, host: HostExposure = NO_HOST, compiled: bool = False,
             gpu: str | None = None) -> Band:
        """The band of a prediction: same architecture or another (there centred on `gpu`'s published rows where
        it has them), eager or compiled, with the host part of `host`."""
        if compiled:
            return self.compiled_band(same_architecture, host, gpu)
        if not same_architecture and gpu is not None:
            centred = self._centred(host, gpu)
            if centred:
                return centred
        return self._band(self.gpu_errors(same_architecture), same_architecture, host)

    def _centred(self, host: HostExposure, gpu: str) -> Band | None:
        key = ("centred", gpu)
        if key not in self._memo:
            rows = [(r.gpu, r.error) for r in self.residuals if not r.same_architecture and gpu_set(r.host)
                    and not r.compiled and r.gpu]
            self._memo[key] = gpu_centred(rows, gpu, _capability)
        c = self._memo[key]
        if c is None:
            return None
        slower, faster = host.steps(self.host_spread)
        basis = (f"the middle 90% of {c.rows} published rows, other architectures"
                 + (f", centred on {c.centred_on} ({c.centre - 1:+.0%})" if c.centred_on else ""))
        return Band(max(FLOOR, c.low + 1 - 1 / slower), max(FLOOR, c.high + 1 / faster - 1),
                    basis + self._host_words(slower, faster))

    def compiled_band(self, same_architecture: bool, host: HostExposure = NO_HOST, gpu: str | None = None) -> Band:
        """A torch.compile configuration predicted on another GPU type, never the eager band: its compile gain is
        carried from the source (its eager twin's split), and that gain moved between the measured GPU types.
        Same architecture: the compiled predictions' own residuals (the H100 ↔ H200 rows of compiled points, every
        measured workload's: a user's workload measured on one GPU type gets the reference workloads' spread). Another
        architecture: the eager band there widened, side by side, by how far compile's gain moved between the
        measured GPU types (CompileShift, the middle 90%). Nothing compiled measured: the eager band, widened alike."""
        errors = self.gpu_errors(same_architecture, compiled=True)
        if same_architecture and len(errors) >= MIN_COMPILED:
            return self._band(errors, True, host, "compiled ")
        eager = self.band(same_architecture, host, gpu=gpu)
        shifts = [c.shift for c in self.compile_shifts]
        if eager.basis == NO_COMPARABLE_BASIS or not shifts:
            return eager
        low = eager.low + _side([1 - 1 / (1 + e) for e in shifts])
        high = eager.high + _side([1 / (1 + e) - 1 for e in shifts])
        return Band(low, high, f"{eager.basis}; plus compile gain moves ({len(shifts)} pairs)")

    def _band(self, errors: list[float], same_architecture: bool, host: HostExposure, what: str = "") -> Band:
        if not errors:
            return Band(NO_COMPARABLE, NO_COMPARABLE, NO_COMPARABLE_BASIS)
        slower, faster = host.steps(self.host_spread)
        low = max(FLOOR, _side([1 - 1 / (1 + e) for e in errors]) + 1 - 1 / slower)
        high = max(FLOOR, _side([1 / (1 + e) - 1 for e in errors]) + 1 / faster - 1)
        kind = "same architecture" if same_architecture else "other architectures"
        basis = f"the middle 90% of {len(errors)} measured GPU-set {what}predictions, {kind}"
        return Band(low, high, basis + self._host_words(slower, faster))

    def _host_words(self, slower: float, faster: float) -> str:
        """What the host part adds, said where it widens a side by HOST_WORDS or more (a GPU-set step's 0–1 % is
        not worth a clause on a line a person reads)."""
        if max(1 - 1 / slower, 1 / faster - 1) < HOST_WORDS:
            return ""
        return (f"; −{1 - 1 / slower:.0%}/+{1 / faster - 1:.0%} on a host {self.host_spread:.0%} slower or faster, "
                "as two hosts of one GPU type moved apart")

    def band_for(self, prediction: Prediction, gpu: str | None = None) -> Band:
        """The band of one prediction on `gpu` (a table of other residuals, e.g. a trace's, picks its own way)."""
        return self.band(prediction.same_architecture, prediction.host_there, prediction.variant == COMPILED, gpu)

    def host_band(self, host: HostExposure) -> Band:
        """A configuration measured on this GPU type, as another host of it would run it: no GPU part (the GPU was
        measured), the host part as a prediction's, at least FLOOR (timed again on other H100s, the plan's measured
        answers moved by up to 4 %, one by 10 %: docs/accuracy.md, "At the settings the plan recommends")."""
        slower, faster = host.steps(self.host_spread)
        low, high = max(FLOOR, 1 - 1 / slower), max(FLOOR, 1 / faster - 1)
        basis = f"another host of this GPU type: at least ±{FLOOR:.0%}"
        if slower - 1 >= 0.005:
            basis += f", −{1 - 1 / slower:.0%}/+{1 / faster - 1:.0%} on a host {self.host_spread:.0%} slower or faster"
        return Band(low, high, basis)


def gpu_set(host: HostExposure) -> bool:
    """The GPU sets the step and a host of another speed barely moves it: its residual is the GPU part's."""
    return host.part < GPU_ONLY and not host.limited and host.issue < 1 - GPU_ONLY


def _side(values: list[float]) -> float:
    """SIDE_QUANTILE of the values, nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(SIDE_QUANTILE * len(ordered)) - 1)]


def host_spread(machines: Sequence[MachineResults]) -> float:
    """How far a host-set step moves between two hosts of one GPU type: the 90th percentile of the spreads
    measured (a band meant to hold nine times in ten); 0 where none."""
    spreads = sorted(p.spread for p in all_repeat_pairs(machines) if p.scope == ANOTHER_LEND and p.regime == "host")
    return spreads[max(0, math.ceil(HOST_QUANTILE * len(spreads)) - 1)] if spreads else 0.0


def build_band_table(machines: Sequence[MachineResults], crosschecks: Sequence[CrossCheck] = ()) -> BandTable:
    """The residuals of every compared prediction: the H100 ↔ H200 rows and the published checks' rows."""
    tables = iter_accuracy_tables(machines)
    residuals = [Residual(True, row.host, row.error, row.workload, row.bound, row.variant == COMPILED,
                          family=row.workload) for table in tables for row in table.rows]
    for check in crosschecks:
        same = same_arch_gpus(check)  # H100 → H200 rows of the published check are the same architecture
        residuals += [Residual(r.gpu in same, r.host, r.error, r.gpu, r.bound, r.variant == COMPILED, r.gpu, r.family)
                      for r in check.rows]
    return BandTable(residuals, host_spread(machines), compile_shifts(tables))


def compile_shifts(tables: Sequence[AccuracyTable]) -> list[CompileShift]:
    """Each compiled row of the measured pairs against its eager twin (same workload, precision, batch and sequence;
    the default variant first), where both were GPU-set: how far compile's gain moved between the two GPUs."""
    out = []
    for table in tables:
        eager: dict[tuple, Compared] = {}
        for r in sorted(table.rows, key=lambda r: r.variant != "default"):
            if r.variant in PLAIN_VARIANTS:
                eager.setdefault((r.workload, r.precision, r.batch, r.seq_len), r)
        for r in table.rows:
            twin = eager.get((r.workload, r.precision, r.batch, r.seq_len))
            if r.variant == COMPILED and twin and gpu_set(r.host) and gpu_set(twin.host):
                out.append(CompileShift(r.workload, (1 + r.error) / (1 + twin.error) - 1))
    return out


def _capability(gpu: str) -> str | None:
    from planner.specs import match_gpu
    spec = match_gpu(gpu)
    return spec.compute_capability if spec else None


def same_arch_gpus(check: CrossCheck) -> set[str]:
    from planner.specs import match_gpu
    ref = match_gpu(check.reference)
    major = (ref.compute_capability or "")[:1] if ref else ""
    return {r.gpu for r in check.rows if (g := match_gpu(r.gpu)) and (g.compute_capability or "")[:1] == major}


def band_table_for(machines: Sequence[MachineResults]) -> BandTable:
    """The band table from the loaded machines: the accuracy pairs and the published checks, each made from one
    machine per GPU type (planner/check/gpu_types.py)."""
    return build_band_table(machines, published_checks(machines))


def published_checks(machines: Sequence[MachineResults]) -> list[CrossCheck]:
    """The published cross-architecture check of one measured machine per GPU type, where a table has its GPU."""
    measured = one_per_gpu_type(machines, lambda m: bool(m.ceilings and m.workloads))
    return [c for c in (build_crosscheck(m) for m in measured) if c]


def with_band(prediction: Prediction, table: BandTable, gpu: str | None = None) -> Prediction:
    """The prediction with its band; `gpu`: the GPU it is predicted on (its published rows centre the band)."""
    band = table.band_for(prediction, gpu)
    return replace(prediction, band_low=band.low, band_high=band.high, band_basis=band.basis)


def measured_band(prediction: Prediction) -> Prediction:
    """The source GPU's own configurations: measured, not predicted."""
    return replace(prediction, band_low=0.0, band_high=0.0, band_basis="measured")
