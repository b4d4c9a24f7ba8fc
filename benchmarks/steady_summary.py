"""Each steadily timed point of a machine's workload documents: its sweep timing against its steady one.

    python benchmarks/steady_summary.py results/h100-80gb

Reads the JSON with the standard library only (it runs on the GPU machines too).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def ms(stat: dict | None) -> str:
    return f"{stat['median'] * 1e3:7.2f}" if stat else "      -"


def main(folder: Path) -> int:
    print(f"{'workload':18s} {'prec':5s} {'batch':>7s} {'variant':24s} {'sweep ms':>8s} {'steady':>7s} "
          f"{'q1–q3':>15s} {'issue':>7s} {'busy':>7s}")
    for path in sorted(folder.glob("workload-*.json")):
        doc = json.loads(path.read_text())
        for p in doc["payload"]["points"]:
            if not p.get("steady_rounds"):
                continue
            s = p["step_s"]
            busy = f"{p['gpu_busy_s'] * 1e3:7.2f}" if p.get("gpu_busy_s") else "      -"
            print(f"{doc['payload']['workload']:18s} {p['precision']:5s} {p['batch']:7d} {p['variant'][:24]:24s} "
                  f"{ms(p.get('quick_step_s'))} {ms(s)} {s['q1'] * 1e3:7.2f}–{s['q3'] * 1e3:7.2f} "
                  f"{ms(p.get('host_issue_s'))} {busy}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: python benchmarks/steady_summary.py RESULTS_FOLDER", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
