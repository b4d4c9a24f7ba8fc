"""The two-node emulation's check as Markdown (benchmarks/compare_two_node_emulation.py, docs/multinode.md): each
run's DDP step predicted from the other's, and each all_reduce size against the model's two-term link."""

from __future__ import annotations

from planner.scaling.transfer import SizeCheck, TransferCheck
from planner.units import format_bytes


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def render_transfer_markdown(runs: list[tuple[str, str, list[TransferCheck]]]) -> str:
    """One row per (A → B, workload): B's all-reduce, F and k fitted on A, both models' predictions."""
    lines = ["| A → B | workload | T on B ms | F on A ms | k on A | k × T: predicted ms (error) | "
             "predicted ms | measured ms | error | error from B's own compute |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for a, b, checks in runs:
        for c in checks:
            lines.append(f"| `{a}` → `{b}` | {c.workload} | {_ms(c.b.sync_s)} | {_ms(c.fixed_s)} | "
                         f"{c.exposed_fraction:.2f} | {_ms(c.k_predicted_step_s)} ({c.k_error:+.1%}) | "
                         f"{_ms(c.predicted_step_s)} | {_ms(c.measured_step_s)} | **{c.error:+.1%}** | "
                         f"{c.error_own_compute:+.1%} |")
    return "\n".join(lines) + "\n"


def _size_cells(check: SizeCheck | None) -> list[str]:
    if check is None:
        return ["–", "–", "–"]
    return [f"{check.measured_s * 1e6:,.1f} µs ({check.busbw / 1e9:.3g} GB/s)", f"{check.model_s * 1e6:,.1f} µs",
            f"{check.error:+.0%}"]


def render_sizes_markdown(runs: list[tuple[str, list[SizeCheck]]]) -> str:
    """One row per message size, three cells per run: measured (bus bandwidth), the model, its error."""
    sizes = sorted({c.size_bytes for _, checks in runs for c in checks})
    head = ["size"] + [cell for name, _ in runs for cell in (f"`{name}` measured", "model", "error")]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for size in sizes:
        cells = [c for _, checks in runs for c in _size_cells(next((x for x in checks if x.size_bytes == size), None))]
        lines.append(f"| {format_bytes(size)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
