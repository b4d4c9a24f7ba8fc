"""Why a traced workload's largest batch misses the measured one: each reference boundary, predicted leaving its
workload out (planner/trace/learn.py fit_memory with leave_out, as benchmarks/trace_leave_one_out.py does), beside
what the GPU held at it and what the trace holds there.

    PYTHONPATH=$PWD python benchmarks/trace_boundaries.py --traces DIR [--only WORKLOAD] [--json OUT]

DIR holds the reference traces (trace-<workload>.json) that benchmarks/trace_leave_one_out.py --traces DIR writes.
Per reference GPU, workload and precision (default allocator, boundaries found):

- measured: the largest batch that ran, the first that did not, and at the largest the probe's peak allocated and
  reserved bytes (torch.cuda.max_memory_*), the request that failed at the first OOM and what other processes held
  on the GPU during the search (read from CUDA's message, planner/trace/boundary.py);
- traced at the measured batch (each precision's lines through its traced batches, planner/trace/memory.py): the
  parameters, gradients (and backward's buffers), optimizer state and activations at the step's live peak, the
  live peak, the caching allocator's replayed reservation (collectors/trace/allocator.py), the largest block;
- the model's: the allocator's offset (cuBLAS's workspace, the context's allocations: measured − traced peak) and the
  usable share of the card, learned from the other workloads; the predicted largest batch and its error.

No GPU; a second or two per GPU once the traces exist.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplan_schema.payloads import OomBoundary, TracePayload, WorkloadPayload, WorkloadPoint  # noqa: E402
from gpuplan_schema.results import load_machine  # noqa: E402
from gpuplan_schema.schema import load_document  # noqa: E402
from planner.model.memory import least_squares  # noqa: E402
from planner.specs import match_gpu  # noqa: E402
from planner.trace.boundary import others_during  # noqa: E402
from planner.trace.learn import fit_memory  # noqa: E402
from planner.trace.memory import memory_line  # noqa: E402
from planner.trace.references import REFERENCE_MACHINES, REFERENCE_SPECS  # noqa: E402

GB = 1e9
PARTS = ("parameters_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes")
_REQUEST = re.compile(r"Tried to allocate ([\d.]+) (GiB|MiB)")


def traced_parts(trace: TracePayload, precision: str, batch: int) -> dict[str, float]:
    """Each part of the traced peak, on its line through the precision's traced batches, at `batch`."""
    runs = [r for r in trace.ok_runs(precision) if r.memory]
    out = {}
    for part in (*PARTS, "peak_bytes", "reserved_bytes", "largest_bytes"):
        fixed, slope = least_squares([r.batch for r in runs], [float(getattr(r.memory, part)) for r in runs])
        out[part] = fixed + slope * batch
    return out


def probe_at(payload: WorkloadPayload, b: OomBoundary, batch: int | None) -> WorkloadPoint | None:
    return next((p for p in payload.points if p.sweep == "probe" and p.precision == b.precision and p.batch == batch
                 and ("expandable_segments" in p.variant.split("+")) == (b.allocator != "default")), None)


def request_bytes(point: WorkloadPoint | None) -> float | None:
    match = _REQUEST.search(point.reason or "") if point else None
    return float(match.group(1)) * (2**30 if match.group(2) == "GiB" else 2**20) if match else None


def rows_of(machine_dir: Path, traces: dict[str, TracePayload], only: str | None) -> list[dict]:
    machine = load_machine(machine_dir)
    spec = match_gpu(machine.gpu_name or "")
    assert spec is not None, f"{machine_dir}: no catalog GPU"
    rows = []
    for w in machine.workloads:
        if w.workload not in traces or (only and w.workload != only):
            continue
        model = fit_memory(machine, traces, w.workload, spec.memory_bytes)
        for b in w.default_boundaries:
            line = memory_line(traces[w.workload], b.precision)
            if not (b.status == "ok" and b.max_batch and not b.capped and line):
                continue
            others = others_during(w, b)
            predicted = model.max_batch(line, spec.memory_bytes, others)
            ok, oom = probe_at(w, b, b.max_batch), probe_at(w, b, b.first_oom_batch)
            rows.append({
                "machine": machine.machine, "workload": w.workload, "precision": b.precision,
                "measured": b.max_batch, "first_oom": b.first_oom_batch, "predicted": predicted,
                "error": predicted / b.max_batch - 1, "others_bytes": others,
                "gpu_allocated_bytes": ok.memory.peak_allocated_bytes if ok and ok.memory else None,
                "gpu_reserved_bytes": ok.memory.peak_reserved_bytes if ok and ok.memory else None,
                "oom_request_bytes": request_bytes(oom),
                "traced": traced_parts(traces[w.workload], b.precision, b.max_batch),
                "offset_bytes": model.offset_bytes, "usable": model.usable, "replay": model.replay,
                "card_bytes": spec.memory_bytes})
    return rows


def _gb(x: float | None) -> str:
    return f"{x / GB:6.1f}" if x is not None else "     –"


def print_rows(rows: list[dict]) -> None:
    print("machine    workload             prec  measured predicted  error | GPU at max: alloc reserved  "
          "OOM req others | trace at max: params grads optim activ  peak replay largest | offset usable replay")
    for r in rows:
        t = r["traced"]
        flag = "" if abs(r["error"]) <= 0.05 else " MISS"
        print(f"{r['machine']:10s} {r['workload']:20s} {r['precision']:4s} {r['measured']:9d} {r['predicted']:9d} "
              f"{r['error']:+6.1%} | {_gb(r['gpu_allocated_bytes'])} {_gb(r['gpu_reserved_bytes'])}  "
              f"{_gb(r['oom_request_bytes'])} {_gb(r['others_bytes'])} | "
              + " ".join(_gb(t[p]) for p in PARTS)
              + f" {_gb(t['peak_bytes'])} {_gb(t['reserved_bytes'])} {_gb(t['largest_bytes'])} | "
              f"{_gb(r['offset_bytes'])} {r['usable']:.3f} {r['replay']}{flag}")
    for machine in sorted({r["machine"] for r in rows}):
        mine = [r for r in rows if r["machine"] == machine]
        print(f"{machine}: {sum(abs(r['error']) <= 0.05 for r in mine)} of {len(mine)} boundaries within 5 %")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, required=True, help="the reference traces' folder")
    parser.add_argument("--results", type=Path, default=ROOT / "results", help="the results root")
    parser.add_argument("--only", help="one workload")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    traces = {name: load_document(path).payload for name in REFERENCE_SPECS
              if (path := args.traces / f"trace-{name}.json").exists()}
    if not traces:
        print(f"{args.traces}: no trace-<workload>.json (benchmarks/trace_leave_one_out.py --traces writes them)",
              file=sys.stderr)
        return 2
    rows = [r for m in REFERENCE_MACHINES for r in rows_of(args.results / m, traces, args.only)]
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
