"""The plan as text for a terminal, answer first.

Order: per workload, the settings to run it with on the measured GPU and what to expect (one short block),
one line per other target; with `--job`, the job's workload and then the instance ranking as a table;
then the compact capacity table (workload × precision: the largest batch with each allocator, on each
target). `--verbose` adds, after that, every figure and reason the plan holds (`render_plan_detail`).

Every line fits `width` (the CLI passes the terminal's, planner/render/fit.py): reasons wrap under a hanging
indent, tables narrow. Rates are short_rate's (10.5M), counts format_count's (1 048 576).
"""

from __future__ import annotations

from planner.plan.answer import WorkloadAnswer, build_answers
from planner.plan.plan import Plan
from planner.plan.settings import Settings
from planner.rank.ranking import UNCHECKED_MARK, UNCHECKED_WORDS
from planner.render.fit import DEFAULT_WIDTH, render_table, wrap, wrap_all
from planner.render.node_table import ok_rows, render_node_text
from planner.render.plan_tables import render_capacity_table, render_ranking_table
from planner.units import format_count, short_rate

DEFAULT_TOP = 15
PRECISION_WORDS = {"bf16": "bf16 autocast", "fp16": "fp16 autocast + GradScaler", "tf32": "tf32", "fp32": "fp32"}


NODE_TOP = 5  # multi-node instances shown across node counts, cheapest on one node first


def render_plan_text(plan: Plan, *, verbose: bool = False, top: int = DEFAULT_TOP, width: int = DEFAULT_WIDTH) -> str:
    return "\n".join(wrap_all(render_plan_lines(plan, verbose, top, width), width))


def render_plan_lines(plan: Plan, verbose: bool, top: int, width: int) -> list[str]:
    """The plan's lines, tables already fitted to `width`; render_plan_text wraps what is still wider."""
    answers = build_answers(plan)
    measured = next(t for t in plan.targets if t.is_source)
    source = f"predicted from a trace: no GPU measured; {plan.source_gpu.name} as learned from its profiles" \
        if plan.traced else f"{plan.source_gpu.name}, measured"
    lines = [f"Plan from {plan.machine} ({source}): settings first; "
             f"{'every figure follows' if verbose else '--verbose for every figure and reason'}"]
    if plan.trace:
        lines += ["", "What the traces' steps spend their predicted GPU time on:",
                  *(f"   {t.words}" for t in plan.trace)]
    order = list(measured.settings)
    job = plan.job if plan.job_asked else None  # the default jobs' rankings are the report's and the JSON's
    if not job:  # the whole answer on the first screen, whatever the number of workloads
        lines += ["", "The answer, one line per workload (the blocks below say why):",
                  *(render_summary_line(a) for a in answers if a.measured and a.workload in order)]
    if job:
        order = [w for w in order if w == job.workload] + [w for w in order if w != job.workload]
        lines += render_workload(plan, job.workload, answers)
        lines += ["", *render_ranking_table(plan, top, width)]
        nodes = ok_rows(plan.node_ranking)
        if nodes:
            lines += ["", "Across nodes (the network between them from the catalog, efficiency from "
                      "planner/scaling/network.py; docs/multinode.md):", *render_node_text(nodes, NODE_TOP, width)]
        order = order[1:] if order and order[0] == job.workload else order
    for workload in order:
        lines += render_workload(plan, workload, answers)
    predicted = list(dict.fromkeys(t.gpu.name for t in plan.targets if not t.is_source))
    checked = [plan.checked_notes[g] for g in predicted if g in plan.checked_notes]
    if checked:
        lines += ["", "How the predictions were checked against published benchmarks (docs/accuracy.md):",
                  *(f"   {words}" for words in checked)]
    if any(not t.validated for t in plan.targets):
        lines += ["", UNCHECKED_WORDS]
        lines += [f"   {words}" for words in plan.unchecked_notes_for(t.gpu.name for t in plan.targets
                                                                       if not t.validated)]
    lines += ["", *render_capacity_table(plan, width)]
    if verbose:
        lines += ["", *render_plan_detail(plan, width)]
    return lines


def render_workload(plan: Plan, workload: str, answers: list[WorkloadAnswer]) -> list[str]:
    """The measured GPU's answer (settings; throughput and its basis; the bound; the loader), then one line
    per other target."""
    mine = [a for a in answers if a.workload == workload]
    if not mine:
        return []
    first, others = mine[0], mine[1:]
    label = "predicted from the trace" if plan.traced else "measured" if first.measured else "predicted"
    out = ["", f"{workload} on {first.target} ({label}): " + settings_line(first.settings)]
    if first.expected:
        e = first.expected
        out += [f"   → {range_words(first)}: {e.basis}",
                f"   bound: {e.judgement.sentence}", f"   what helps: {e.bound_hint}"]
    out.append(f"   {'' if first.settings.loader.measured else '* '}loader: {first_sentence(first.loader_note)}")
    for a in others:
        where = a.target if a.target == a.gpu else f"{a.target}, {a.gpu_count} × {a.gpu}"
        how = ("measured" if a.measured else "predicted") + (", per GPU" if a.gpu_count > 1 else "")
        expected = f" → {range_words(a)}, {a.expected.bound_words.split(' (')[0]}" \
            if a.expected else " → no prediction"
        mark = "" if a.validated else f" {UNCHECKED_MARK}"
        out.append(f"   on {where}{mark} ({how}): batch {format_count(a.settings.batch)}{expected}")
    answered = {a.target for a in mine}
    for t in plan.targets:
        if t.name not in answered:
            out.append(f"   on {t.name}: no answer: the batch sweep ran in bf16 and {first.settings.precision} "
                       f"is recommended; {t.gpu.name} lacks one of them or nothing measured fits it")
    return out


def first_sentence(text: str, limit: int = 160) -> str:
    """A long measured reason in one line: its first sentence (--verbose prints it whole)."""
    head = text.split(". ")[0]
    if len(head) <= limit:
        return head
    # cut at the last clause that fits, never inside a figure: "…: its best, 3873 images…" says nothing
    clause = max(head.rfind(sep, 0, limit - 1) for sep in (": ", "; "))
    cut = clause if clause > 0 else head.rfind(", ", 0, limit - 1)
    return (head[:cut] if cut > 0 else head[:limit - 1]) + " …"


def render_summary_line(a: WorkloadAnswer) -> str:
    expected = f" → {range_words(a)}, {a.expected.bound_words.split(' (')[0]}" if a.expected else ""
    return f"   {a.workload}: {settings_line(a.settings)}{expected}"


def settings_line(s: Settings) -> str:
    parts = [f"batch {format_count(s.batch)}" if s.batch else "batch unmeasured",
             PRECISION_WORDS.get(s.precision, s.precision)]
    if s.torch_compile and s.compile_gain_here is None and s.compile_gain is not None:  # the bf16 gain, on fp16
        parts.append(f"torch.compile (timed in {s.compile_precision}: {s.compile_gain:+.0%} there)")
    elif s.torch_compile:
        parts.append(f"torch.compile ({s.compile_gain:+.0%})" if s.compile_gain is not None else "torch.compile")
    elif s.compile_gain_here is not None:
        parts.append(f"eager (compile measured {s.compile_gain_here:+.0%})")
    elif s.compile_gain is not None:  # timed in the sweep's precision only: its gain is over that one's eager
        parts.append(f"eager (compile timed in {s.compile_precision} only: {s.compile_gain:+.0%} there)")
    if s.channels_last:
        parts.append("channels_last")
    if s.allocator:
        parts.append("expandable segments" if "expandable" in s.allocator else s.allocator)
    loader = s.loader
    parts.append(f"{loader.workers} workers{'' if loader.measured else '*'}, prefetch "
                 f"{loader.prefetch_factor}{', pinned' if loader.pin_memory else ''}")
    return " · ".join(parts)


def range_words(a: WorkloadAnswer) -> str:
    """'1685–1959 images/s', and why where the range is wide: '(±50%: no comparable measurement)'."""
    e = a.expected
    words = f"{throughput_range(a)} {e.unit}/s" if e else "?"
    return f"{words} ({e.wide_note})" if e and e.wide_note else words


def throughput_range(a: WorkloadAnswer) -> str:
    e = a.expected
    if e is None:
        return "?"
    low, high = short_rate(e.low_per_s), short_rate(e.high_per_s)
    return low if low == high else f"{low}–{high}"


def render_plan_detail(plan: Plan, width: int = DEFAULT_WIDTH) -> list[str]:
    """Every figure and reason: each target's capacity (a table) and recommendations (one reason each, wrapped),
    the presets (YAML; a long comment wraps as comment lines)."""
    lines = ["== Detail: every figure and reason"]
    for t in plan.targets:
        head = "measured here" if t.is_source else "predicted"
        lines += ["", f"== {t.name} ({t.gpu_count} × {t.gpu.name}, {head})"]
        rows = [["workload", "precision", "allocator", "max batch", "recommended ≤"]]
        rows += [[c.workload, c.precision, "expandable" if c.allocator == "expandable_segments" else "default",
                  format_count(c.max_batch), format_count(c.safe_batch)] for c in t.capacity]
        if t.capacity:
            lines += ["   " + line for line in render_table(rows, {3, 4})]
        for r in t.recommendations:
            lines += wrap(f"{r.workload}: {r.setting} = {r.value}: {r.reason}", width, "   ", "    ")
        for yaml in t.presets.values():
            lines.append("")
            for line in yaml.splitlines():
                lines += wrap(line, width, "   ", "  # ") if line.startswith("#") else ["   " + line]
    return lines
