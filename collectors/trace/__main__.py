"""`python -m collectors.trace SPEC... [--out DIR] [--machine ID]` (and `gpuplan trace`): see collectors/trace."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from collectors.trace.collect import load_on_meta, save_trace, trace_configs, trace_workload
from collectors.workloads import BUILTIN, WorkloadError
from gpuplan_schema.machine import sanitize_machine_id
from gpuplan_schema.payloads import TracePayload
from gpuplan_schema.progress import Progress

PROG = os.environ.get("GPUPLAN_PROG", "python3 -m collectors.trace")
DEFAULT_MACHINE = "trace"
DEFAULT_OUT = Path("runs")   # as `gpuplan collect`: a trace is a working result until committed on purpose
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Trace workloads on the meta device (no GPU, no weights): every op of a training step "
        "(forward, backward, AdamW) at the standard profile's precisions and batches, with its FLOPs, bytes and "
        "launches, and the memory the step holds. `gpuplan plan DIR/MACHINE` then predicts every catalog GPU.")
    p.add_argument("workloads", nargs="+", metavar="SPEC",
                   help=f"a built-in workload ({', '.join(BUILTIN)}) or path/to/file.py:function, as for "
                        "`gpuplan collect --workload` (the file is imported and its function called)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help="the results root; the documents go to DIR/MACHINE/trace-<workload>.json (default: runs/, "
                        "the working folder git ignores, as for `gpuplan collect`; results/ holds the committed "
                        "machines: name it to add one)")
    p.add_argument("--machine", default=DEFAULT_MACHINE, metavar="ID",
                   help=f"the trace folder's machine id (default: {DEFAULT_MACHINE})")
    return p


def refuse_measured(folder: Path, workloads: list[str]) -> str | None:
    """Why `folder` cannot take these traces: it holds a machine's measured documents and not every traced workload
    was measured there. A trace beside a measured workload splits the steps its folder did not profile
    (planner/trace/hybrid.py); a trace of a workload the folder never measured belongs in a trace folder of its own
    (a plan reads a machine as measured or as traced)."""
    measured = [p for p in sorted(folder.glob("*.json")) if not p.name.startswith("trace-")] if folder.is_dir() else []
    if not measured:
        return None
    missing = [w for w in workloads if not (folder / f"workload-{sanitize_machine_id(w)}.json").exists()]
    if missing:
        return (f"{folder}: holds measured results ({measured[0].name}) and no measurement of {', '.join(missing)}; "
                "trace into another folder (--machine ID), or beside a workload this folder measured")
    return None


def trace_all(loaded: list, folder: Path, machine: str, progress: Progress) -> int:
    """Trace each loaded workload and save it; the number with no step traced (their old trace, if any, kept)."""
    failed = 0
    for spec, workload in loaded:
        payload = trace_workload(spec, workload, progress)
        bad = [r for r in payload.runs if r.status != "ok"]
        for run in bad:
            progress.warn(f"{payload.workload} {run.precision} batch {run.batch}: {run.reason}")
        if not payload.ok_runs() and (folder / f"trace-{payload.workload}.json").exists():
            progress.warn(f"{payload.workload}: no step traced; the trace already in {folder} is kept")
            failed += 1
            continue
        failed += not payload.ok_runs()
        path = save_trace(payload, folder, machine)
        progress.warn(f"{path}: {len(payload.runs) - len(bad)} of {len(payload.runs)} steps traced in "
                      f"{payload.elapsed_s:.1f} s")
        if uncounted := uncounted_words(payload):
            progress.warn(f"{payload.workload}: {uncounted}")
    return failed


def uncounted_words(payload: TracePayload, most: int = 5) -> str:
    """The launching ops of the main step with no FLOP formula, by the bytes they move (each is timed by its bytes;
    `gpuplan plan` adds the share of the step in op kinds no GPU profile showed)."""
    runs = payload.ok_runs()
    run = payload.run("bf16", payload.main_batch) or (runs[0] if runs else None)
    if run is None:
        return ""
    moved: dict[str, float] = {}
    for op in run.ops:
        if op.flops is None and op.launches:
            name = op.name.split("::")[-1]
            moved[name] = moved.get(name, 0.0) + op.bytes
    if not moved:
        return ""
    names = sorted(moved, key=moved.__getitem__, reverse=True)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return (f"{run.no_formula_bytes_share:.0%} of the {run.precision} step's bytes are moved by ops with no FLOP "
            f"formula, timed by their bytes: {', '.join(names[:most])}{more}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    machine = sanitize_machine_id(args.machine)
    folder = args.out / machine
    try:  # every spec is loaded before anything runs: a typo stops the command with nothing written
        loaded = [(spec, load_on_meta(spec)) for spec in args.workloads]
        if problem := refuse_measured(folder, [w.name for _, w in loaded]):
            raise WorkloadError(problem)
    except WorkloadError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with Progress("trace", total=sum(len(trace_configs(spec, w)) for spec, w in loaded)) as progress:
            failed = trace_all(loaded, folder, machine, progress)
    except KeyboardInterrupt:  # the workloads saved so far stay; the one being traced is not written
        print(f"{PROG}: interrupted; the traces already written to {folder} are kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
