"""The ranking across node counts as Markdown (docs/multinode.md) and as terminal text (`gpuplan plan --job`):
per multi-node instance, 1, 2, 4, … nodes with efficiency, hours and dollars, and where adding nodes stops
paying."""

from __future__ import annotations

from collections.abc import Iterable

from planner.rank.nodes import NetworkInputs, NodeRow
from planner.rank.ranking import OK, STAND_IN_MARK, stand_in_words
from planner.render.fit import DEFAULT_WIDTH, wrap


def ok_rows(rows: Iterable[NodeRow], bases: Iterable[str] | None = None) -> list[NodeRow]:
    wanted = set(bases) if bases is not None else None
    return sorted((r for r in rows if r.ranked.status == OK and (wanted is None or r.base in wanted)),
                  key=lambda r: (r.base, r.nodes))


def render_assumptions(job_spec: str, inputs: NetworkInputs, fitted_on: str) -> str:
    return f"job: {job_spec}; {inputs.words(fitted_on)}"


def stand_in_mark(row: NodeRow) -> str:
    """' ‡' where the instance runs the job's stand-in precision (a bf16 job in fp16 on V100s), else ''."""
    return f" {STAND_IN_MARK}" if row.ranked.stand_in_for else ""


def stand_in_note(rows: Iterable[NodeRow]) -> str:
    """The ‡ footnote where a row shown carries the mark, else ''."""
    marked = next((r.ranked for r in rows if r.ranked.stand_in_for), None)
    return stand_in_words(marked.stand_in_for, marked.precision or "") if marked and marked.stand_in_for else ""


def render_node_markdown(rows: list[NodeRow]) -> str:
    lines = ["| instance | nodes | GPUs | network/node | efficiency | hours | cost USD | |",
             "|---|---:|---:|---|---:|---:|---:|---|"]
    for r in rows:
        mark = "adding nodes stops paying" if r.knee else ""
        lines.append(f"| {r.base}{stand_in_mark(r)} | {r.nodes} | {r.gpus_total} | {r.network} | "
                     f"{r.ranked.scaling_efficiency:.3f} | {r.ranked.hours:.1f} | {r.ranked.cost_usd:,.0f} | {mark} |")
    note = stand_in_note(rows)
    return "\n".join(lines) + "\n" + (f"\n{note}\n" if note else "")


def render_node_text(rows: list[NodeRow], top: int, width: int = DEFAULT_WIDTH) -> list[str]:
    """The `top` cheapest instances at one node, each with its node counts on one line (where `width` holds
    them; else the instance and its network, then the node counts wrapped under them)."""
    by_base: dict[str, list[NodeRow]] = {}
    for r in rows:
        by_base.setdefault(r.base, []).append(r)
    by_base = {b: rs for b, rs in by_base.items() if any(r.nodes > 1 for r in rs)}  # multi-node instances only
    bases = sorted(by_base, key=lambda b: min(r.ranked.cost_usd or 0 for r in by_base[b] if r.nodes == 1)
                   if any(r.nodes == 1 for r in by_base[b]) else float("inf"))[:top]
    out = []
    for base in bases:
        label = base + stand_in_mark(by_base[base][0])
        cells = [f"{r.nodes}×: {r.ranked.hours:.1f} h ${r.ranked.cost_usd:,.0f} ({r.ranked.scaling_efficiency:.0%})"
                 + (" ← stops paying" if r.knee else "") for r in by_base[base]]
        line = f"   {label:<26} {by_base[base][0].network:<26} " + " · ".join(cells)
        if len(line) <= width:
            out.append(line)
        else:
            whole = [c.replace(" ", "\u00a0") for c in cells]  # no break inside a node count's cell
            out += [f"   {label}  {by_base[base][0].network}", *wrap(" · ".join(whole), width, " " * 6, "")]
    note = stand_in_note(r for b in bases for r in by_base[b])
    return out + (wrap(note, width, "   ") if note else [])
