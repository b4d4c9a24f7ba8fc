"""Every profiled batch norm of the reference GPUs against two roofs: the copy bandwidth (the bytes the trace counts)
and the per-channel one (planner/trace/plane.py: ATen's NCHW kernels give each channel one block of 512 threads, so
a native batch norm's statistics and backward run at the share of the SMs' block slots its channels fill; cuDNN's
NCHW training kernels, one block per channel too, at the share of the SMs' channel slots, plane.py CUDNN_RESIDENT). A
mechanism that holds makes a kind's efficiency (roof ÷ measured) alike across workloads, shapes and batches; the
bandwidth roof does not for the native kind (issue 41: unet-seg's bf16 batch norms at 0.10-0.12 of it, SSD300's at
0.19-0.20, the conv rollout's InstanceNorm at 0.45).

    PYTHONPATH=$PWD python benchmarks/trace_batchnorm_rows.py --traces DIR [--heldout DIR ...]

--traces: a folder of the reference workloads' traces (benchmarks/trace_leave_one_out.py --traces keeps them);
--heldout: trace folders of models the model never learned from (gpuplan trace), whose profiles under
results/<gpu>/diagnostics/heldout-*/ are listed too, marked as a check. CPU only, a few seconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplan_schema.results import load_machine  # noqa: E402
from gpuplan_schema.schema import load_document  # noqa: E402
from planner.model.split import machine_rooflines  # noqa: E402
from planner.specs import match_gpu  # noqa: E402
from planner.trace.plane import CUDNN_RESIDENT, RESIDENT  # noqa: E402
from planner.trace.references import REFERENCE_MACHINES  # noqa: E402
from planner.trace.training import build_rows, roofs_of  # noqa: E402


def traces_in(folders: list[Path]) -> dict:
    return {d.payload.workload: d.payload for f in folders for d in map(load_document, sorted(f.glob("trace-*.json")))}


def roofs_of_row(row, sms: int) -> tuple[float, float]:  # noqa: ANN001 - an efficiency Row
    """(Σ bytes at the copy roof, Σ the per-channel roof) of a row's calls."""
    nbytes = sum(g.calls * (g.memory_s + g.plane_s) for g in row.groups)
    plane = sum(g.calls * (max(g.math_s, g.memory_s) + (g.plane_s / g.plane.fill(sms) if g.plane else 0.0))
                for g in row.groups)
    return nbytes, plane


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=Path, required=True)
    ap.add_argument("--heldout", type=Path, nargs="*", default=[])
    ap.add_argument("--results", type=Path, default=ROOT / "results")
    args = ap.parse_args(argv)
    references, heldout = traces_in([args.traces]), traces_in(args.heldout)
    print(f"{'gpu':<10} {'kind':<27} {'workload':<14} {'step ms':>8} {'op ms':>9}  eff(bytes)  "
          f"eff(per-channel: ATen's {RESIDENT} blocks an SM, cuDNN's {CUDNN_RESIDENT})")
    for name in REFERENCE_MACHINES:
        machine = load_machine(args.results / name)
        roofs, sms = roofs_of(machine.ceilings), match_gpu(machine.gpu_name or "").sm_count
        profiles = list(machine_rooflines(machine))
        checks = [load_document(f).payload for w in heldout
                  for f in sorted((args.results / name / "diagnostics").rglob(f"roofline-{w}*.json"))]
        for source, traces, label in ((profiles, references, ""), (checks, heldout, "  held out: a check")):
            rows = [r for r in build_rows(source, traces, roofs) if r.kind.startswith("batch_norm") and r.measured_s]
            for r in sorted(rows, key=lambda r: (r.kind, r.workload, r.step_s)):
                nbytes, plane = roofs_of_row(r, sms)
                print(f"{name:<10} {r.kind:<27} {r.workload:<14} {r.step_s * 1e3:>8.1f} "
                      f"{r.measured_s * 1e3:>9.3f}  {nbytes / r.measured_s:>10.3f}  {plane / r.measured_s:>10.3f}"
                      f"{label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
