"""The generated tables of README.md and docs/*.md: each a function from the loaded machines of results/ to
Markdown, registered by name in docs/generate.py's GENERATORS. pandas (through planner.export.frame's typed
tidy frame) where a pivot says it shortest; the typed payloads where a figure needs the document's structure."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults, load_machine
from planner.check.accuracy import ALLOCATORS, AccuracyTable, build_accuracy, iter_accuracy_tables, render_markdown
from planner.check.accuracy_markdown import (
    misses_beyond_repeats,
    render_crosscheck,
    render_regimes,
    render_repeatability,
)
from planner.check.bands import BandTable, band_table_for, build_band_table
from planner.check.coverage import TARGET_COVERAGE, band_coverage, overall
from planner.check.crossarch import MAX_TARGET as CROSS_MAX
from planner.check.crossarch import MEDIAN_TARGET as CROSS_MEDIAN
from planner.check.crossarch import build_crosscheck
from planner.check.dle_points import DLE_POINTS
from planner.check.harness_bands import (
    HarnessCoverage,
    HeldOutFamilies,
    harness_coverage,
    held_out_family_checks,
    held_out_ratio_checks,
)
from planner.check.lambda_heldout import held_out_lambda_ratios, render
from planner.check.model_tables import measured_checks
from planner.check.model_tables import render as render_timm
from planner.check.pairs import build_pair_check
from planner.check.pairs_markdown import render_held_out, render_pair_check
from planner.check.repeatability import ANOTHER_LEND, SAME_RUN, all_repeat_pairs, repeat_summaries
from planner.check.scaling_check import check_published_scaling, slow_host_bandwidths, summarize_scaling
from planner.export.frame import machines_frame
from planner.model.workload_verdict import main_batch
from planner.scaling.intra_node import load_link_runs
from planner.specs.published_models import load_model_tables
from planner.specs.published_pairs import PairTable, load_pairs

SOURCE, TARGET = "h100-80gb", "h200"  # the accuracy pair: two single GPUs measured alike
# The new models (issue 38's examples) collected on each of the pair, held out of the model and the bands
# (results/<machine>/diagnostics/new-models-2026-11-27/README.md says how each was run)
# the held-out Lambda models (planner/check/lambda_heldout.py HELD_OUT_FAMILIES), each round collected on an H200 after
# its trace-only predictions were frozen (results/predictions-before-measurement/lambdaheld-2026-11-29: ncf, waveglow;
# lambdaheld2-2026-11-29: tacotron2, transformer-xl-large); a round not committed yet is left out
LAMBDA_HELD_OUT = ((TARGET, "diagnostics/lambdaheld-2026-11-29/runs/lambda-heldout"),
                   (TARGET, "diagnostics/lambdaheld2-2026-11-29/runs/h200-lambdaheld2"))
NEW_MODELS = {SOURCE: "diagnostics/new-models-2026-11-27/no-budget/runs/new-models",
              TARGET: "diagnostics/new-models-2026-11-27/collect/runs/new-models"}
# The held-out families DLE publishes too (published_pairs.json: dle-ncf, dle-waveglow, dle-tacotron2): each model's
# DLE ratios are scored from the collection that measured it (machine, folder under results/<machine>/), never from the
# reference machines; a collection without the model's point lists its tables as not measured (tacotron2's: no step
# of it timed yet in its round's folder).
HELD_OUT_DLE = {"ncf": LAMBDA_HELD_OUT[0], "waveglow": LAMBDA_HELD_OUT[0], "tacotron2": LAMBDA_HELD_OUT[1]}
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def _gpu_machines(machines: list[MachineResults]) -> list[MachineResults]:
    """Single-GPU machines with ceilings: the ones whose figures the tables compare."""
    return [m for m in machines if m.gpu_name and m.ceilings and m.ceilings.device == "cuda"]


def _by(machines: list[MachineResults], name: str) -> MachineResults:
    return next(m for m in machines if m.machine == name)


def _heading(m: MachineResults) -> str:
    return f"{m.gpu_name} (`{m.machine}`)"


# ── ceilings ─────────────────────────────────────────────────────────────────────────────────

def ceilings(machines: list[MachineResults]) -> str:
    """Peak and sustained matmul per dtype, bandwidths and launch latency of each GPU machine."""
    gpus = _gpu_machines(machines)
    df = machines_frame(gpus).query("collector == 'ceilings' and status == 'ok'")
    value = df.pivot_table(index=["metric", "precision"], columns="machine", values="value", dropna=False,
                           aggfunc="first")
    plain = df[df["precision"].isna()].set_index(["metric", "machine"])

    def cell(metric: str, m: str, scale: float, fmt: str = ".4g", precision: str | None = None) -> str:
        try:
            v = value.loc[(metric, precision), m] if precision else plain.loc[(metric, m), "value"]
        except KeyError:
            return "–"
        return "–" if pd.isna(v) else f"{v / scale:{fmt}}"

    rows = []
    for dtype in DTYPES:
        rows.append([f"{dtype} matmul, peak / sustained (TFLOP/s)"] + [
            f"{cell('matmul_flops_per_s', m.machine, 1e12, precision=dtype)} / "
            f"{cell('matmul_sustained_flops_per_s', m.machine, 1e12, precision=dtype)}" for m in gpus])
    copy = [plain.loc[("memory_copy_bytes_per_s", m.machine)] for m in gpus]
    rows.append(["device memory copy, read + write (GB/s)"] + [
        f"**{c['value'] / 1e9:.0f}** (IQR {c['spread'] / c['value']:.1%})" for c in copy])
    for label, a, b in (("read-only / write-only (GB/s)", "memory_read", "memory_write"),
                        ("host→device pinned / pageable (GB/s)", "h2d_pinned", "h2d_pageable")):
        rows.append([label] + [f"{cell(f'{a}_bytes_per_s', m.machine, 1e9, '.1f' if 'h2d' in a else '.0f')} / "
                               f"{cell(f'{b}_bytes_per_s', m.machine, 1e9, '.1f' if 'h2d' in b else '.0f')}"
                               for m in gpus])
    rows.append(["launch latency (µs)"] + [cell("launch_latency_s", m.machine, 1e-6, ".1f") for m in gpus])
    rows.append(["whole `ceilings` collector (s)"] + [f"{m.ceilings.elapsed_s:.1f}" for m in gpus])
    return _table([""] + [_heading(m) for m in gpus], rows)


# ── workloads ────────────────────────────────────────────────────────────────────────────────

def _main_bf16(payload: WorkloadPayload):  # noqa: ANN202 - a WorkloadPoint or None
    """The bf16 default-variant point at the main batch (the trial over the sweep point)."""
    main = main_batch(payload)
    ok = [p for p in payload.points if p.batch == main and p.precision == "bf16" and p.variant == "default"
          and p.status == "ok" and p.seq_len is None and p.sweep in ("variant", "batch")]
    return min(ok, key=lambda p: p.sweep != "variant", default=None)


def _boundary(payload: WorkloadPayload, precision: str) -> str:
    default, expandable = payload.boundary(precision), payload.boundary(precision, "expandable_segments")
    text = str(default.max_batch) if default and default.max_batch else "–"
    return text + (f" ({expandable.max_batch} expandable)" if expandable and expandable.max_batch else "")


def _per_workload(machines: list[MachineResults], cell: Callable[[WorkloadPayload, WorkloadPoint], str],
                  first: str) -> str:
    """A row per workload and a column per GPU machine: `cell` of the workload's bf16 main point there."""
    gpus = _gpu_machines(machines)
    rows = []
    for name in sorted({w.workload for m in gpus for w in m.workloads}):
        cells = []
        for m in gpus:
            w = next((w for w in m.workloads if w.workload == name), None)
            main = _main_bf16(w) if w else None
            cells.append(cell(w, main) if w and main else "–")
        rows.append([f"`{name}`", *cells])
    return _table([first] + [_heading(m) for m in gpus], rows)


def workloads_main(machines: list[MachineResults]) -> str:
    """Each workload's bf16 main point and its boundaries on each GPU machine."""
    def cell(w: WorkloadPayload, p: WorkloadPoint) -> str:
        tokens = f", {p.tokens_per_s / 1e3:.0f} k tokens/s" if p.tokens_per_s else ""
        return (f"batch {p.batch}: {p.step_s.median * 1e3:.3g} ms, {p.throughput_per_s:.4g} {w.unit}/s"
                f"{tokens}; max batch bf16 {_boundary(w, 'bf16')}, fp32 {_boundary(w, 'fp32')}")
    return _per_workload(machines, cell, "workload (bf16, main batch)")


def variants(machines: list[MachineResults]) -> str:
    """At bf16 and the main batch: the step, its repeat in the same collection, and torch.compile's step."""
    def cell(w: WorkloadPayload, main: WorkloadPoint) -> str:
        same = [p for p in w.points if p.batch == main.batch and p.precision == "bf16" and p.status == "ok"]
        repeat = next((p for p in same if p.sweep == "repeat"), None)
        compiled = next((p for p in same if p.variant == "compile"), None)
        step = main.step_s.median
        text = f"{step * 1e3:.4g} ms"
        if repeat:
            text += f", repeat {repeat.step_s.median * 1e3:.4g} ms ({repeat.step_s.median / step - 1:+.1%})"
        if compiled:
            text += f", compiled {compiled.step_s.median * 1e3:.4g} ms ({step / compiled.step_s.median:.2f}×)"
        return text
    return _per_workload(machines, cell, "workload (bf16, main batch): step")


def headline(machines: list[MachineResults]) -> str:
    """The README's few figures: bf16 peak, copy bandwidth, two workloads' throughput."""
    gpus = _gpu_machines(machines)
    df = machines_frame(gpus)
    peak = df.query("metric == 'matmul_flops_per_s' and precision == 'bf16'").set_index("machine")["value"]
    copy = df.query("metric == 'memory_copy_bytes_per_s'").set_index("machine")["value"]
    rows = [["bf16 matmul peak"] + [f"{peak[m.machine] / 1e12:.0f} TFLOP/s" for m in gpus],
            ["device memory copy"] + [f"{copy[m.machine] / 1e9:.0f} GB/s" for m in gpus]]
    for name in ("gpt-small", "resnet50"):
        cells = []
        for m in gpus:
            w = next(w for w in m.workloads if w.workload == name)
            p = _main_bf16(w)
            cells.append(f"{p.throughput_per_s:.0f} {w.unit}/s (batch {p.batch}, bf16, eager)")
        rows.append([f"`{name}` training"] + cells)
    return _table([""] + [_heading(m) for m in gpus], rows)


def allocator_boundaries(machines: list[MachineResults]) -> str:
    """The OOM boundary per precision: default allocator → expandable segments."""
    gpus = _gpu_machines(machines)
    names = sorted({w.workload for m in gpus for w in m.workloads})
    rows = []
    for name in names:
        cells = []
        for m in gpus:
            w = next((w for w in m.workloads if w.workload == name), None)
            parts = []
            for precision in DTYPES:
                a, b = (w.boundary(precision), w.boundary(precision, "expandable_segments")) if w else (None, None)
                if a and b and a.max_batch and b.max_batch:
                    parts.append(f"{precision} {a.max_batch} → {b.max_batch} ({b.max_batch / a.max_batch - 1:+.0%})")
            cells.append("; ".join(parts) or "–")
        rows.append([f"`{name}`", *cells])
    return _table(["workload"] + [_heading(m) + ", default → expandable segments" for m in gpus], rows)


def user_workload(machines: list[MachineResults], name: str = "sensor-cnn") -> str:
    """The README's example workload: its bf16 batch sweep (step, throughput) and boundary per GPU machine."""
    gpus = _gpu_machines(machines)
    df = machines_frame(gpus).query("workload == @name and precision == 'bf16' and status == 'ok'")
    sweep = df.query("sweep == 'batch' and not cudnn_benchmark").pivot_table(
        index="batch", columns=["machine", "metric"], values="value")
    unit = next(w.unit for m in gpus for w in m.workloads if w.workload == name)
    rows = [[str(batch)] + [f"{sweep.loc[batch, (m.machine, 'step_s')] * 1e3:.1f} ms, "
                            f"{sweep.loc[batch, (m.machine, 'throughput_per_s')] / 1e3:.0f} k {unit}/s" for m in gpus]
            for batch in sweep.index]
    bounds = [next(w for w in m.workloads if w.workload == name).boundary("bf16") for m in gpus]
    rows.append(["max batch"] + [f"{b.max_batch}" + (" (the search's cap)" if b.capped else "") for b in bounds])
    return _table(["batch (bf16)"] + [_heading(m) for m in gpus], rows)


def _resnet50_answer(machines: list[MachineResults]) -> list[str]:
    """The resnet50 block of `gpuplan plan results/h100-80gb --target H200` as a pipe gets it (100 columns):
    its first line up to the blank line after the block."""
    from planner.plan.plan import build_plan
    from planner.render.plan_text import render_plan_text

    lines = render_plan_text(build_plan(_by(machines, SOURCE), ["H200"], None, machines), verbose=True).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("resnet50 on"))
    return lines[start:lines.index("", start)]


def plan_command(machines: list[MachineResults]) -> str:
    """The README's command: the plan filtered to resnet50's block (grep -A: its line count, after wrapping)."""
    return (f"gpuplan plan results/h100-80gb --with results --target H200 --verbose | "
            f"grep -A{len(_resnet50_answer(machines)) - 1} '^resnet50 on'")


def plan_default(machines: list[MachineResults]) -> str:
    """What `gpuplan plan results/h100-80gb` prints at 80 columns: the folder alone, the answer on one screen."""
    from planner.plan.plan import build_plan
    from planner.render.plan_text import render_plan_text

    source = _by(machines, SOURCE)
    text = render_plan_text(build_plan(source, None, None, [source], rank_defaults=True), width=80)
    return f"```text\n$ COLUMNS=80 gpuplan plan results/{SOURCE}\n{text}\n```\n"


def plan_head(machines: list[MachineResults]) -> str:
    """The README's example: the default plan of the H100 folder at 80 columns, up to its picks (`head`)."""
    from planner.plan.plan import build_plan
    from planner.render.plan_text import render_plan_text

    source = _by(machines, SOURCE)
    lines = render_plan_text(build_plan(source, None, None, [source], rank_defaults=True), width=80).splitlines()
    cheapest = next(i for i, line in enumerate(lines) if line.startswith("  cheapest"))
    head = lines[:next(i for i in range(cheapest + 1, len(lines)) if lines[i][2:3].strip())]  # its wrapped lines too
    return f"```text\n$ COLUMNS=80 gpuplan plan results/{SOURCE} | head -{len(head)}\n" + "\n".join(head) + "\n```\n"


def plan_answer(machines: list[MachineResults]) -> str:
    """docs/plan.md's example of one workload's answer block."""
    return "```text\n" + "\n".join(_resnet50_answer(machines)) + "\n```\n"


LOAD_EXAMPLE = ("from planner import load_results; "
                "print(load_results('results').groupby(['gpu','gpu_count']).size())")


def load_results_example(machines: list[MachineResults]) -> str:
    """The README's pandas one-liner and what it prints (the frame of the same machines)."""
    frame = machines_frame(machines)
    return f"```text\n$ python -c \"{LOAD_EXAMPLE}\"\n{frame.groupby(['gpu', 'gpu_count']).size()}\n```\n"


PIVOT_QUERY = ("collector == 'workloads' and workload == 'resnet50' and precision == 'bf16' and batch == 256 "
               "and metric == 'throughput_per_s'")
PIVOT_INDEX = ["sweep", "compile", "layout", "cudnn_benchmark", "allocator"]
# The README's code, run by tests/test_docs.py; the generator applies the same query and index.
PIVOT_EXAMPLE = """from planner import load_results
df = load_results("results")
runs = df.query("collector == 'workloads' and workload == 'resnet50' and precision == 'bf16'"
                " and batch == 256 and metric == 'throughput_per_s'")
table = runs.pivot_table(index=["sweep", "compile", "layout", "cudnn_benchmark", "allocator"],
                         columns="machine", values="value")
print(table.round().astype("Int64"))"""


def pivot_example(machines: list[MachineResults]) -> str:
    """The README's pivot over the key's setting columns: one measured value per cell (the same code, run on
    the frame of the same machines)."""
    runs = machines_frame(machines).query(PIVOT_QUERY)
    table = runs.pivot_table(index=PIVOT_INDEX, columns="machine", values="value")
    return f"```python\n{PIVOT_EXAMPLE}\n```\n\n```text\n{table.round().astype('Int64')}\n```\n"


# ── accuracy ─────────────────────────────────────────────────────────────────────────────────

def accuracy_tables(machines: list[MachineResults]) -> str:
    a, b = _by(machines, SOURCE), _by(machines, TARGET)
    return "\n".join(render_markdown(build_accuracy(s, t)) for s, t in ((a, b), (b, a)))


MEDIAN_TARGET, MAX_TARGET, BATCH_TARGET = 0.05, 0.15, 0.03  # the README's stated targets


def _verdict(value: float, target: float) -> str:
    return "**met**" if value <= target else "**missed**"


def _direction(table: AccuracyTable) -> str:
    """One direction's figures, each against its target in words."""
    s = table.summary()
    median, worst = s.get("model_median", 0), s.get("model_max", 0)
    batch = [float(s[f"capacity_max_{a}"]) for a in ALLOCATORS if f"capacity_max_{a}" in s]
    text = (f"**{table.source} → {table.target}** ({s['configurations']} configurations with a source step ≥ 5 ms): "
            f"median error {median:.1%}, target at most {MEDIAN_TARGET:.0%}: {_verdict(median, MEDIAN_TARGET)}; "
            f"largest error {worst:.1%}, target none over {MAX_TARGET:.0%}: {_verdict(worst, MAX_TARGET)}")
    if batch:
        text += f"; max batch within {max(batch):.1%}, target {BATCH_TARGET:.0%}: {_verdict(max(batch), BATCH_TARGET)}"
    naive = (f" (one spec ratio instead: TFLOPS {s.get('naive_flops_median', 0):.1%} median, "
             f"{s.get('naive_flops_max', 0):.1%} largest; bandwidth {s.get('naive_bandwidth_median', 0):.1%}, "
             f"{s.get('naive_bandwidth_max', 0):.1%})")
    return text + naive + "."


def accuracy_summary(machines: list[MachineResults]) -> str:
    """Each direction's median and largest error and max batch, and the published cross-architecture check, each
    against its target, met or missed; then how much a measurement itself moves."""
    a, b = _by(machines, SOURCE), _by(machines, TARGET)
    lines = ["- " + _direction(build_accuracy(s, t)) for s, t in ((a, b), (b, a))]
    check = build_crosscheck(a)
    total, checked = check.overall, {g.name: g for g in check.groups("role")}.get("only checked")
    lines.append(f"- **Across architectures, from {check.source} ({check.reference})**, {total.n} published "
                 f"GPUs × tables: median ratio error {total.median:.1%}, target at most {CROSS_MEDIAN:.0%}: "
                 f"{_verdict(total.median, CROSS_MEDIAN)}; largest {total.largest:.1%}, target none over "
                 f"{CROSS_MAX:.0%}: {_verdict(total.largest, CROSS_MAX)}"
                 + (f"; on the {checked.n} rows that informed no choice of the model, median {checked.median:.1%}, "
                    f"largest {checked.largest:.1%}" if checked else "")
                 + f" (one spec ratio instead: dense TFLOPS {check.median_abs_error('flops'):.1%}, bandwidth "
                   f"{check.median_abs_error('bandwidth'):.1%}).")
    pairs = all_repeat_pairs([a, b])
    same = [p for p in pairs if p.scope == SAME_RUN]
    host = [p.spread for p in same if p.regime == "host"]
    gpu = [p.spread for p in same if p.regime != "host"]
    other = next(r for r in repeat_summaries(pairs) if r.regime == "host" and r.scope == ANOTHER_LEND)
    misses = misses_beyond_repeats(pairs, iter_accuracy_tables([a, b]))
    lines.append(f"- **How much a measurement moves**: within one collection a configuration repeated within a median "
                 f"{statistics.median(gpu):.1%} (at most {max(gpu):.1%}) when GPU-bound and "
                 f"{statistics.median(host):.1%} (at most {max(host):.0%}) when host-bound (timed steadily); on "
                 f"another rented host of the same GPU type a host-bound step moved by a median "
                 f"{other.median_spread:.0%}, at most {other.max_spread:.0%}: that part of the step is the host's, "
                 f"not the GPU's. {misses} (docs/accuracy.md).")
    groups = band_coverage([a, b], [c for c in (check, build_crosscheck(b)) if c and c.rows])  # as the site's page
    inside, n = overall(groups)
    widths = "; ".join(f"{g.scope}, {g.regime}: ±{g.median_half_width:.0%} (target ±{g.width_target:.0%}: "
                       f"{_verdict(g.median_half_width, g.width_target)})" for g in groups)
    lines.append(f"- **Bands, held out**: {inside} of {n} measurements inside the band their prediction would have had "
                 f"without them, {inside / n:.1%}, target at least {TARGET_COVERAGE:.0%}: "
                 f"{'**met**' if inside / n >= TARGET_COVERAGE else '**missed**'}; median half-widths {widths}.")
    return "\n".join(lines) + "\n"


def accuracy_regimes(machines: list[MachineResults]) -> str:
    """H100 ↔ H200 errors by regime (the source configuration's bound), the naive answers beside them."""
    return render_regimes(iter_accuracy_tables([_by(machines, SOURCE), _by(machines, TARGET)]))


def _script(name: str):  # noqa: ANN202 - a module
    """A benchmarks/ script, loaded from its file (scripts are not a package)."""
    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))  # type: ignore[union-attr,arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]  (registered first: a dataclass looks itself up)
    return module


def band_harnesses(machines: list[MachineResults]) -> str:
    """The bands held out, per harness: the measured pair, Lambda, the GPT-2 script and DLE's ratios."""
    a, b = _by(machines, SOURCE), _by(machines, TARGET)
    table = build_band_table([a, b], [c for c in (build_crosscheck(a), build_crosscheck(b)) if c and c.rows])
    rows = [[h.harness, str(h.n), str(h.inside), f"{h.coverage:.1%}", f"±{h.median_half_width:.1%}",
             "met" if h.coverage >= TARGET_COVERAGE else "missed"]
            for h in harness_coverage(table, build_pair_check(a, _reference_pairs())) + _held_out_across(machines)]
    return _table(["harness", "truths", "inside", "coverage", "median half-width", f"≥ {TARGET_COVERAGE:.0%}"], rows)


def _held_out_across(machines: list[MachineResults]) -> list[HarnessCoverage]:
    """Held-out models across architectures, the two harnesses that have them and both together: the new models' DLE
    ratios (from their H100 and H200 collections) and the Lambda families' ratios to the H100 SXM (from the H200's)."""
    bands, lambda_machines = band_table_for(machines), _lambda_held_out(machines)
    judged = held_out_ratio_checks(bands, _new_models(machines)) + _held_out_families(machines, bands).judged
    dle = [(c.inside, c.half_width) for c in judged]
    lam = [(r.inside, r.half_width) for m in lambda_machines for r in held_out_lambda_ratios(bands, m)]
    named = (("held-out models: DLE ratios (other architectures)", dle),
             ("held-out families: Lambda ratios (other architectures)", lam),
             ("held-out models, both (other architectures)", dle + lam))
    return [HarnessCoverage.of(name, [i for i, _ in rows], [w for _, w in rows]) for name, rows in named if rows]


def _lambda_held_out(machines: list[MachineResults]) -> list[MachineResults]:
    """The collections of the held-out Lambda models (LAMBDA_HELD_OUT) that are committed, in their rounds' order."""
    paths = [_by(machines, machine).folder / folder for machine, folder in LAMBDA_HELD_OUT]
    return [load_machine(p) for p in paths if p.is_dir()]


def _reference_pairs() -> list[PairTable]:
    """The DLE tables the reference machines are checked against: all but the held-out families' (HELD_OUT_DLE), which
    are scored from their own collections only."""
    return [t for t in load_pairs() if t.model not in HELD_OUT_DLE]


def _held_out_families(machines: list[MachineResults], bands: BandTable) -> HeldOutFamilies:
    """The held-out families' DLE ratios, each from its collection (HELD_OUT_DLE; a folder loaded once)."""
    loaded: dict[Path, MachineResults | None] = {}
    collections = {}
    for model, (machine, folder) in HELD_OUT_DLE.items():
        path = _by(machines, machine).folder / folder
        if path not in loaded:
            loaded[path] = load_machine(path) if path.is_dir() else None
        collections[model] = loaded[path]
    where = {model: f"`results/{machine}/{folder}/`" for model, (machine, folder) in HELD_OUT_DLE.items()}
    return held_out_family_checks(bands, collections, where=where)


def _new_model_folders(machines: list[MachineResults]) -> dict[str, Path]:
    """The new models' collections (NEW_MODELS) that are committed, by the machine of the pair that holds each."""
    folders = {m.machine: m.folder / NEW_MODELS[m.machine] for m in machines if m.machine in NEW_MODELS}
    return {name: folder for name, folder in folders.items() if folder.is_dir()}


def _new_models(machines: list[MachineResults]) -> list[MachineResults]:
    return [load_machine(f) for f in _new_model_folders(machines).values()]


def held_out_lambda(machines: list[MachineResults]) -> str:
    """The held-out Lambda models from their H200 collections (one a round), each GPU's ratio to the H100 SXM against
    the range its two bands (built without the model) give it (planner/check/lambda_heldout.py)."""
    measured = _lambda_held_out(machines)
    if not measured:
        return ""
    bands = band_table_for(machines)
    sources = dict.fromkeys(m.gpu_name or m.machine for m in measured)   # one H200 name, each round's in order
    return render([r for m in measured for r in held_out_lambda_ratios(bands, m)], " and ".join(sources))


def held_out_models(machines: list[MachineResults]) -> str:
    """The held-out models' bands on the other GPU type, split from counts and by their CPU traces
    (benchmarks/heldout_trace_split.py, a script: loaded from its file)."""
    script = _script("heldout_trace_split")
    root = _by(machines, SOURCE).folder.parent
    pairs = [(load_machine(root / a), load_machine(root / b)) for a, b in script.HELD_OUT]
    table = band_table_for(machines)
    rows = []
    for label, checks, _ in script.held_out_checks(table, pairs, script.load_traces(root / script.HELD_OUT_TRACES)):
        if "as predicted" in label:
            continue
        groups = [("all five", checks)] + [(w, [c for c in checks if c.residual.group == w])
                                          for w in sorted({c.residual.group for c in checks})]
        for name, group in groups:
            inside = sum(c.inside for c in group)
            half = statistics.median(c.half_width for c in group)
            rows.append([label.split(" (")[0], name, str(len(group)), str(inside), f"{inside / len(group):.1%}",
                         f"±{half:.1%}"])
    return _table(["split", "models", "truths", "inside", "coverage", "median half-width"], rows)


def compiled_bands(machines: list[MachineResults]) -> str:
    """Every compiled configuration timed again on a lent GPU, predicted from the other GPU type with the compiled
    band and the eager band beside it (benchmarks/compiled_bands.py)."""
    script = _script("compiled_bands")
    return script.markdown(script.evaluate(machines))


def below_roof_candidates(machines: list[MachineResults]) -> str:
    """Each candidate model of the below-roof part on the published rows and the H100 ↔ H200 pair
    (benchmarks/below_roof_candidates.py, a script: loaded from its file)."""
    return _script("below_roof_candidates").render_candidates(machines)


def below_roof_families(machines: list[MachineResults]) -> str:
    """What each kernel family's below-roof time scales with, from the H100's and the H200's profiles of the same
    configurations (benchmarks/below_roof_families.py, a script: loaded from its file)."""
    return _script("below_roof_families").render(_by(machines, SOURCE).folder.parent)


def accuracy_repeatability(machines: list[MachineResults]) -> str:
    """The configurations each of the pair measured twice, and which misses one measurement cannot check."""
    pair = [_by(machines, SOURCE), _by(machines, TARGET)]
    return render_repeatability(all_repeat_pairs(pair), iter_accuracy_tables(pair))


def host_noise(machines: list[MachineResults]) -> str:
    """benchmarks/host_noise.py's runs (results/<machine>/diagnostics/host-noise.json): each host-bound step's
    1-second rounds, the main thread's CPU time over its wall time while issuing, and the dispatch benchmark
    repeated."""
    rows = []
    for m in machines:
        path = m.folder / "diagnostics" / "host-noise.json"
        if not path.is_file():
            continue
        run = json.loads(path.read_text(encoding="utf-8"))
        for case in run["cases"]:
            rounds = [r for c in case["conditions"].values() for r in c]
            steps = [r["step_ms"] for r in rounds]
            by_condition = {name: statistics.median(r["step_ms"] for r in c) for name, c in case["conditions"].items()}
            rows.append([m.machine, f"{case['workload']} {case['precision']} b{case['batch']}", str(len(rounds)),
                         f"{min(steps):.2f}–{max(steps):.2f} ms (median {statistics.median(steps):.2f})",
                         f"{min(by_condition.values()):.2f}–{max(by_condition.values()):.2f} ms",
                         f"{statistics.median(r['thread_cpu_over_wall'] for r in rounds):.2f}",
                         str(sum(r["steal_ticks"] for r in rounds)),
                         f"{sum(r['throttled_ms'] or 0 for r in rounds):.0f} ms"])
        kernel = [d["per_kernel_us"] for d in run["dispatch"] if d["per_kernel_us"]]
        rows.append([m.machine, "dispatch benchmark (µs per kernel)", str(len(kernel)),
                     f"{min(kernel):.1f}–{max(kernel):.1f} µs (median {statistics.median(kernel):.1f})",
                     "–", "–", "–", "–"])
    return _table(["machine", "step", "rounds", "1-s rounds: step", "median per condition", "thread CPU / wall",
                   "steal ticks", "cgroup throttled"], rows)


RECOMMENDED_CHECK = Path("diagnostics") / "recommended-check-2026-11-27"
# Each file is one device call; calls 1-2 ran on one lent H100, every later file on a machine lent afresh
LENDS = {"lend 1": ("recommended-h100.json",), "lends 2-3": ("carry-h100.json", "recommended-h100-after.json"),
         "lend 4": ("recommended-h100-second.json",), "lend 5": ("recommended-h100-knee.json",)}


def recommended_check(machines: list[MachineResults]) -> str:
    """benchmarks/recommended_check.py's runs: the plan's answers timed on the H100 at the settings recommended,
    before and after the rule that a trial's gain is not carried to a batch it was not timed at."""
    check = _script("recommended_check")
    folder = _by(machines, SOURCE).folder / RECOMMENDED_CHECK
    timed = {lend: check.timings([folder / f for f in files]) for lend, files in LENDS.items()}
    before = check.compare(json.loads((folder / "configs-before.json").read_text())["rows"], timed["lend 1"])
    after_rows = json.loads((folder / "configs-after.json").read_text())["rows"]
    # the answers' configurations: each timed once on lend 1, 2, 3 or 5 (whichever first ran it; lend 5 the answers
    # the trials at the knee brought), and again on lend 4 where lend 4 ran it
    earlier = {**timed["lend 1"], **timed["lends 2-3"], **timed["lend 5"]}
    after = check.compare(after_rows, earlier, timed["lend 4"])
    # the H200's: one lend of an H200 (cut by its time limit: the configurations it reached, in the file's order)
    h200 = check.timings([_by(machines, TARGET).folder / RECOMMENDED_CHECK / "recommended-h200.json"])
    on_h200 = check.compare([r for r in after_rows if r["gpu"] == "H200 SXM"], h200)
    # later H200 lends, each timing the configurations its own file lists: the H200 plan's answers after its trials
    # at the knee (lend 8), then what lend 6 did not reach (lend 9)
    h200_folder = _by(machines, TARGET).folder / RECOMMENDED_CHECK
    on_h200_knee, on_h200_rest = (
        check.compare(json.loads((h200_folder / f"configs-h200-{name}.json").read_text())["rows"],
                      check.timings([h200_folder / f"recommended-h200-{name}.json"])) for name in ("knee", "rest"))
    return ("**Before**: the plan's answers that carried a trial's gain to another batch, timed on lend 1.\n\n"
            + check.markdown([r for r in before if r["how"] == "carried"], ["lend 1"])
            + "\n**After**: every answer a configuration timed at the batch recommended, each timed on one of lends "
            "1-3 or 5 and again on lend 4 where it was an answer then.\n\n"
            + check.markdown(after, ["lends 1-3, 5", "lend 4"])
            + "\n**On an H200** (lend 6, results/h200/diagnostics/recommended-check-2026-11-27/): the answers of both "
            "plans there, as far as one call reached.\n\n" + check.markdown(on_h200, ["lend 6"])
            + "\n**The H200's answers after its own trials at the knee** (lend 8, another H200 than the one that "
            "collected them): the ten that changed.\n\n" + check.markdown(on_h200_knee, ["lend 8"])
            + "\n**The answers lend 6 did not reach** (lend 9, another H200): the H200 plan's other four and the H100 "
            "plan's two compiled predictions there.\n\n" + check.markdown(on_h200_rest, ["lend 9"]))


def accuracy_crossarch(machines: list[MachineResults]) -> str:
    """Every published GPU predicted from the H100's own measurement, against the published ratio."""
    return render_crosscheck(build_crosscheck(_by(machines, SOURCE)))


def accuracy_dle(machines: list[MachineResults]) -> str:
    """DeepLearningExamples' A100 and V100 rows predicted from the H100, as ratios between the table's own rows; from
    the H200 too where it has points timed in DLE's configuration (benchmarks/gpu_dle_points.sh ran on an H200). The
    tables not scored are listed once (a second source lists them again only where its list differs). Then the new
    models' DLE rows, predicted from their own collections (NEW_MODELS), which neither the model nor the bands saw; and
    the held-out families' (HELD_OUT_DLE), each from the collection that measured it."""
    first = build_pair_check(_by(machines, SOURCE), _reference_pairs())
    text = render_pair_check(first)
    target = _by(machines, TARGET)
    if (target.folder / DLE_POINTS).is_dir():
        second = build_pair_check(target, _reference_pairs())
        again = first is None or second is None or second.listed != first.listed
        text += "\n" + render_pair_check(second, listed=again)
    bands = band_table_for(machines)
    return text + _held_out_dle(machines, bands) + _held_out_families_dle(machines, bands)


def _held_out_dle(machines: list[MachineResults], bands: BandTable) -> str:
    """The new models' DLE ratios from their own collections, each against the range its two bands give it."""
    folders = _new_model_folders(machines)
    if not folders:
        return ""
    shown = ", ".join(f"`results/{name}/{NEW_MODELS[name]}/`" for name in folders)
    judged = held_out_ratio_checks(bands, _new_models(machines))
    return (f"\n**Held-out models** ({shown}: EfficientNet-B0 and ResNeXt-101 32x4d, collected after every choice of "
            "the model and its bands; mixed precision from the bf16 point where a collection has no fp16 one, on both "
            "GPUs). Each ratio against the range its two bands give it (the bands built from results/):\n"
            + render_held_out(judged))


def _held_out_families_dle(machines: list[MachineResults], bands: BandTable) -> str:
    """The held-out families' DLE ratios from their own collections (HELD_OUT_DLE), and those not measured yet."""
    held = _held_out_families(machines, bands)
    folders = dict.fromkeys(f"`results/{machine}/{folder}/`" for machine, folder in HELD_OUT_DLE.values()
                            if (_by(machines, machine).folder / folder).is_dir())
    return (f"\n**Held-out families** ({', '.join(folders) or 'no collection committed yet'}: "
            f"{', '.join(sorted(HELD_OUT_DLE))}, examples/ written and their trace-only predictions frozen before a "
            "GPU ran them). Each ratio from the family's own collection, against the range its two bands give it (the "
            "bands built from results/, without the family):\n"
            + render_held_out(held.judged, "the held-out families", held.not_measured))


# ── several GPUs, input pipeline ────────────────────────────────────────────────────────────────

def collectives(machines: list[MachineResults]) -> str:
    """Bus bandwidth at 1 GiB and latency at 8 KiB, per operation and machine (its nodes where it spanned several)."""
    df = machines_frame(machines).query("collector == 'collectives' and status == 'ok'")
    busbw = df.query("metric == 'busbw_bytes_per_s' and batch == 2**30").pivot_table(
        index="op", columns="machine", values="value")
    latency = df.query("metric == 'latency_s' and batch == 8192").pivot_table(
        index="op", columns="machine", values="value")
    rows = [[f"`{op}`"] + [f"{busbw.loc[op, m] / 1e9:.3g} GB/s, {latency.loc[op, m] * 1e6:.1f} µs"
                           for m in busbw.columns] for op in busbw.index]
    nodes = df.groupby("machine")["nodes"].max()
    where = {m: f" ({nodes[m]} nodes)" if nodes.get(m, 1) > 1 else "" for m in busbw.columns}
    return _table(["operation (fp32)"] + [f"`{m}`{where[m]}: busbw at 1 GiB, latency at 8 KiB" for m in busbw.columns],
                  rows)


def ddp(machines: list[MachineResults]) -> str:
    """DDP step and scaling efficiency per machine, workload and GPU count (nodes × GPUs where it spanned several)."""
    df = machines_frame(machines).query("collector == 'ddp' and status == 'ok' and rank.isna()")
    table = df.pivot_table(index=["machine", "workload", "gpu_count"], columns="metric", values="value").reset_index()
    table["gpus"] = table["gpu_count"].astype(int)
    nodes, world = df.groupby("machine")["nodes"].max(), table.groupby("machine")["gpus"].max()
    rows = [[f"`{r.machine}`", f"`{r.workload}`", _gpus_cell(r.gpus, int(nodes.get(r.machine, 1)), world[r.machine]),
             f"{r.step_s * 1e3:.1f} ms", f"{r.throughput_per_s:.0f} samples/s", f"{r.scaling_efficiency:.3f}"]
            for r in table.sort_values(["machine", "workload", "gpus"]).itertuples()]
    return _table(["machine", "workload", "GPUs", "step (slowest rank)", "throughput, all GPUs", "efficiency"], rows)


def _gpus_cell(gpus: int, nodes: int, world: int) -> str:
    """'2 (2 nodes × 1)' for a point whose ranks spanned nodes (ranks fill node 0 first, `world` ranks in all), else
    '2'."""
    per = world // nodes
    return f"{gpus} ({-(-gpus // per)} nodes × {per})" if nodes > 1 and gpus > per else str(gpus)


def dataloader(machines: list[MachineResults]) -> str:
    """The best samples/s delivered (over prefetch and pinning settings) per worker count and machine."""
    df = machines_frame(machines).query("collector == 'dataloader' and metric == 'throughput_per_s' and status == 'ok'")
    table = df[df["epoch"].isna()].pivot_table(index="workers", columns="machine", values="value", aggfunc="max")
    rows = [[str(w)] + ["–" if pd.isna(v) else f"{v:.0f} img/s" for v in table.loc[w]] for w in table.index]
    return _table(["workers"] + [f"`{m}`: best samples/s delivered" for m in table.columns], rows)


# ── the README's screenshots ────────────────────────────────────────────────────────────────────

def screenshot_figures(machines: list[MachineResults]) -> dict:
    """What the H100 report's first screen shows (tests/screenshots.py renders it): per workload its bound,
    throughput to expect, settings and picked instances, as the report words them. docs/screenshots.json
    records this beside the PNGs; `python docs/generate.py --check` compares it with the report of now, so a
    stale screenshot fails without comparing pixels."""
    from planner.render.words import format_hours, format_usd, pick_settings, rate_range, settings_short
    from planner.report.decision import DecisionSection
    from planner.report.frame import build_report_for

    report = build_report_for(_by(machines, SOURCE).folder, None)
    blocks = [b for s in report.sections if isinstance(s, DecisionSection) for b in s.blocks]
    return {"report": f"results/{SOURCE}", "workloads": [{
        "workload": b.workload, "bound": b.bound, "settings": settings_short(b.answer.settings) if b.answer else None,
        "throughput": (f"{rate_range(b.answer.expected)} {b.unit}/s" if b.answer and b.answer.expected else None),
        "instances": [f"{p.role}: {p.instance} ({pick_settings(p.row)}), {format_hours(p.row.hours)}, "
                      f"{format_usd(p.row.cost_usd)}" for p in b.picks],
    } for b in blocks]}


def accuracy_scaling(machines: list[MachineResults]) -> str:
    """The intra-node scaling model against every published multi-GPU row, by path, GPU and model."""
    runs = load_link_runs(machines)
    checks = check_published_scaling(runs)
    df = pd.DataFrame([{"path": c.row.interconnect, "gpu": c.row.gpu, "system": c.row.system, "model": c.row.model,
                        "precision": c.row.precision, "gpus": c.row.gpus, "published": c.published,
                        "predicted": c.predicted, "error": abs(c.error), "assumed": abs(c.assumed_error),
                        "low": c.low_out, "covered": c.covered} for c in checks])
    slow, total = slow_host_bandwidths(checks), summarize_scaling(checks)
    lines = [f"**Intra-node scaling, {total.rows} published rows** (the model of planner/scaling/intra_node.py, from "
             f"{' and '.join(r.machine for r in runs.values())}, at each published host's own 1-GPU step): "
             f"median |error| {total.median_abs_error:.1%}, largest {total.largest_abs_error:.1%}; the per-doubling "
             f"factors it replaced: median {total.assumed_median_abs_error:.1%}, largest "
             f"{total.assumed_largest_abs_error:.1%}. Band [a host at the 10th percentile of published sync "
             "bandwidth, 1.0]: " + ", ".join(f"{p} {b / 1e9:.2g} GB/s" for p, b in sorted(slow.items()))
             + f"; coverage, each system judged by the others' rows: {total.covered}/{total.judged} = "
             f"{total.covered / total.judged:.1%}. Error = predicted ÷ published efficiency − 1.", ""]
    groups = [("path", "path"), ("GPU, GPUs", ["gpu", "gpus"]), ("model", "model")]
    rows = []
    for label, key in groups:
        for name, g in df.groupby(key):
            name = f"{name[0]} × {name[1]}" if isinstance(name, tuple) else name
            rows.append([f"{label}: {name}", str(len(g)), f"{g.error.median():.1%}", f"{g.error.max():.1%}",
                         f"{g.published.min():.2f}–{g.published.max():.2f}",
                         f"{int(g.covered.sum())}/{int(g.covered.notna().sum())}"])
    lines.append(_table(["by", "rows", "median \\|error\\|", "largest", "published efficiency", "in band"], rows))
    return "\n".join(lines)


def held_out_timm(machines: list[MachineResults]) -> str:
    """timm's RTX 3090 training tables (published_throughput.json `model_tables`), each model predicted from our H200
    and H100 collections of it, absolute and as the ratio to ResNet-50's row (planner/check/model_tables.py); the
    trace-only scoring needs a plan of the CPU traces (benchmarks/timm_rtx3090.py --plan)."""
    root = _by(machines, SOURCE).folder.parent
    checks = measured_checks(band_table_for(machines), load_model_tables(), root)
    return "\n".join(render_timm([c for c in checks if c.source == source], f"timm RTX 3090 from the {source}")
                     for source in dict.fromkeys(c.source for c in checks))
