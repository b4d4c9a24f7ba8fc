"""Do the bands hold on models they were not built from? Two ways, same GPU-type jump (H100 <-> H200):

1. Leave one workload out over the committed results (default): every H100 <-> H200 prediction of a reference
   workload, both ways, against the band the table gives without that workload's residuals
   (planner/check/coverage.py check_bands).
2. New models (`--pair H100_DIR H200_DIR`): machine folders of models collected on an H100 and an H200 that
   results/ does not hold (the lead's collections of examples/ workloads written after the bands were). Each is
   predicted from the other machine and checked against the band built from the committed results, which have
   never seen it. The host speed ratio between the two new machines comes from their own other workloads' steps
   (planner/model/host_speed.py), as the plan does.

Coverage (share of measured truths inside their band; goal >= 90 %) and the median half-width, per regime of the
source configuration (GPU-bound, host-bound) and for compiled configurations apart (their own band since issue 39),
then per workload, and every miss. With `--pair`, also across architectures: the new models DeepLearningExamples
publishes A100 and V100 rows for (planner/specs/published_pairs.json: efficientnet-b0, resnext101-32x4d), each ratio
predicted from each new machine against the range its two bands give it. Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/heldout_bands.py                                   # 1, on results/
    PYTHONPATH=$PWD python benchmarks/heldout_bands.py --pair runs/h100-new runs/h200-new  # 2
    ... --json out.json                                                                  # every check, as JSON

A folder that is not a machine's results (no environment, ceilings or workloads) stops with one line naming it
(exit 2).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

from gpuplan_schema.results import MachineResults, load_machine, load_results_root
from planner.check.accuracy import build_accuracy, comparable, iter_accuracy_tables
from planner.check.bands import BandTable, Residual, band_table_for
from planner.check.coverage import TARGET_COVERAGE, Check, check_bands, regime_group
from planner.check.harness_bands import HarnessCoverage, held_out_ratio_checks
from planner.check.pairs_markdown import render_held_out
from planner.model.split import COMPILED


def kind(check: Check) -> str:
    """compiled, or the source configuration's regime group (GPU-bound, host-bound)."""
    return "compiled" if check.residual.compiled else regime_group(check.residual.bound)


def committed_checks(machines: list[MachineResults]) -> list[Check]:
    """Mode 1: the H100 <-> H200 rows of the committed results, each against the band without its workload."""
    workloads = {r.workload for t in iter_accuracy_tables(machines) for r in t.rows}
    # the accuracy rows (grouped by workload), not the published same-architecture rows (grouped by GPU)
    return [c for c in check_bands(band_table_for(machines)) if c.residual.same_architecture
            and c.residual.group in workloads]


def new_model_checks(table: BandTable, a: MachineResults, b: MachineResults) -> list[Check]:
    """Mode 2: each new machine predicted from the other, each row against the committed band table (without the
    workload, should a new folder hold one of the reference workloads again)."""
    out = []
    for source, target in ((a, b), (b, a)):
        for row in build_accuracy(source, target).rows:
            r = Residual(True, row.host, row.error, row.workload, row.bound, row.variant == COMPILED)
            band = table.without(row.workload).band(True, r.host, r.compiled)
            out.append(Check(r, band.low, band.high, band.basis))
    return out


def group(checks: Iterable[Check], key) -> list[HarnessCoverage]:  # noqa: ANN001 - a function of a Check
    """The checks' coverage per group `key` names (HarnessCoverage: its `harness` is the group's name)."""
    by: dict[str, list[Check]] = {}
    for c in checks:
        by.setdefault(key(c), []).append(c)
    return [HarnessCoverage.of(name, [c.inside for c in cs], [c.half_width for c in cs])
            for name, cs in sorted(by.items())]


def report(checks: list[Check], title: str) -> str:
    if not checks:
        return f"{title}: no prediction to check.\n"
    inside = sum(c.inside for c in checks)
    lines = [f"{title}: {inside} of {len(checks)} measured truths inside their band ({inside / len(checks):.1%}; "
             f"goal {TARGET_COVERAGE:.0%}), median half-width ±{statistics.median(c.half_width for c in checks):.1%}",
             "", "| group | n | inside | coverage | median half-width |", "|---|---|---|---|---|"]
    for g in group(checks, kind) + group(checks, lambda c: f"workload: {c.residual.group}"):
        lines.append(f"| {g.harness} | {g.n} | {g.inside} | {g.coverage:.1%} | ±{g.median_half_width:.1%} |")
    misses = [c for c in checks if not c.inside]
    if misses:
        lines += ["", "Outside their band (error = predicted / measured − 1):"]
        lines += [f"- {c.residual.group} ({kind(c)}): {c.residual.error:+.1%} against −{c.low:.0%}/+{c.high:.0%}"
                  for c in sorted(misses, key=lambda c: -abs(c.residual.error))]
    return "\n".join(lines) + "\n"


def _machine(path: Path) -> MachineResults:
    try:
        machine = load_machine(path)
    except (OSError, ValueError) as e:
        raise SystemExit(f"heldout_bands.py: {path}: not a machine's results folder ({e})") from None
    if not comparable(machine):
        raise SystemExit(f"heldout_bands.py: {path}: needs ceilings, workload documents and a catalog GPU")
    return machine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("results"), help="the committed results the bands "
                        "are built from (default: results/)")
    parser.add_argument("--pair", nargs=2, type=Path, metavar=("H100_DIR", "H200_DIR"),
                        help="machine folders of new models collected on two GPU types, each predicted from the other")
    parser.add_argument("--json", type=Path, help="write every check here")
    args = parser.parse_args(argv)
    try:
        machines = load_results_root(args.results)
        published = ""
        if args.pair:
            new = [_machine(p) for p in args.pair]
            table = band_table_for(machines)
            checks = new_model_checks(table, *new)
            title = f"New models, {new[0].machine} <-> {new[1].machine}, bands from {args.results}"
            published = render_held_out(held_out_ratio_checks(table, new))
        else:
            checks = committed_checks(machines)
            title = f"Leave one workload out, {args.results}"
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    print(report(checks, title) + published, end="")
    if args.json:
        args.json.write_text(json.dumps([{"workload": c.residual.group, "kind": kind(c), "error": c.residual.error,
                                          "low": c.low, "high": c.high, "inside": c.inside, "basis": c.basis}
                                         for c in checks], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
