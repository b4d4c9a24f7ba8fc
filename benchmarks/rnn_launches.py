"""The kernels cuDNN launched per RNN call on the GPUs we profiled, beside what the trace counts for the same calls.

    PYTHONPATH=$PWD python benchmarks/rnn_launches.py [--results DIR] [--json PATH]

For every committed per-op profile with a `_cudnn_rnn` (results/**/roofline-*.json: GNMT as a reference workload, the
held-out lstm-lm), and each batch it profiled: the workload is traced on this CPU at that precision and batch, and its
RNN calls' launches by collectors/trace/rnn.py's rule are set beside the profile's kernels per step. A profile keeps
each op's five longest kernels (collectors/roofline/op_roofline.py TOP_KERNELS), so its launches are known only in
part: `measured ≥` is those five's launches, a floor of the op's. What is known exactly is the cell kernels (cuDNN's
elementwise kernel per time step, layer and direction, `elemWiseRNNcell` forward and `*_elementWise_bp1` backward)
and the persistent ones (one per layer: `ampere_lstm_*`): the rule's cell steps and persistent layers are checked
against them exactly wherever the profile lists them among the five (`?` where it does not). Exit 1 where one differs
in a profile whose steps agree (every listed kernel a whole number of launches a step; an average over steps that
launched differently cannot check a count).

CPU only; under a minute (traces on the meta device).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from collectors.roofline.op_roofline import TOP_KERNELS  # noqa: E402
from collectors.trace import recorder  # noqa: E402
from collectors.trace.collect import load_on_meta, trace_run  # noqa: E402
from collectors.trace.rnn import PERSISTENT, RnnCall, algorithm  # noqa: E402
from gpuplan_schema.payloads import RooflinePayload  # noqa: E402
from gpuplan_schema.schema import load_document  # noqa: E402
from planner.trace.references import HELD_OUT_SPECS, REFERENCE_SPECS  # noqa: E402

CELL = re.compile(r"elemWiseRNNcell|_elementWise_bp1")
PERSISTENT_KERNEL = re.compile(r"ampere_lstm|persist", re.I)
OPS = ("aten::_cudnn_rnn", "aten::_cudnn_rnn_backward")


@dataclass(frozen=True)
class Compared:
    profile: str
    precision: str
    batch: int
    op: str
    calls: float
    rule_launches: int
    rule_cells: int           # the standard algorithm's cell steps
    rule_persistent: int      # the persistent algorithm's layers (one kernel each)
    measured_cells: float | None        # None: no cell kernel among the five longest (not known)
    measured_persistent: float
    measured_floor: float     # the five longest kernels' launches
    steady: bool              # every listed kernel launched a whole number of times a step (the steps agree)

    @property
    def checked(self) -> bool:
        return self.measured_cells is not None

    @property
    def differs(self) -> bool:
        """A listed family whose launches are not the rule's."""
        return any(m is not None and m != rule for m, rule in ((self.measured_cells, self.rule_cells),
                                                               (self.measured_persistent, self.rule_persistent)))


def traced_calls(spec: str, precision: str, batch: int) -> list[RnnCall]:
    """The RNN calls of one traced training step, as the recorder's launch rule saw them."""
    seen: list[RnnCall] = []
    counted = recorder.rnn_launches

    def keep(call: RnnCall) -> int:
        seen.append(call)
        return counted(call)
    recorder.rnn_launches = keep   # the recorder's own call, watched (restored below)
    try:
        run = trace_run(load_on_meta(spec), precision, batch)
    finally:
        recorder.rnn_launches = counted
    if run.status != "ok":
        raise SystemExit(f"{spec} {precision} {batch}: the trace failed: {run.reason}")
    return seen


def compare(path: Path, profile: RooflinePayload, spec: str) -> list[Compared]:
    out = []
    for at in profile.profiled():
        if at.status != "ok":
            continue
        calls = traced_calls(spec, profile.precision, at.batch)
        for op in (o for o in at.ops if o.name in OPS):
            mine = [c for c in calls if c.forward == (op.name == OPS[0])]
            persistent = [c for c in mine if algorithm(c) == PERSISTENT]
            standard = [c for c in mine if algorithm(c) != PERSISTENT]
            kinds: dict[str, float] = defaultdict(float)
            for k in op.kernels:
                kinds["cell" if CELL.search(k.name) else "persistent" if PERSISTENT_KERNEL.search(k.name)
                      else "other"] += k.calls
            # cell kernels missing from a full list of five may sit below it; a persistent kernel, a layer's whole
            # recurrence, would be the op's longest: missing, none ran
            full = len(op.kernels) >= TOP_KERNELS
            out.append(Compared(str(path.relative_to(ROOT)), profile.precision, at.batch, op.name, op.calls,
                                sum(recorder.rnn_launches(c) for c in mine), sum(c.cell_steps for c in standard),
                                sum(c.layers * c.directions for c in persistent),
                                kinds["cell"] if "cell" in kinds or not full else None, kinds["persistent"],
                                sum(kinds.values()), all(float(k.calls).is_integer() for k in op.kernels)))
    return out


def rnn_profiles(results: Path) -> list[tuple[Path, RooflinePayload, str]]:
    specs = {**REFERENCE_SPECS, **HELD_OUT_SPECS}
    out = []
    for path in sorted(results.rglob("roofline-*.json")):
        if "_cudnn_rnn" not in path.read_text(encoding="utf-8"):
            continue
        payload = load_document(path).payload
        if payload.device == "cuda" and payload.workload in specs:
            out.append((path, payload, specs[payload.workload]))
    return out


def print_table(rows: list[Compared]) -> None:
    print(f"{'profile':70s} {'prec':5s} {'batch':>5s} {'op':9s} {'calls':>5s} {'rule':>5s} {'≥ meas':>6s} "
          f"{'rule/≥':>6s}  cells rule/meas  persistent rule/meas")
    for r in rows:
        short = "backward" if r.op.endswith("backward") else "forward"
        print(f"{r.profile:70s} {r.precision:5s} {r.batch:5d} {short:9s} {r.calls:5.0f} {r.rule_launches:5d} "
              f"{r.measured_floor:6.0f} {r.rule_launches / r.measured_floor:6.2f}  {r.rule_cells:5d}/"
              f"{_count(r.measured_cells):5s}      {r.rule_persistent:3d}/{_count(r.measured_persistent):3s}"
              f"{'   DIFFERS' if r.differs else ''}{'' if r.steady else ' (the profiled steps differ)'}")
    checked = [r for r in rows if r.checked]
    ratios = sorted(r.rule_launches / r.measured_floor for r in rows)
    print(f"\n{len(rows)} profiled ops (an op's calls in one profiled step): cell and persistent kernels listed in "
          f"{len(checked)}, as the rule counts them in {sum(not r.differs for r in checked)}; the rule's launches over "
          f"the five longest kernels' {ratios[0]:.2f}-{ratios[-1]:.2f} (median {ratios[len(ratios) // 2]:.2f})")


def _count(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results", help="the results root (default: results/)")
    parser.add_argument("--json", type=Path, help="also write every row here")
    args = parser.parse_args(argv)
    rows = [r for path, profile, spec in rnn_profiles(args.results.resolve()) for r in compare(path, profile, spec)]
    if not rows:
        print(f"{args.results}: no profile with a cuDNN RNN", file=sys.stderr)
        return 2
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps([{**asdict(r), "differs": r.differs} for r in rows], indent=1) + "\n")
    return 1 if any(r.differs and r.steady for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
