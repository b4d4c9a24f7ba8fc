"""`gpuplan accuracy` on a terminal: per direction the headline (median and largest |error|, the one-spec-ratio
baselines, max batch) and one row per workload (its configurations, median and largest |error|, its regimes),
fitting `width`. `--markdown` prints every configuration instead (planner.check.accuracy.render_markdown, the
table docs/accuracy.md quotes)."""

from __future__ import annotations

import pandas as pd

from planner.check.accuracy import AccuracyTable, headline
from planner.render.fit import fit_table, wrap


def render_accuracy_text(table: AccuracyTable, width: int) -> list[str]:
    lines = wrap(f"{table.source} → {table.target}: {headline(table)}", width)
    counted = [r for r in table.rows if r.counted]
    if not counted:
        return [*lines, "  (no configuration with a source step ≥ 5 ms on both machines)"]
    frame = pd.DataFrame({"workload": r.workload, "error": abs(r.error), "regime": r.bound or "–"} for r in counted)
    per = frame.groupby("workload").agg(n=("error", "size"), mid=("error", "median"), top=("error", "max"),
                                        regimes=("regime", lambda s: ", ".join(sorted(set(s)))))
    rows = [["workload", "configs", "median |err|", "largest", "regimes"]]
    rows += [[w, str(r.n), f"{r.mid:.1%}", f"{r.top:.1%}", r.regimes] for w, r in per.iterrows()]
    body, _ = fit_table(rows, right={1, 2, 3}, width=width, droppable=[4], indent="  ")
    return [*lines, "", *body]
