"""`gpuplan specs` as text that fits the terminal: each catalog table split into narrower tables that repeat the name
column (planner/render/fit.py's chunk_columns), the long text (sources, price notes) wrapped under the tables. The
tables themselves are the catalog's (planner/specs/listing.py); nothing here reads a catalog field of its own."""

from __future__ import annotations

from planner.render.fit import DEFAULT_WIDTH, chunk_columns, wrap
from planner.specs import load_instances
from planner.specs.listing import build_gpu_table, build_instance_table


def fit_catalog(rows: list[list[str]], width: int) -> list[str]:
    """A catalog table in `width` columns: the first column repeated, the numbers right-aligned."""
    right = {i for i in range(1, len(rows[0])) if all(_numeric(r[i]) for r in rows[1:])}
    return chunk_columns(rows, 1, right, width)


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return cell in ("-", "–", "")
    return True


def render_specs_text(*, gpus: bool, instances: bool, width: int = DEFAULT_WIDTH) -> str:
    parts: list[str] = []
    if gpus:
        table = build_gpu_table()
        sources = {row[0]: row[-1] for row in table[1:]}
        parts += fit_catalog([row[:-1] for row in table], width)
        parts += ["", "Sources (datasheet figures, dense):"]
        parts += [line for name, source in sources.items() for line in wrap(f"{name}: {source}", width, "  ", "    ")]
    if instances:
        if parts:
            parts.append("")
        parts += fit_catalog(build_instance_table(), width)
        parts += ["", *wrap("Price notes (on-demand, Linux, USD/h; `--json` gives every source URL):", width)]
        parts += [line for s in load_instances() if s.price_note
                  for line in wrap(f"{s.name}: {s.price_note}", width, "  ", "    ")]
    return "\n".join(parts) + "\n"



