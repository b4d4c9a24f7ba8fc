"""Summary of one machine's collection: host and GPU shares per timed point, the dispatch speed, and the
roofline's time by class at each profiled batch (benchmarks/gpu_run.sh prints it after its steps).

Standard library only (it runs on the bare GPU host, which has no pandas): reads the JSON documents as
they are, so it also shows what an interrupted step left. Usage: python3 benchmarks/collection_summary.py FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.2f}"


def median(stat: dict | None) -> float | None:
    return None if stat is None else stat["median"]


def dispatch_lines(folder: Path) -> list[str]:
    path = folder / "ceilings.json"
    if not path.is_file():
        return ["ceilings: no document"]
    d = json.loads(path.read_text())["payload"].get("dispatch")
    if d is None:
        return ["ceilings: no dispatch figures (collector before version 3)"]
    step, kernels = median(d["linear_step_issue_s"]), d.get("linear_step_kernels")
    per_kernel = f"{step / kernels * 1e6:.1f} µs per kernel ({kernels} kernels)" if kernels else "kernels unknown"
    return [f"dispatch: {median(d['op_issue_s']) * 1e6:.2f} µs per tiny add issued; Linear fwd+bwd "
            f"{step * 1e6:.0f} µs to issue, {per_kernel}; CPU {d.get('cpu_model')} at {d.get('cpu_mhz')} MHz "
            f"(max {d.get('cpu_max_mhz')})"]


def workload_lines(path: Path) -> list[str]:
    p = json.loads(path.read_text())["payload"]
    lines = [f"{p['workload']} ({p['profile']}, complete={p['complete']}, {p['elapsed_s']:.0f} s)",
             f"  {'sweep':<8} {'prec':<5} {'batch':>7} {'variant':<20} {'step ms':>9} {'host ms':>9} "
             f"{'gpu ms':>9} {'syncs':>5} {'host/step':>9}"]
    for q in p["points"]:
        if q["sweep"] == "probe" or q["status"] != "ok":
            continue
        step, host = median(q["step_s"]), median(q.get("host_issue_s"))
        share = f"{host / step:.2f}" if host and step else "-"
        lines.append(f"  {q['sweep']:<8} {q['precision']:<5} {q['batch']:>7} {q['variant'][:20]:<20} {ms(step):>9} "
                     f"{ms(host):>9} {ms(q.get('gpu_busy_s')):>9} {str(q.get('step_syncs', '-')):>5} {share:>9}")
    return lines


def roofline_lines(path: Path) -> list[str]:
    p = json.loads(path.read_text())["payload"]
    main = {k: p.get(k) for k in ("batch", "status", "variant", "step_s", "ops", "unattributed_s", "reason")}
    lines = [f"roofline {p['workload']} ({p['precision']})"]
    for b in sorted([main, *p.get("batches", [])], key=lambda b: b["batch"]):
        if b["status"] != "ok":
            lines.append(f"  batch {b['batch']:>7}: {b['status']} {b.get('reason') or ''}")
            continue
        classes: dict[str, float] = {}
        for op in b["ops"]:
            classes[op["op_class"]] = classes.get(op["op_class"], 0.0) + op["time_s"]["median"]
        total = sum(classes.values()) + (b.get("unattributed_s") or 0.0)
        parts = ", ".join(f"{c} {t * 1e3:.2f} ms" for c, t in sorted(classes.items(), key=lambda kv: -kv[1]))
        lines.append(f"  batch {b['batch']:>7} ({b.get('variant') or 'default'}): step {ms(median(b['step_s']))} ms, "
                     f"kernels {total * 1e3:.2f} ms: {parts}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python3 benchmarks/collection_summary.py RESULTS_FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    lines = dispatch_lines(folder)
    for path in sorted(folder.glob("workload-*.json")):
        lines += workload_lines(path)
    for path in sorted(folder.glob("roofline-*.json")):
        lines += roofline_lines(path)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
