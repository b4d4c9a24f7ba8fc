"""Ctrl-C in each stage of a real collection, timed: how long after a real SIGINT the collector has ended, with
which exit status, what it kept and whether any process it started is left. The GPU run of tests/test_stop.py
(issue 38's acceptance: within 5 s in every stage), on documents a complete collection left.

    python benchmarks/stop_check.py --folder runs/MACHINE --workload examples/efficientnet_b0.py:build \
        --work /tmp/stops [--stage sweep|compile|boundary|profile|torchrun]... [--out FILE.json]

Each stage starts from a copy of FOLDER with that stage's measurements taken out, so the resumed collection goes
straight to it (the points before it are reused, not measured again): `sweep` from an empty folder (ceilings
kept), `compile` without the compiled points, `boundary` without the boundary and its probes, `profile` without the
roofline documents, `torchrun` the collectives collector on 2 gloo ranks. The signal goes to the collector's pid
alone (`kill -INT`: the collector must end its children itself), and, for the boundary, also to its process group
as a terminal's Ctrl-C does. Standard library only, besides this checkout's collectors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collectors.core.children import descendants  # noqa: E402
from gpuplan_schema.schema import build_document, load_document, save_document  # noqa: E402

STAGES = ("sweep", "compile", "boundary", "profile", "torchrun")
WAIT_S = 150.0   # for the stage to begin
STOP_S = 5.0     # the acceptance


@dataclass
class Check:
    stage: str
    how: str                       # "pid" or "group"
    rc: int | None = None
    exit_s: float | None = None    # from the SIGINT to the process's end
    children: int = 0              # processes it had started when the signal came
    left: int = 0                  # of those, still running after
    points_before: int = 0         # the workload document's points when the signal came
    points_after: int = 0          # … and after the stop (nothing finished is lost: after >= before)
    ok: bool = False
    note: str = ""


def workload_doc(folder: Path) -> Path | None:
    return next(iter(sorted(folder.glob("workload-*.json"))), None)


def points(folder: Path) -> int:
    path = workload_doc(folder)
    return len(load_document(path).payload.points) if path else 0


def prepare(stage: str, source: Path, folder: Path) -> None:
    """FOLDER: a copy of SOURCE with `stage`'s measurements taken out."""
    shutil.rmtree(folder, ignore_errors=True)
    if stage in ("sweep", "torchrun"):
        folder.mkdir(parents=True)
        for name in ("environment.json", "ceilings.json"):
            if (source / name).exists():
                shutil.copy(source / name, folder / name)
        return
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("diagnostics", ".*"))
    if stage == "profile":
        for path in folder.glob("roofline-*.json"):
            path.unlink()
        return
    path = workload_doc(folder)
    doc = load_document(path)
    p = doc.payload
    if stage == "compile":
        keep, kept_stages = [x for x in p.points if "compile" not in x.variant], ("knee",)
        payload = replace(p, points=keep, boundaries=p.boundaries)
    else:  # boundary
        keep, kept_stages = [x for x in p.points if x.sweep != "probe"], ("knee", "compile", "sweep", "precisions")
        payload = replace(p, points=keep, boundaries=[])
    payload = replace(payload, complete=False, stages=[s for s in p.stages or [] if s.name in kept_stages])
    save_document(build_document(doc.kind, doc.collector.name, doc.collector.version, doc.machine, payload), path)


def command(stage: str, root: Path, machine: str, spec: str) -> list[str]:
    base = [sys.executable, "-m", "collectors", "--out", str(root), "--machine", machine, "--profile", "standard"]
    if stage == "torchrun":
        return base + ["--only", "collectives", "--dist-backend", "gloo", "--gpus", "2"]
    return base + ["--only", "roofline" if stage == "profile" else "workloads", "--workload", spec]


def started(stage: str, log: Path, pid: int, folder: Path) -> bool:
    """Whether the collection is inside `stage` now."""
    text = log.read_text(errors="replace") if log.exists() else ""
    if stage == "sweep":
        return points(folder) >= 1
    if stage == "compile":
        return "torch.compile at batch" in text
    if stage == "boundary":
        return "searching the OOM boundary" in text and bool(descendants(pid))
    if stage == "profile":
        return "profiling" in text
    return len(descendants(pid)) >= 3  # torchrun and two ranks


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def check(stage: str, how: str, source: Path, spec: str, work: Path) -> Check:
    root = work / f"{stage}-{how}"
    folder = root / source.name
    prepare(stage, source, folder)
    log = root / "log.txt"
    proc = subprocess.Popen(command(stage, root, source.name, spec), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=log.open("w"), start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    result = Check(stage, how)
    deadline = time.monotonic() + WAIT_S
    try:
        while not started(stage, log, proc.pid, folder):
            if proc.poll() is not None or time.monotonic() > deadline:
                result.note = f"the stage did not begin (exit {proc.returncode}); log: {log}"
                return result
            time.sleep(0.1)
        time.sleep({"compile": 5.0, "boundary": 3.0}.get(stage, 1.0))  # well inside the stage
        children = descendants(proc.pid)
        result.children, result.points_before = len(children), points(folder)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT) if how == "group" else proc.send_signal(signal.SIGINT)
        result.rc = proc.wait(timeout=60)
        result.exit_s = round(time.monotonic() - sent, 2)
        result.left = sum(alive(pid) for pid in children)
        result.points_after = points(folder)
        result.ok = (result.rc == 130 and result.exit_s < STOP_S and not result.left
                     and result.points_after >= result.points_before)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, required=True, help="a machine folder a complete collection left")
    parser.add_argument("--workload", required=True, help="the workload it collected (FILE.py:FN or a name)")
    parser.add_argument("--work", type=Path, required=True, help="where the copies go")
    parser.add_argument("--stage", action="append", choices=STAGES, help="the stages to check (default: all)")
    parser.add_argument("--out", type=Path, help="write the checks as JSON here")
    args = parser.parse_args(argv)
    results = []
    for stage in args.stage or STAGES:
        for how in ("pid", "group") if stage == "boundary" else ("pid",):
            results.append(r := check(stage, how, args.folder.resolve(), args.workload, args.work.resolve()))
            print(f"{stage:<9} {how:<5} rc {r.rc}  ended {r.exit_s} s after SIGINT  children {r.children} "
                  f"(left {r.left})  points {r.points_before} -> {r.points_after}  "
                  f"{'ok' if r.ok else 'FAILED'} {r.note}", flush=True)
    if args.out:
        args.out.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
