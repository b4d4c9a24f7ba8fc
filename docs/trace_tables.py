"""The generated block of docs/accuracy.md on trace-only plans: benchmarks/trace_leave_one_out.py's residuals
(results/<machine>/diagnostics/trace-leave-one-out.json), each reference workload predicted from its trace by a
model learned without its own measurements."""

from __future__ import annotations

import json
import statistics

from gpuplan_schema.results import MachineResults

OUT_NAME = "trace-leave-one-out.json"     # benchmarks/trace_leave_one_out.py writes it
MIN_STEP_S = 0.020
TARGETS = ("goal (issue 41): steps ≥ 20 ms median |error| ≤ 10 %, none over 25 %; max batch within 5 %; ≥ 90 % "
           "inside the band")


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def _loaded(machines: list[MachineResults]) -> list[dict]:
    out = []
    for m in machines:
        path = m.folder / "diagnostics" / OUT_NAME
        if path.is_file():
            out.append(json.loads(path.read_text(encoding="utf-8")))
    return out


def _summary_rows(runs: list[dict]) -> list[list[str]]:
    rows = []
    for run in runs:
        s = run["summary"]
        rows.append([s["machine"], str(s["steps"]), _pct(s["median_abs_error"]), _pct(s["max_abs_error"]),
                     str(s["over_25"]), _pct(s["compiled_median_abs_error"]),
                     f"{s['batches_within_5']} of {s['batches']}", f"{s['inside_band']} of {s['banded']}"])
    return rows


def _workload_rows(runs: list[dict]) -> list[list[str]]:
    names = sorted({w for run in runs for w in run["summary"]["workloads"]})
    rows = []
    for name in names:
        row = [name]
        for run in runs:
            w = run["summary"]["workloads"].get(name)
            row += [str(w["n"]), _pct(w["median_abs_error"]), _pct(w["max_abs_error"])] if w else ["0", "–", "–"]
        compiled = [abs(s["error"]) for run in runs for s in run["steps"]
                    if s["workload"] == name and s["variant"] == "compile" and s["measured_s"] >= MIN_STEP_S]
        row.append(_pct(statistics.median(compiled)) if compiled else "–")
        rows.append(row)
    return rows


def _batch_rows(runs: list[dict]) -> list[list[str]]:
    return [[b["machine"], b["workload"], b["precision"], f"{b['measured']:,}", f"{b['predicted']:,}",
             f"{b['error']:+.1%}"] for run in runs for b in run["batches"]]


def _published_rows(runs: list[dict]) -> list[list[str]]:
    rows = [r for run in runs for r in run.get("published", [])]
    out = []
    for name in sorted({r["workload"] for r in rows}):
        mine = [r for r in rows if r["workload"] == name]
        errors = [abs(r["error"]) for r in mine]
        measured = [abs(r["measured_error"]) for r in mine if r["measured_error"] is not None]
        out.append([name, str(len(mine)), _pct(statistics.median(errors)), _pct(max(errors)),
                    _pct(statistics.median(measured)) if measured else "–"])
    if rows:
        errors = [abs(r["error"]) for r in rows]
        measured = [abs(r["measured_error"]) for r in rows if r["measured_error"] is not None]
        out.append(["all", str(len(rows)), _pct(statistics.median(errors)), _pct(max(errors)),
                    _pct(statistics.median(measured)) if measured else "–"])
    return out


def _over_rows(runs: list[dict]) -> list[list[str]]:
    """Every plain step >= 20 ms off by more than 25 %, and whether the prediction had the host setting it."""
    return [[s["machine"], s["workload"], s["precision"], f"{s['batch']:,}", f"{s['measured_s'] * 1e3:.1f}",
             f"{s['predicted_s'] * 1e3:.1f}", f"{s['error']:+.1%}", "host" if s["host_bound"] else "GPU"]
            for run in runs for s in run["steps"]
            if s["variant"] == "eager" and s["measured_s"] >= MIN_STEP_S and abs(s["error"]) > 0.25]


def _host_floor(machines: list[MachineResults]) -> list[list[str]]:
    """Per GPU, the training steps >= 20 ms the host sets (its issue time over twice the GPU's busy time) timed twice
    in one collection (the sweep's timing, then the steady one: collectors/workloads/steady.py): how far the two
    differ, what no prediction from the model's calls can be nearer than."""
    rows = []
    for m in machines:
        ratios = [p.step_s.median / p.quick_step_s.median for w in m.workloads if w.training for p in w.points
                  if p.status == "ok" and p.step_s and p.quick_step_s and p.host_issue_s and p.gpu_busy_s
                  and p.step_s.median >= MIN_STEP_S and 2 * p.gpu_busy_s < p.host_issue_s.median]
        if ratios:
            off = [abs(r - 1) for r in ratios]
            rows.append([m.machine, str(len(ratios)), _pct(statistics.median(off)), str(sum(o > 0.25 for o in off)),
                         f"{min(ratios):.2f}-{max(ratios):.2f}"])
    return rows


def trace_leave_one_out(machines: list[MachineResults]) -> str:
    runs = _loaded(machines)
    if not runs:
        return "No leave-one-out run is committed (benchmarks/trace_leave_one_out.py --write).\n"
    head = ["GPU", "steps ≥ 20 ms", "median abs error", "max abs error", "over 25 %", "compiled median",
            "max batch within 5 %", "inside the band"]
    machine_heads = [f"{run['summary']['machine']} {what}" for run in runs for what in ("n", "median", "max")]
    return (f"Each reference workload traced on a CPU and predicted without its own measurements; {TARGETS}.\n\n"
            + _table(head, _summary_rows(runs))
            + "\nPer workload (plain steps ≥ 20 ms; the last column: torch.compile steps, both GPUs):\n\n"
            + _table(["workload", *machine_heads, "compiled median"], _workload_rows(runs))
            + "\nLargest batch, predicted from the traced memory against the measured boundary (default allocator):\n\n"
            + _table(["GPU", "workload", "precision", "measured", "predicted", "error"], _batch_rows(runs))
            + "\nAgainst the published cross-architecture tables (each GPU's published throughput over the H100's, "
            "predicted from the trace alone, the workload left out of the model), beside the measured H100's plan on "
            "the same rows:\n\n"
            + _table(["workload", "rows", "trace median abs ratio error", "trace max", "measured H100's median"],
                     _published_rows(runs))
            + "\nThe steps over 25 % (who set the step in the prediction: the host's issue time or the GPU's work):\n\n"
            + _table(["GPU", "workload", "precision", "batch", "measured ms", "predicted ms", "error", "set by"],
                     _over_rows(runs))
            + "\nA host-set step is not measured to better than this: the same configuration timed twice in one "
            "collection (the sweep's timing, then its steady one), training steps ≥ 20 ms whose host issue time is "
            "over twice the GPU's busy time:\n\n"
            + _table(["GPU", "steps", "median abs difference", "over 25 %", "steady ÷ sweep"], _host_floor(machines)))


NEW_MODELS = "trace-compare-new-models.json"   # benchmarks/trace_compare.py --json, against issue 38's GPU runs


def trace_new_models(machines: list[MachineResults]) -> str:
    """The trace-only plan of the three examples no reference workload is, against their GPU runs (docs/trace.md)."""
    rows, per_workload = [], []
    for m in machines:
        path = m.folder / "diagnostics" / NEW_MODELS
        if not path.is_file():
            continue
        run = json.loads(path.read_text(encoding="utf-8"))
        steps = [s for s in run["steps"] if s["measured_s"] >= MIN_STEP_S]
        errors = [abs(s["error"]) for s in steps]
        batches = ", ".join(f"{b['workload']} {b['precision']} {b['predicted']:,} for {b['measured']:,} "
                            f"({b['error']:+.1%})" for b in run["batches"]) or "–"
        banded = [s["inside_band"] for s in steps if "inside_band" in s]
        inside = f"{sum(banded)} of {len(banded)}" if banded else "–"
        rows.append([m.machine, str(len(steps)), _pct(statistics.median(errors) if errors else None),
                     _pct(max(errors) if errors else None), str(sum(e > 0.25 for e in errors)), inside, batches])
        for w in sorted({s["workload"] for s in steps}):
            mine = [s for s in steps if s["workload"] == w]
            per_workload.append([m.machine, w, str(len(mine)), _pct(statistics.median(abs(s["error"]) for s in mine)),
                                 ", ".join(f"{s['precision']} {s['batch']} {s['variant']}: {s['error']:+.0%}"
                                           for s in mine)])
    if not rows:
        return f"No comparison is committed (benchmarks/trace_compare.py --json GPU_DIR/diagnostics/{NEW_MODELS}).\n"
    return (_table(["GPU", "steps ≥ 20 ms", "median abs error", "max abs error", "over 25 %", "inside the band",
                    "max batch"], rows)
            + "\n" + _table(["GPU", "workload", "steps", "median abs error", "each step (predicted ÷ measured − 1)"],
                            per_workload))
