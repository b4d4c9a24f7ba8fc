"""The prediction-accuracy tables as markdown, for the docs (`render_accuracy_markdown`, wired into
docs/generate.py) and benchmarks/prediction_accuracy.py: every measured pair of GPUs both ways with the
naive answers beside the model, the errors by regime, and the published cross-architecture check."""

from __future__ import annotations

from collections.abc import Sequence

from gpuplan_schema.results import MachineResults
from planner.check.accuracy import (
    LONG_STEP_S,
    TARGET_ERROR,
    WORST_ERROR,
    iter_accuracy_tables,
    regime_summaries,
    render_markdown,
)
from planner.check.coverage import TARGET_COVERAGE, CoverageGroup, band_coverage, overall
from planner.check.crossarch import MAX_TARGET, MEDIAN_TARGET, CrossCheck, ErrorGroup, build_crosscheck
from planner.check.repeatability import RepeatPair, all_repeat_pairs, floor_for, repeat_summaries


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def render_regimes(tables: list) -> str:
    lines = [f"Errors by regime (the source configuration's bound), configurations with a source step "
             f"≥ {LONG_STEP_S * 1e3:g} ms; goal: median ≤ {TARGET_ERROR:.0%}, none over {WORST_ERROR:.0%}.", "",
             "| source → target | regime | n | median abs error | max abs error | TFLOPS ratio median | "
             "bandwidth ratio median |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.source} → {r.target} | {r.regime} | {r.n} | {_pct(r.median_abs_error)} | "
              f"{_pct(r.max_abs_error)} | {_pct(r.naive_flops_median)} | {_pct(r.naive_bandwidth_median)} |"
              for r in regime_summaries(tables)]
    return "\n".join(lines) + "\n"


def render_repeatability(pairs: list[RepeatPair], tables: list | None = None) -> str:
    """The same configuration measured twice on one machine, by regime and pair by pair; with the accuracy
    tables, how many predictions missed the goal in a regime whose own repeats moved more than the goal."""
    lines = ["Repeatability: configurations each machine measured twice (scope \"same run\": the main batch in "
             "the batch sweep and again as a variant, and the collector's repeat, minutes apart; \"another host\": "
             "the same configuration timed steadily on another rented host of the same GPU type, kept under the "
             "machine's `diagnostics/`); spread = slower / faster − 1.", "",
             "| regime | scope | pairs | median spread | max spread | machines |", "|---|---|---|---|---|---|"]
    lines += [f"| {s.regime} | {s.scope} | {s.n} | {_pct(s.median_spread)} | {_pct(s.max_spread)} | "
              f"{', '.join(s.machines)} |" for s in repeat_summaries(pairs)]
    lines += ["", "| machine | workload | precision | batch | variant | measured in | steps | spread | regime |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {p.machine} | {p.workload} | {p.precision} | {p.batch} | {p.variant} | {', '.join(p.sweeps)} | "
              f"{' / '.join(f'{t * 1e3:.2f}' for t in p.steps_s)} ms | {_pct(p.spread)} | {p.regime} |"
              for p in sorted(pairs, key=lambda p: (p.regime, p.scope, -p.spread))]
    if tables:
        lines += ["", f"{misses_beyond_repeats(pairs, tables)}: one measurement cannot check those to the goal."]
    return "\n".join(lines) + "\n"


def misses_beyond_repeats(pairs: list[RepeatPair], tables: list) -> str:
    """How many counted predictions missed the goal, and how many of them are of a workload and regime whose
    own repeats moved by more than the goal (the README's summary quotes it too)."""
    missed = [r for t in tables for r in t.rows if r.counted and abs(r.error) > WORST_ERROR]
    noisy = [r for r in missed if (floor_for(pairs, r.workload, r.bound) or 0.0) > WORST_ERROR]
    names = ", ".join(sorted({f"{r.workload} ({r.bound})" for r in noisy}))
    return (f"Of the {len(missed)} counted predictions off by more than {WORST_ERROR:.0%}, {len(noisy)} are of a "
            f"workload and regime whose own repeats moved by more than that ({names}; a workload never repeated in "
            "its regime takes the regime's largest spread)")


def render_crosscheck(check: CrossCheck) -> str:
    total = check.overall
    lines = [f"**Across architectures, from {check.source} ({check.reference})**: median |ratio error| "
             f"{_pct(total.median)} over {total.n} published GPUs × tables, largest {_pct(total.largest)} (goals: "
             f"median ≤ {MEDIAN_TARGET:.0%}, none over {MAX_TARGET:.0%}: {_met(total)}); one spec ratio on the same "
             f"rows: dense TFLOPS {_pct(check.median_abs_error('flops'))}, "
             f"bandwidth {_pct(check.median_abs_error('bandwidth'))}. Ratio = GPU / {check.reference}; error = "
             "predicted ratio ÷ published ratio − 1.", "",
             "| by | rows | median \\|error\\| | largest | goals |", "|---|---|---|---|---|"]
    lines += [f"| {by}: {g.name} | {g.n} | {_pct(g.median)} | {_pct(g.largest)} | {_met(g)} |"
              for by in ("role", "family", "gpu") for g in check.groups(by)]
    lines += ["", "| table | GPU | our precision, batch | regime | published ratio | predicted | error | TFLOPS ratio "
              "error | bandwidth ratio error | stack | informed the model |", "|---" * 11 + "|"]
    for r in check.rows:
        lines.append(f"| {r.table} | {r.gpu} | {r.setting} | {r.bound} | {r.published_ratio:.3f} | "
                     f"{r.predicted_ratio:.3f} | {r.error:+.1%} | {_signed(r.naive_error('flops'))} | "
                     f"{_signed(r.naive_error('bandwidth'))} | {'table' if r.same_stack else 'other build'} | "
                     f"{'yes' if r.informed else 'no: only checked'} |")
    skipped = [f"{t} {g}: {why}" for t, g, why in check.skipped]
    if check.not_comparable or skipped:
        lines += ["", "Not compared: " + "; ".join(check.not_comparable + skipped)]
    if check.informed_reasons:
        lines += ["", "What the rows marked *yes* changed in the model: " + "; ".join(check.informed_reasons) + "."]
    return "\n".join(lines) + "\n"


def _met(group: ErrorGroup) -> str:
    return "met" if group.meets else "missed"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1%}"


def render_coverage(groups: list[CoverageGroup]) -> str:
    """The bands checked on residuals they were not built from (planner/check/coverage.py), against the targets."""
    inside, n = overall(groups)
    lines = [f"**Bands, held out** (each residual against the band built without its workload or published GPU): "
             f"{inside} of {n} measurements inside their band, {inside / n:.1%} (target ≥ {TARGET_COVERAGE:.0%}: "
             f"{'met' if inside / n >= TARGET_COVERAGE else 'missed'}).", "",
             "| scope | regime | measurements | inside | coverage | median half-width | width target |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {g.scope} | {g.regime} | {g.n} | {g.inside} | {g.coverage:.0%} | ±{g.median_half_width:.1%} "
              f"| ±{g.width_target:.0%}: {'met' if g.meets_width else 'missed'} |" for g in groups]
    return "\n".join(lines) + "\n"


def render_accuracy_markdown(machines: Sequence[MachineResults]) -> str:
    """Every accuracy table of the loaded machines, as markdown."""
    tables = iter_accuracy_tables(machines)
    parts = [render_markdown(t) for t in tables]
    if tables:
        parts.append(render_regimes(tables))
    pairs = all_repeat_pairs(machines)
    if pairs:
        parts.append(render_repeatability(pairs, tables))
    checks = [c for c in (build_crosscheck(m) for m in machines if m.ceilings and m.workloads) if c and c.rows]
    parts += [render_crosscheck(c) for c in checks]
    if tables:
        parts.append(render_coverage(band_coverage(machines, checks)))
    return "\n".join(parts)
