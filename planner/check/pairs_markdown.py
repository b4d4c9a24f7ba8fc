"""The DeepLearningExamples check (planner/check/pairs.py) as markdown, for docs/accuracy.md (generated block
`accuracy-dle`) and benchmarks/prediction_accuracy.py: the summary per kind of ratio against issue 39's goals, then
every ratio with its two published rows, cited, and our two predictions."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from planner.check.crossarch import MAX_TARGET, MEDIAN_TARGET
from planner.check.harness_bands import RatioCheck
from planner.check.pairs import KINDS, PairCheck, PairRatio

KIND_WORDS = {"amp": "A100 / V100, mixed precision", "tf32/fp32": "A100 TF32 / V100 FP32",
              "precision": "one GPU's TF32 or FP32 / its mixed precision"}


def _cite(ratio: PairRatio) -> str:
    """Both rows' README lines, as links (the two rows of a table share the file)."""
    top, bottom = ratio.top.row, ratio.bottom.row
    line = lambda r: r.cite.rsplit("#", 1)[1]  # noqa: E731 - a one-liner reads best here
    return f"[{line(top)}]({top.cite})" + ("" if top.cite == bottom.cite else f", [{line(bottom)}]({bottom.cite})")


def _dle_words(check: PairCheck) -> str:
    """Which points the rows start from: the machine's own, or (*) those timed in DLE's configuration."""
    if check.dle_folder:
        parts = check.dle_folder.parts
        shown = "/".join(parts[parts.index("results"):]) if "results" in parts else str(check.dle_folder)
        return (f"Our points marked * were timed in the row's own layout and batch (`{shown}/`, "
                "benchmarks/gpu_dle_points.sh), each split by a profile of its precision and layout where the GPU "
                "runs that precision; the others are the machine's own, in our workload's layout.")
    why = f" ({check.dle_unused})" if check.dle_unused else ""
    return ("Our points are the machine's own, in our workload's layout: none timed in DLE's configuration"
            f"{why} (benchmarks/gpu_dle_points.sh times them).")


def render_pair_check(check: PairCheck | None, listed: bool = True) -> str:
    """The check's summary and every ratio; `listed`: end with the tables not scored (a second source whose list is the
    first's leaves it out)."""
    if check is None:
        return "No machine with ceilings and a catalog GPU: nothing to predict the DLE tables from.\n"
    lines = [f"**NVIDIA DeepLearningExamples, from {check.source}**: each published GPU predicted from our measured "
             "machine, then a ratio of two predictions held against the same ratio of two published rows of one table "
             "(error = predicted ÷ published − 1; +: the numerator predicted too fast). Mixed precision is our fp16 "
             "point on both GPUs. \"same\": the published model and tensor layout are our workload's; \"proxy\": "
             "another configuration of it (pretraining, Transformer-XL's adaptive softmax) or another layout than "
             f"ours. Goals (issue 39): median ≤ {MEDIAN_TARGET:.0%}, none over {MAX_TARGET:.0%}. " + _dle_words(check),
             "",
             "| ratio | rows | same: n | median | largest | goals | proxy: n | median | largest |",
             "|---|---|---|---|---|---|---|---|---|"]
    for kind in KINDS:
        n, median, largest = check.summary(kind)
        pn, pmedian, plargest = check.summary(kind, "proxy")
        met = "met" if check.meets(kind) else "missed"
        lines.append(f"| {KIND_WORDS[kind]} | {n + pn} | {n} | {median:.1%} | {largest:.1%} | {met} | {pn} | "
                     f"{pmedian:.1%} | {plargest:.1%} |")
    lines += ["", "| table | ratio | scope | published | predicted | error | our points | README lines |",
              "|---|---|---|---|---|---|---|---|"]
    for r in check.ratios:
        ours = f"{r.top.ours} / {r.bottom.ours}"
        lines.append(f"| {r.table} | {r.label} | {r.twin} | {r.published:.3f} | {r.predicted:.3f} | {r.error:+.1%} | "
                     f"{ours} | {_cite(r)} |")
    if check.listed and listed:
        lines += ["", "Not scored: " + "; ".join(check.listed) + "."]
    return "\n".join(lines) + "\n"


def render_held_out(judged: list[RatioCheck], what: str = "the new models", not_measured: Sequence[str] = ()) -> str:
    """The DLE ratios of models the bands and the model were not built from (`what`), each against the range its two
    bands give (planner/check/harness_bands.py): coverage, median half-width, then every ratio; then the tables of
    such models not measured yet, with why (`not_measured`)."""
    missing = f"\nNot measured yet: {'; '.join(not_measured)}.\n" if not_measured else ""
    if not judged:
        return f"\nAcross architectures: no ratio of {what} to score (planner/specs/published_pairs.json).\n" + missing
    inside = sum(j.inside for j in judged)
    same = [j for j in judged if j.ratio.twin == "same"]
    lines = ["", f"Across architectures (DLE ratios of {what}): {inside} of {len(judged)} inside the range "
             f"their two bands give ({inside / len(judged):.1%}), median half-width "
             f"±{statistics.median(j.half_width for j in judged):.1%}; of them \"same\" (our layout is the row's) "
             f"{sum(j.inside for j in same)} of {len(same)}", "",
             "| from | table | ratio | scope | published | predicted | error | inside |", "|---" * 8 + "|"]
    lines += [f"| {j.source} | {j.ratio.table} | {j.ratio.label} | {j.ratio.twin} | {j.ratio.published:.3f} | "
              f"{j.ratio.predicted:.3f} | {j.ratio.error:+.1%} | {'yes' if j.inside else 'no'} "
              f"(±{j.half_width:.0%}) |" for j in judged]
    return "\n".join(lines) + "\n" + missing
