"""The generated block of docs/method.md on a new model's collection: per committed GPU run of
benchmarks/gpu_new_models.sh (results/<machine>/diagnostics/new-models-*/<run>/), each example's wall time and the
seconds of each stage its workload document records (done, skipped over the budget, or not reached)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpuplan_schema.results import MachineResults

STAGES = ("knee", "compile", "sweep", "precisions", "boundary", "main-batch", "details", "steady")
WALL = re.compile(r"^standard-(?P<example>\S+)\s+rc (?P<rc>\S+)\s+wall\s+(?P<wall>[\d.]+) s")
# What each committed run was (the README beside the runs says the same at more length)
RUN_WORDS = {
    "no-budget": "no budget (before the default); cut by the script at 200 s",
    "collect": "3-minute default budget, whose end went unheard (SIGUSR1); cut by the script at 200 s",
    "budget": "3-minute default budget (stopped from its timer thread)",
    "three-models": "3-minute default budget, 4 s kept for the exit; a stop held in torch.compile ended at 4 s",
    "after-fix": "3-minute default budget; a stop held in native code ended 3 s after the budget's end, exit 0",
    "continued": "the same 3-minute command run twice (it continues): the second run's wall, both runs' stages",
}


def collection_stages(machines: list[MachineResults]) -> str:
    rows = [row for m in machines for run in sorted(m.folder.glob("diagnostics/new-models-*/*/summary.txt"))
            for row in _rows(m.machine, run.parent)]
    if not rows:
        return "(no committed run of benchmarks/gpu_new_models.sh)\n"
    head = "| GPU | run | model | parameters | wall s (rc) | ceilings s | " + " | ".join(STAGES) + " |"
    return "\n".join([head, "|" + "---|" * (6 + len(STAGES)), *rows]) + "\n"


def _rows(machine: str, run: Path) -> list[str]:
    summary = (run / "summary.txt").read_text().splitlines()
    gpu = summary[1].split(",")[0] if len(summary) > 1 else machine
    walls = {m["example"]: (m["wall"], m["rc"]) for m in map(WALL.match, summary) if m}
    folder = run / "runs" / "new-models"
    ceilings = _elapsed(folder / "ceilings.json")
    out = []
    for example, (wall, rc) in walls.items():
        doc = _workload_doc(folder, example)
        if doc is None:
            continue
        payload = doc["payload"]
        stages = {s["name"]: s for s in payload.get("stages") or []}
        first = example == next(iter(walls))
        cells = [_stage_cell(stages.get(name)) for name in STAGES]
        out.append(f"| {gpu} | {RUN_WORDS.get(run.name, run.name)} | {payload['workload']} | "
                   f"{payload['parameters'] / 1e6:.1f} M | {_wall(wall)} ({rc}) | "
                   f"{f'{ceilings:.1f}' if first and ceilings else '(reused)'} | " + " | ".join(cells) + " |")
    return out


def _workload_doc(folder: Path, example: str) -> dict | None:
    stem = example.replace("_", "-")
    for path in sorted(folder.glob("workload-*.json")):
        if path.stem.removeprefix("workload-").startswith(stem.split("-")[0]):
            return json.loads(path.read_text())
    return None


def _elapsed(path: Path) -> float | None:
    return json.loads(path.read_text())["payload"].get("elapsed_s") if path.exists() else None


def _wall(wall: str) -> str:
    """The script's wall seconds (0.0 in the first run: the image had no `bc` to subtract with)."""
    return f"{float(wall):.1f}" if float(wall) > 0 else "not read"


def _stage_cell(stage: dict | None) -> str:
    if stage is None:
        return "—"
    return f"{stage['seconds']:.1f}" if stage["status"] == "done" else "skipped"
