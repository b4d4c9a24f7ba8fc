"""The plan as text for a terminal, answer first, on one screen.

Default: which machines the plan read; one line per workload on the measured GPU (settings → expected range,
bound); the notes those lines carry, each said once; the job's picks (the asked job, else resnet50's default job),
each with what the plan predicts on its own GPU. `--verbose` adds every reason and figure: per workload the answer's
basis, bound and loader, one line per other target; the published check; the capacity table; the whole ranking;
the node ranking; every recommendation and preset (`render_plan_detail`).

Every line fits `width` (the CLI passes the terminal's, planner/render/fit.py). Every value is the plan's, worded
by planner/render/words.py as the report and the site word it.
"""

from __future__ import annotations

from planner.plan.answer import LOADER_DEFAULT, Note, WorkloadAnswer, build_answers
from planner.plan.default_jobs import JobRanking
from planner.plan.plan import Plan
from planner.plan.untimed import untimed_line
from planner.rank.ranking import UNCHECKED_MARK, UNCHECKED_WORDS, RankedInstance, stand_in_words
from planner.render.fit import DEFAULT_WIDTH, render_table, wrap, wrap_all
from planner.render.node_table import ok_rows, render_node_text
from planner.render.plan_tables import render_capacity_table, render_ranking_table
from planner.render.words import (
    DEFAULT_LOADER_MARK,
    band_words,
    bound_label,
    feed_words,
    format_hours,
    format_usd,
    pick_settings,
    range_words,
    rate_range,
    settings_short,
    settings_words,
    short_count,
)
from planner.units import format_count, short_rate

DEFAULT_TOP = 15
NODE_TOP = 5  # multi-node instances shown across node counts, cheapest on one node first
SETTINGS_KEY = ("settings: precision, batch, compile/eager, cl channels_last, exp expandable segments, "
                "loader workers; bound: memory = memory-bandwidth")


def render_plan_text(plan: Plan, *, verbose: bool = False, top: int = DEFAULT_TOP, width: int = DEFAULT_WIDTH) -> str:
    return "\n".join(wrap_all(render_plan_lines(plan, verbose, top, width), width))


def render_plan_lines(plan: Plan, verbose: bool, top: int, width: int) -> list[str]:
    """The plan's lines, tables already fitted to `width`; render_plan_text wraps what is still wider."""
    answers = build_answers(plan)
    mine = [a for a in answers if a.measured and a.gpu_count == 1]
    lines = [f"Plan for {plan.machine}: {source_words(plan)}", *machines_used_lines(plan, width), ""]
    lines += [f"The answer on {plan.source_gpu.name}{'' if verbose else ' (--verbose: every reason and figure)'}:",
              *answer_table(mine, width)]
    lines += wrap(SETTINGS_KEY, width, "", "  ")
    lines += note_lines(mine, width)
    ranking = plan.jobs.get(plan.job.workload) if plan.job else None
    if ranking is not None:
        lines += ["", *picks_lines(plan, ranking, width, verbose)]
    if plan.trace:
        lines += ["", *wrap("What each traced step spends its predicted GPU time on (the unknown share: op kinds no "
                            "profile showed, timed with their family's figures or pooled ones):", width, "", "  "),
                  *(line for t in plan.trace for line in wrap(t.words, width, "  ", "    "))]
    if verbose:
        lines += verbose_lines(plan, answers, top, width)
    return lines


def source_words(plan: Plan) -> str:
    if plan.traced:
        return (f"predicted from a trace, no GPU measured ({plan.source_gpu.name} as learned from the reference "
                "workloads' profiles)")
    return f"{plan.source_gpu.name}, measured"


def machines_used_lines(plan: Plan, width: int) -> list[str]:
    others = [m for m in plan.machines_used if m != plan.machine]
    if others:
        return wrap(f"Machines read: {plan.machine}, with {', '.join(others)} (named with --with: their measured "
                    "accuracy sets the ranges, their multi-GPU runs the scaling)", width, "", "  ")
    return wrap(f"Machines read: {plan.machine} alone (--with DIR adds other machines' measurements)", width, "", "  ")


def answer_table(answers: list[WorkloadAnswer], width: int) -> list[str]:
    """One line per workload: settings → range, bound; each note the line carries marked by its number."""
    marks = note_marks(answers)
    rows = [["workload", "settings", "expect", "bound"]]
    for a in answers:
        flags = "".join(superscript(marks[n]) for n in a.notes if n in marks)
        rows.append([a.workload, settings_short(a.settings), answer_range(a) + flags, bound_short(a)])
    table = render_table(rows, set(), gap=" ")
    if max(len(line) for line in table) <= width:
        return table
    return [f"{r[0]}: {r[1]} → {r[2]}, {r[3]}" for r in rows[1:]]  # a narrow terminal: wrapped by the caller


def answer_range(a: WorkloadAnswer) -> str:
    return f"{rate_range(a.expected)} {a.expected.unit}/s" if a.expected else "no figure"


def bound_short(a: WorkloadAnswer) -> str:
    return a.expected.judgement.kind.brief if a.expected else "undetermined"


def note_marks(answers: list[WorkloadAnswer]) -> dict[Note, int]:
    """Each distinct note a line carries, numbered in order; the loader's default is marked by the * of its
    settings instead (LOADER_DEFAULT)."""
    notes = dict.fromkeys(n for a in answers for n in a.notes if n.kind != LOADER_DEFAULT)
    return {n: i for i, n in enumerate(notes, 1)}


def note_lines(answers: list[WorkloadAnswer], width: int) -> list[str]:
    """Each distinct note once: the loader's default (*), then the numbered ones."""
    loader = dict.fromkeys(n.text for a in answers for n in a.notes if n.kind == LOADER_DEFAULT)
    out = [line for text in loader for line in wrap(f"{DEFAULT_LOADER_MARK} {text}", width, "", "  ")]
    return out + [line for n, i in note_marks(answers).items() for line in wrap(f"{superscript(i)} {n.text}", width,
                                                                                   "", "  ")]


def superscript(n: int) -> str:
    """A note's mark beside a figure: ¹, ², … (one column each, so the line stays within 80)."""
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


ROLE_WORDS = {"fastest and cheapest": "both", "Pareto front": "Pareto"}   # 'both': the fastest is the cheapest


def picks_lines(plan: Plan, ranking: JobRanking, width: int, verbose: bool = False) -> list[str]:
    """The job's picks, two lines each: the instance with hours and dollars, then what it runs and feeds. A note
    prints its first sentence, whole with --verbose (and in the JSON)."""
    job = ranking.job
    how = "the job asked for" if ranking.asked else "the default job; --job SPEC ranks another"
    out = wrap(f"Where to run {job.spec} ({format_count(job.samples)} samples; {how}):", width, "", "  ")
    picks = ranking.picks
    if not picks:
        return [*out, *wrap("no catalog instance runs it: " + (ranking.rows[0].reason if ranking.rows else "none"),
                            width, "  ", "  ")]
    for role, r in picks:
        out += wrap(f"{ROLE_WORDS.get(role, role):<9} {r.instance}, {pick_gpus(r)}: {format_hours(r.hours)}, "
                    f"{format_usd(r.cost_usd)}{pick_band(r)}", width, "  ", "          ")
        out += wrap(f"runs {pick_settings(r)} at {short_rate(r.per_gpu_samples_per_s or 0)}/s per GPU"
                    f"{pick_feed(r)}", width, "            ", "  ")
    if any(role == "fastest and cheapest" for role, _ in picks):
        out += wrap("both = the fastest is also the cheapest", width, "  ", "  ")
    rows = [r for _, r in picks]
    if any(r.unchecked for r in rows):
        out += wrap(UNCHECKED_WORDS, width, "  ", "  ")
    stand_in = next((r for r in rows if r.stand_in_for), None)
    if stand_in and stand_in.stand_in_for:
        out += wrap(stand_in_words(stand_in.stand_in_for, stand_in.precision or ""), width, "  ", "  ")
    unchecked, checked = plan.ranking_notes(rows)
    notes = [note if verbose else note_head(note) for note in [*unchecked, *checked]]
    return out + [line for note in notes for line in wrap(note, width, "  ", "  ")]


def note_head(note: str) -> str:
    """A long note's first sentence, for the one-screen answer (display only: --verbose and the JSON keep it)."""
    head, _, rest = note.partition(". ")
    return f"{head} (--verbose says more)" if rest else note


def pick_gpus(r: RankedInstance) -> str:
    flag = (f" {UNCHECKED_MARK}" if r.unchecked else "") + (" ‡" if r.stand_in_for else "")
    return f"{r.gpu_count} × {r.gpu}{flag}"


def pick_band(r: RankedInstance) -> str:
    hours = band_words(r.hours_low, r.hours_high, format_hours)
    return f" ({hours})" if hours else ""


def pick_feed(r: RankedInstance) -> str:
    feed = feed_words(r)
    return "" if feed == "—" else f"; its vCPUs' loader feeds {feed}" + (" (input-bound)" if r.limited_by == "input"
                                                                        else "")


# ── --verbose ────────────────────────────────────────────────────────────────────────────────

def verbose_lines(plan: Plan, answers: list[WorkloadAnswer], top: int, width: int) -> list[str]:
    lines: list[str] = []
    for workload in dict.fromkeys(a.workload for a in answers):
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
    if plan.job is not None:
        lines += ["", *render_ranking_table(plan, top, width)]
        nodes = ok_rows(plan.node_ranking)
        if nodes:
            lines += ["", "Across nodes (the network between them from the catalog, efficiency from "
                      "planner/scaling/network.py; docs/multinode.md):", *render_node_text(nodes, NODE_TOP, width)]
    return lines + ["", *render_plan_detail(plan, width)]


def render_workload(plan: Plan, workload: str, answers: list[WorkloadAnswer]) -> list[str]:
    """The measured GPU's answer (settings; throughput and its basis; the bound; the loader), then one line
    per other target."""
    mine = [a for a in answers if a.workload == workload]
    if not mine:
        return []
    first, others = mine[0], mine[1:]
    out = ["", f"{workload} on {first.target} ({first.how}): " + settings_words(first.settings)]
    if first.expected:
        e = first.expected
        out += [f"   → {range_words(e)}: {e.basis}",
                f"   bound: {e.judgement.sentence}", f"   what helps: {e.bound_hint}"]
    out.append(f"   {'' if first.settings.loader.measured else '* '}loader: {first.loader_note}")
    if first.untimed:
        out.append(f"   {untimed_line(first.untimed)}")
    for a in others:
        where = a.target if a.target == a.gpu else f"{a.target}, {a.gpu_count} × {a.gpu}"
        how = a.how + (", per GPU" if a.gpu_count > 1 else "")
        expected = f" → {range_words(a.expected)}, {bound_label(a.expected)}" if a.expected else " → no prediction"
        mark = "" if a.validated else f" {UNCHECKED_MARK}"
        out.append(f"   on {where}{mark} ({how}): batch {format_count(a.settings.batch)}, {a.settings.precision}"
                   f"{expected}")
    answered = {a.target for a in mine}
    for t in plan.targets:
        if t.name not in answered:
            out.append(f"   on {t.name}: no answer: the batch sweep ran in bf16 and {first.settings.precision} "
                       f"is recommended; {t.gpu.name} lacks one of them or nothing measured fits it")
    return out


def render_plan_detail(plan: Plan, width: int = DEFAULT_WIDTH) -> list[str]:
    """Every figure and reason: each target's capacity (a table) and recommendations (one reason each, wrapped),
    the presets (YAML; a long comment wraps as comment lines)."""
    lines = ["== Detail: every figure and reason"]
    for t in plan.targets:
        head = "predicted from a trace" if plan.traced else "measured here" if t.is_source else "predicted"
        lines += ["", f"== {t.name} ({t.gpu_count} × {t.gpu.name}, {head})"]
        rows = [["workload", "precision", "allocator", "max batch", "recommended ≤"]]
        rows += [[c.workload, c.precision, "expandable" if c.allocator == "expandable_segments" else "default",
                  short_count(c.max_batch), short_count(c.safe_batch)] for c in t.capacity]
        if t.capacity:
            lines += ["   " + line for line in render_table(rows, {3, 4})]
        for r in t.recommendations:
            lines += wrap(f"{r.workload}: {r.setting} = {r.value}: {r.reason}", width, "   ", "    ")
        for yaml in t.presets.values():
            lines.append("")
            for line in yaml.splitlines():
                lines += wrap(line, width, "   ", "  # ") if line.startswith("#") else ["   " + line]
    return lines
