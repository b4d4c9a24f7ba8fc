"""The plan as text for a terminal: each target's capacity and recommendations, then the ranking."""

from __future__ import annotations

from planner.model.plan import Plan


def render_plan_text(plan: Plan) -> str:
    lines = [f"Plan from {plan.machine} ({plan.source_gpu.name}, measured)"]
    for t in plan.targets:
        head = "measured here" if t.is_source else "predicted"
        lines += ["", f"== {t.name} ({t.gpu_count} × {t.gpu.name}, {head})"]
        for c in t.capacity:
            allocator = " with expandable segments" if c.allocator == "expandable_segments" else ""
            lines.append(f"   max batch {c.workload:<13} {c.precision:<5} {c.max_batch:>9}   "
                         f"(recommended ≤ {c.safe_batch}){allocator}")
        for r in t.recommendations:
            lines.append(f"   {r.workload:<13} {r.setting} = {r.value}: {r.reason}")
    if plan.job:
        ok = [r for r in plan.ranking if r.status == "ok"]
        lines += ["", f"== Instances for '{plan.job.spec}' ({len(ok)} can run it; * on the time/cost Pareto front)"]
        for r in plan.ranking:
            if r.status == "ok":
                lines.append(f" {'*' if r.pareto else ' '} {r.instance:<26} {r.gpu_count} × {r.gpu:<16} "
                             f"{r.hours:8.1f} h  ${r.cost_usd:10,.0f}   {r.reason}")
            else:
                lines.append(f"   {r.instance:<26} {r.status}: {r.reason}")
    return "\n".join(lines)
