"""The out-of-memory boundary searched in a fresh process: what a training job started on its own meets.

A search run inside the collection, after the sweeps, the compiled variants and the other precisions,
finds a smaller boundary than the same search in a new process, and one that moves between collections:
what the collection process ran before keeps memory the search cannot have (the CUDA context's loaded
kernels grow with every library and compiled graph used; cached blocks pinned by what is still alive).
So on a GPU each boundary search runs in a child process of its own (`python -m
collectors.workloads.boundary_process`): it builds the workload from its spec, runs
collectors/workloads/boundary.py's search and prints each probe and the boundary as a JSON line, which the
collector saves as they come. The boundary says so (`fresh_process`). The collection keeps its own CUDA
context meanwhile (the model goes to the CPU). The measurements behind this: docs/history.md, "The
boundary in a fresh process".
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import torch

from collectors.workloads.boundary import BOUNDARY_TOLERANCE, SEARCH_LIMIT_S, allocator_of, iter_boundary
from collectors.workloads.sweep import Context
from collectors.workloads.sweep_plan import instantiate
from collectors.workloads.training import Variant
from gpuplan_schema.payloads import OomBoundary, WorkloadPoint
from gpuplan_schema.schema import from_dict

CHILD = "collectors.workloads.boundary_process"


@dataclasses.dataclass(frozen=True)
class Search:
    """What the child needs: the workload's spec (a built-in name or path/to/file.py:function), the points
    measured so far (the memory line the search starts from) and collectors/workloads/boundary.py's arguments."""

    spec: str
    device: str
    precision: str
    measured: list[WorkloadPoint]
    cap: int
    variant: str
    hint: int | None = None
    point_timeout_s: float | None = None
    tolerance: float = BOUNDARY_TOLERANCE  # benchmarks/boundary_spread.py bisects tighter
    limit_s: float = SEARCH_LIMIT_S        # the search's time (collectors/workloads/boundary.py)


def iter_boundary_in_fresh_process(search: Search) -> Iterator[WorkloadPoint | OomBoundary]:
    """The search's probes and boundary, from a child process; a child that fails or dies gives an error
    boundary whose reason is its last line of output (the probes it finished are kept). A stop (Ctrl-C, the
    budget: StopNow, or a closed generator) ends the child at once."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with subprocess.Popen([sys.executable, "-m", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env) as child:
        assert child.stdin and child.stdout and child.stderr
        try:
            child.stdin.write(json.dumps(dataclasses.asdict(search)))
            child.stdin.close()
            ended = False
            for line in child.stdout:
                item = parse_item(line)
                if item is None:
                    continue
                ended = isinstance(item, OomBoundary)
                yield item
            errors = child.stderr.read().strip().splitlines()
            code = child.wait()
        except BaseException:
            child.kill()  # without this, Popen's exit would wait for the child's search to end
            raise
    if not ended and (code in (-signal.SIGINT, 130) or (errors and errors[-1].startswith("KeyboardInterrupt"))):
        # Ctrl-C (or the collector's time limit) reached the child too: the collection stops, to be resumed;
        # the search is not over, so no boundary is recorded
        raise KeyboardInterrupt
    if not ended:
        why = errors[-1] if errors else f"exit code {code}"
        yield OomBoundary(search.precision, "error", reason=f"the boundary's search process failed: {why}",
                          allocator=allocator_of(Variant.from_name(search.variant)),
                          fresh_process=True)


def parse_item(line: str) -> WorkloadPoint | OomBoundary | None:
    """A probe or the boundary from one line the child printed; None for anything else (a workload's print)."""
    try:
        raw = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(raw, dict) or raw.get("kind") not in ("probe", "boundary"):
        return None
    tp = WorkloadPoint if raw["kind"] == "probe" else OomBoundary
    return from_dict(tp, raw["item"], "<boundary search process>", raw["kind"])


def run_search(search: Search) -> Iterator[WorkloadPoint | OomBoundary]:
    """The search itself, in this process (the child's side)."""
    device = torch.device(search.device)
    ctx = Context(device, point_timeout_s=search.point_timeout_s)
    # each probe on a workload built anew: a job started at that batch (boundary.py iter_boundary); no name here
    # holds the first, whose model, gradients and own tensors would stay on the device through the later probes
    for item in iter_boundary(instantiate(search.spec, device), search.precision, search.measured, ctx, search.cap,
                              Variant.from_name(search.variant), search.hint, search.tolerance, search.limit_s,
                              rebuild=lambda: instantiate(search.spec, device)):
        yield dataclasses.replace(item, fresh_process=True, fresh_probes=True) if isinstance(item, OomBoundary) \
            else item


def main() -> int:
    # SIGINT is how the collector stops this search (its time limit, Ctrl-C to the process group): honour it even
    # where this process was started with SIGINT ignored, as a command sent to the background by a script is (the
    # ignored disposition is inherited; the collector itself installs its own handler, collectors/core/interrupt.py)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raw = json.loads(sys.stdin.read())
    raw["measured"] = [from_dict(WorkloadPoint, p, "<stdin>", "measured") for p in raw["measured"]]
    # the workload's own prints go to stderr: stdout carries only the items
    out, sys.stdout = sys.stdout, sys.stderr
    for item in run_search(Search(**raw)):
        kind = "boundary" if isinstance(item, OomBoundary) else "probe"
        print(json.dumps({"kind": kind, "item": dataclasses.asdict(item)}), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
