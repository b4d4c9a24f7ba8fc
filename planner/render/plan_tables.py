"""The two tables of `gpuplan plan`'s text: capacity (workload × precision) and the instance ranking.

The ranking shows the optional fields other parts of the model add when present (error ranges
`hours_low/high`, `cost_low/high`, node counts, an 'unvalidated' GPU flag, what limits the instance),
read with getattr so that the table works with and without them. Both fit a width (planner/render/fit.py):
the capacity table splits its targets over several tables, the ranking leaves out its least important
columns (what limits, the ranges, the efficiency) and says so.
"""

from __future__ import annotations

import re
from collections import Counter

from planner.plan.plan import Capacity, Plan
from planner.rank.ranking import OK, STAND_IN_MARK, UNCHECKED_MARK, UNCHECKED_WORDS, RankedInstance, stand_in_words
from planner.render.fit import DEFAULT_WIDTH, chunk_columns, fit_table, wrap
from planner.units import format_count

BOUND = re.compile(r"(compute|memory|overhead|input|launch)[- ]bound")


def short_count(n: int | None) -> str:
    """Batches up to 6 digits whole (format_count); larger ones as 1.05M (the table stays narrow)."""
    if n is None:
        return "-"
    return format_count(n) if n < 1_000_000 else f"{n / 1e6:.3g}M"


def render_capacity_table(plan: Plan, width: int = DEFAULT_WIDTH) -> list[str]:
    """One row per workload × precision: the recommended batch, then per target the largest batch with the
    default allocator / with expandable segments (where the source measured it); the targets over several
    tables where one is wider than `width`."""
    head = ["workload", "precision", "recommended", *(t.name for t in plan.targets)]
    rows = [head]
    measured = plan.targets[0]
    keys = list(dict.fromkeys((c.workload, c.precision) for c in measured.capacity))
    for workload, precision in keys:
        cells = [_max_cell([c for c in t.capacity if (c.workload, c.precision) == (workload, precision)])
                 for t in plan.targets]
        rows.append([workload, precision, _recommended(plan, workload, precision, keys), *cells])
    title = wrap("Largest batch that fits, per target (default allocator / expandable segments; recommended = "
                 f"the {'predicted' if plan.traced else 'measured'} knee, at the recommended precision)", width)
    return [*title, *chunk_columns(rows, 3, set(range(2, len(head))), width)]


def _recommended(plan: Plan, workload: str, precision: str, keys: list[tuple[str, str]]) -> str:
    """The recommended batch on its precision's row; on the workload's first row, with its precision named,
    where that precision has no boundary of its own (sensor-cnn: fp32 recommended, bf16 searched)."""
    settings = plan.targets[0].settings.get(workload)
    if settings is None or settings.batch is None:
        return ""
    if settings.precision == precision:
        return format_count(settings.batch)
    first = next(p for w, p in keys if w == workload)
    has_row = (workload, settings.precision) in keys
    return f"{format_count(settings.batch)} ({settings.precision})" if not has_row and precision == first else ""


def _max_cell(capacity: list[Capacity]) -> str:
    default = next((c.max_batch for c in capacity if c.allocator == "default"), None)
    expandable = next((c.max_batch for c in capacity if c.allocator == "expandable_segments"), None)
    return short_count(default) + (f" / {short_count(expandable)}" if expandable is not None else "")


def _range(low: float | None, high: float | None, fmt: str) -> str:
    return f"{format(low, fmt)}–{format(high, fmt)}" if low is not None and high is not None else ""


RANKING_HEAD = ["", "instance", "GPUs", "hours", "hours range", "cost", "cost range", "eff.", "limited by"]
RANKING_RIGHT = {3, 4, 5, 6, 7}
RANKING_DROP = (8, 4, 6, 7)  # narrow: what limits first, then the ranges, then the efficiency


def ranking_row(r: RankedInstance) -> list[str]:
    flag = (f" {UNCHECKED_MARK}" if r.unchecked else "") + (f" {STAND_IN_MARK}" if r.stand_in_for else "")
    nodes = getattr(r, "nodes", None) or getattr(r, "node_count", None)
    gpus = f"{r.gpu_count} × {r.gpu}{flag}" + (f" ({nodes} nodes)" if nodes and nodes > 1 else "")
    hours = _range(getattr(r, "hours_low", None), getattr(r, "hours_high", None), ",.1f")
    cost = _range(getattr(r, "cost_low", None), getattr(r, "cost_high", None), ",.0f")
    mark = "" if r.scaling_measured or r.gpu_count == 1 else "~"   # one GPU has nothing to scale
    eff = f"{r.scaling_efficiency:.0%}{mark}" if r.scaling_efficiency else "-"
    return ["★" if r.pareto else "", r.instance, gpus, f"{r.hours:,.1f}", hours, f"${r.cost_usd:,.0f}",
            f"${cost}" if cost else "", eff, limit_of(r)]


def limit_of(r: RankedInstance) -> str:
    """What limits the instance: a field the model set, else the bound its reason names."""
    for name in ("limited_by", "limit", "bound"):
        value = getattr(r, name, None)
        if value:
            return str(value)
    found = BOUND.search(r.reason)
    return f"{found.group(1)}-bound" if found else ""


def render_ranking_table(plan: Plan, top: int, width: int = DEFAULT_WIDTH) -> list[str]:
    """The instances that run the job, cheapest first, top `top`, the Pareto front marked ★; then counts."""
    assert plan.job is not None
    ok = [r for r in plan.ranking if r.status == OK]
    shown = ok[:top]
    head = wrap(f"Instances for '{plan.job.spec}' ({format_count(plan.job.samples)} samples): {len(ok)} can run it, "
                "cheapest first; ★ = no other is both faster and cheaper", width)
    if not shown:
        return [*head, *wrap("none: " + "; ".join(sorted({r.reason for r in plan.ranking}))[:300], width, "   ")]
    lines, dropped = fit_table([RANKING_HEAD, *(ranking_row(r) for r in shown)], RANKING_RIGHT, width, RANKING_DROP,
                               "   ")
    lines = head + lines
    rest = len(ok) - len(shown)
    pareto_rest = sum(r.pareto for r in ok[top:])
    if rest:
        lines += wrap(f"… {rest} more run it ({pareto_rest} of them ★); --top {len(ok)} lists them all", width, "   ")
    cannot = Counter(r.status.replace("_", " ") for r in plan.ranking if r.status != OK)
    if cannot:
        lines += wrap("cannot run it: " + ", ".join(f"{n} {s}" for s, n in cannot.most_common()), width, "   ")
    notes = ["eff. = data-parallel efficiency (~ modelled or assumed, not measured; its range is in the hours"
             " range)"] if "eff." not in dropped else []
    if any(r.unchecked for r in shown):
        notes.append(UNCHECKED_WORDS)
    stand_in = next((r for r in shown if r.stand_in_for), None)
    if stand_in and stand_in.stand_in_for:
        notes.append(stand_in_words(stand_in.stand_in_for, stand_in.precision or ""))
    if dropped:
        notes.append(f"left out at {width} columns: {', '.join(dict.fromkeys(dropped))} (a wider terminal shows them)")
    kin = [note for notes in plan.ranking_notes(shown) for note in notes]
    return [*lines, *wrap("; ".join(notes), width, "   "), *(x for k in kin for x in wrap(k, width, "   ", "   ")),
            *(wrap(hosts, width, "   ", "   ") if (hosts := host_cpu_words(shown)) else [])]


def host_cpu_words(shown: list[RankedInstance]) -> str:
    """The host CPUs of the ★ rows shown, as their clouds document them: what a step the host sets runs on."""
    hosts = {r.instance: r.host_cpu for r in shown if r.pareto and r.host_cpu}
    if not hosts:
        return ""
    return ("host CPUs of the ★ rows (cloud documentation; none measured here, so a step the host sets carries "
            "the spread of two hosts in its range): " + "; ".join(f"{i} {c}" for i, c in hosts.items()))
