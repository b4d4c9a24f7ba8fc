"""Where a collection's time went: each document's collector time, and each workload's stages (workloads collector 7
records them) with their seconds, the boundary's bracket and the points timed. benchmarks/gpu_new_models.sh prints it
after its standard collections; docs/method.md quotes it.

Standard library only (the bare GPU host has no pandas); reads the documents as they are, a stopped collection's
too. Usage: python3 benchmarks/collection_stages.py FOLDER [--json FILE]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load(path: Path) -> dict:
    return json.loads(path.read_text())["payload"]


def workload_lines(name: str, p: dict) -> list[str]:
    stages = p.get("stages") or []
    lines = [f"{name}: {p['parameters'] / 1e6:.1f} M parameters, {p['elapsed_s']:.1f} s in the workloads collector, "
             f"{'complete' if p['complete'] else 'NOT complete'}, {len(p['points'])} points"]
    for s in stages:
        why = f" ({s['reason']})" if s.get("reason") else ""
        lines.append(f"   {s['name']:<11} {s['status']:<8} {s['seconds']:7.1f} s{why}")
    for b in p["boundaries"]:
        hi = b.get("first_oom_batch")
        width = f", ±{(hi - b['max_batch']) / b['max_batch']:.1%}" if hi and b.get("max_batch") else ""
        lines.append(f"   boundary {b['precision']} {b['allocator']}: {b['status']} max batch {b.get('max_batch')}, "
                     f"first OOM {hi}{width} {b.get('reason') or ''}".rstrip())
    probes = [x for x in p["points"] if x["sweep"] == "probe"]
    if probes:
        lines.append(f"   probes: {len(probes)}, {sum(x.get('wall_s') or 0 for x in probes):.1f} s")
    return lines


def summary(folder: Path) -> tuple[list[str], dict]:
    lines, data = [], {}
    for path in sorted(folder.glob("*.json")):
        p = load(path)
        data[path.stem] = {"elapsed_s": p.get("elapsed_s"), "stages": p.get("stages")}
        if path.stem.startswith("workload-"):
            lines += workload_lines(path.stem, p)
        elif p.get("elapsed_s") is not None:
            lines.append(f"{path.stem}: {p['elapsed_s']:.1f} s")
    return lines, data


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    lines, data = summary(Path(argv[0]))
    print("\n".join(lines))
    if len(argv) == 3 and argv[1] == "--json":
        Path(argv[2]).write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
