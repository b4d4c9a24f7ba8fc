"""collectors/trace/rnn.py's launch rule derived from the kernels cuDNN launched on a GPU, and checked against them.

    PYTHONPATH=$PWD python benchmarks/rnn_kernel_grid.py [GRID_JSON [CEILINGS_JSON]]   # default: the H200's

GRID_JSON is benchmarks/gpu_rnn_kernels.py's rnn-kernels.json (every kernel launched under each `_cudnn_rnn` and
`_cudnn_rnn_backward` call, by name; default results/h200/diagnostics/rnn-kernels-2026-11-28/rnn-kernels.json).
Each kernel falls in a family by its name (FAMILIES), and each of the rule's constants is what its family launched
per unit — a cell step, a layer and direction, a call, a change of a packed batch's size — the most common figure
over the calls it applies to (`derive`); the split's depth is the least depth whose backward launched a memset or a
split-K reduction a cell step, and every shallower one must have launched none. Then every call's launches by the
rule beside the measured ones (`compare`).

The host's cost per launch (planner/trace/predict.py LIBRARY_LAUNCH): between two points that differ in their time
steps alone, the issue time's growth over the launches' (`launch_slopes`), the median over those pairs, over the
dispatch benchmark's seconds to issue one op on the same GPU type (its ceilings.json `op_issue_s`; default
results/h200's), to one decimal.

Exit 1 where a derived constant is not the rule's, or a backward call of the standard algorithm is off by more than
TOLERANCE (the forward's rule is older: its stacks' chunked input products are not counted, docstring of rnn.py).
CPU only, a second.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from collectors.trace import rnn  # noqa: E402
from planner.trace.predict import LIBRARY_LAUNCH  # noqa: E402

GRID = ROOT / "results" / "h200" / "diagnostics" / "rnn-kernels-2026-11-28" / "rnn-kernels.json"
CEILINGS = ROOT / "results" / "h200" / "ceilings.json"
POINT = ("mode", "hidden", "layers", "bidirectional", "batch", "dtype", "packed")   # all but the time steps
FORWARD, BACKWARD = "aten::_cudnn_rnn", "aten::_cudnn_rnn_backward"
MODES = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": 1}
TOLERANCE = 0.10
# A kernel's family by its name, the first that matches (the rest are matrix products and cuBLASLt's transforms)
FAMILIES = (("cell", r"elemWiseRNNcell|_elementWise_bp1"), ("split", r"^Memset|splitKreduce"),
            ("copy", r"^Memcpy DtoD"), ("fill", r"FillFunctor"), ("fp32_copy", r"direct_copy_kernel"),
            ("bias", r"_elementWise_bp2"), ("accumulate", r"bidirectional_accum"))


@dataclass(frozen=True)
class Call:
    """One measured call: the rule's view of it and its launches by family."""

    call: rnn.RnnCall
    families: Counter
    launches: int

    @property
    def persistent(self) -> bool:
        return rnn.algorithm(self.call) == rnn.PERSISTENT


def family(kernel: str) -> str:
    return next((name for name, pattern in FAMILIES if re.search(pattern, kernel)), "product")


def batch_sizes(steps: int, batch: int) -> list[int]:
    """gpu_rnn_kernels.py's packed batch: sequences one step shorter each (pack_padded_sequence's batch sizes)."""
    lengths = [max(1, steps - i) for i in range(batch)]
    return [sum(n > t for n in lengths) for t in range(steps)]


def rnn_call(p: dict, forward: bool) -> rnn.RnnCall:
    """The point's call as the trace reads it (collectors/trace/rnn.py rnn_call)."""
    changes = len(set(batch_sizes(p["steps"], p["batch"]))) - 1 if p["packed"] else 0
    return rnn.RnnCall(MODES[p["mode"]], p["hidden"], p["hidden"], p["layers"], 2 if p["bidirectional"] else 1,
                       p["steps"], p["batch"], p["packed"], p["dtype"] == "fp16", False, 0, forward, changes)


def calls(doc: dict) -> list[Call]:
    out = []
    for p in doc["points"]:
        for op in (FORWARD, BACKWARD):
            kinds: Counter = Counter()
            for kernel, n in p["kernels"][op].items():
                kinds[family(kernel)] += n
            out.append(Call(rnn_call(p, op == FORWARD), kinds, p["launches"][op]))
    return out


def most_common(values: list[float]) -> float:
    return statistics.mode(round(v, 2) for v in values)


def split_depths(measured: list[Call]) -> dict[bool, int]:
    """Per dtype (half?), the least depth (gates × hidden) whose backward split a cell step: every shallower one split
    none (a split-K reduction of the products' own, a few a call, is not a step's)."""
    out = {}
    for half in (True, False):
        rows = [(rnn.GATES.get(c.call.mode, 1) * c.call.hidden, c.families["split"] / c.call.cell_steps >= 0.9)
                for c in measured if not c.call.forward and not c.persistent and c.call.half == half]
        split = [depth for depth, yes in rows if yes]
        if split and all(depth < min(split) for depth, yes in rows if not yes):
            out[half] = min(split)
    return out


def standard_backward(measured: list[Call]) -> dict[str, float]:
    """The backward's per-unit figures: products a cell step and a layer, copies a change and a layer."""
    rows = [c for c in measured if not c.call.forward and not c.persistent]
    padded = [c for c in rows if not c.call.packed and not rnn.chunks(c.call)]
    packed = [c for c in rows if c.call.packed]
    per_layer = [(c.families["product"] - c.call.cell_steps) / c.call.layer_directions + c.families["bias"]
                 / c.call.layer_directions for c in padded]
    packed_step = [(c.families["product"] - rnn.chunks(c.call)) / c.call.cell_steps - 1
                   - (rnn.BACKWARD_PER_LAYER - 1) * c.call.layer_directions / c.call.cell_steps for c in packed]
    bi = [c for c in rows if c.call.directions == 2]
    uni_packed = [c for c in packed if c.call.directions == 1]
    bi_packed = [c for c in packed if c.call.directions == 2]
    forward_copies = [c.families["copy"] / c.call.layers / c.call.changes for c in uni_packed]
    return {
        "PER_CELL_STEP": most_common([c.families["cell"] / c.call.cell_steps for c in rows]) + 1,
        "BACKWARD_PER_LAYER": most_common(per_layer),
        "BIDIRECTIONAL_BACKWARD": most_common([(c.families["accumulate"] + c.families["copy"]) / c.call.layers
                                               for c in bi if not c.call.packed]),
        "PACKED_STEP": round(statistics.median(packed_step)),
        "COPIES_PER_CHANGE backward forward direction": most_common(forward_copies),
        "COPIES_PER_CHANGE backward reverse direction": most_common(
            [(c.families["copy"] / c.call.layers - 2) / c.call.changes - 2 for c in bi_packed]),
        "COPIES_PER_CHANGE forward reverse direction": most_common(
            [c.families["copy"] / c.call.layers / c.call.changes for c in measured
             if c.call.forward and c.call.packed and c.call.directions == 2]),
        "FILLS lstm": most_common([c.families["fill"] for c in measured
                                   if not c.call.forward and c.call.mode == rnn.LSTM]),
        "FILLS other": most_common([c.families["fill"] for c in measured
                                    if not c.call.forward and c.call.mode != rnn.LSTM]),
        "FP32_COPY": most_common([c.families["fp32_copy"] for c in measured
                                  if not c.call.forward and not c.call.half]),
    }


def stack_chunks(measured: list[Call]) -> dict[str, float]:
    """A padded unidirectional stack's input-gradient products (its products beyond one a cell step and the three
    weight gradients a layer): one per STEPS_PER_CHUNK steps, at most MAX_CHUNKS (the most any launched)."""
    rows = [c for c in measured if not c.call.forward and not c.persistent and not c.call.packed
            and c.call.layers > 1 and c.call.directions == 1]
    inputs = [(c.call.steps, c.families["product"] - c.call.cell_steps
               - (rnn.BACKWARD_PER_LAYER - 2) * c.call.layer_directions) for c in rows]
    most = max(n for _, n in inputs)
    return {"STEPS_PER_CHUNK": most_common([steps / n for steps, n in inputs if n < most]), "MAX_CHUNKS": most}


def persistent(measured: list[Call]) -> dict[str, float]:
    """Launches per layer and direction of the persistent algorithms, beside the backward's fills and accumulation."""
    out = {}
    for label, small in (("PERSISTENT_SMALL_H", True), ("PERSISTENT_STATIC", False)):
        rows = [c for c in measured if c.persistent and rnn.small_hidden(c.call) == small]
        fwd = [c.launches / c.call.layer_directions for c in rows if c.call.forward]
        bwd = [(c.launches - c.families["fill"] - c.families["fp32_copy"] - c.families["accumulate"])
               / c.call.layer_directions for c in rows if not c.call.forward]
        out[f"{label} forward"], out[f"{label} backward"] = most_common(fwd), most_common(bwd)
    out["PERSISTENT_BIDIRECTIONAL_BACKWARD"] = most_common(
        [c.families["accumulate"] / c.call.layers for c in measured
         if c.persistent and not c.call.forward and c.call.directions == 2])
    return out


def derive(doc: dict) -> dict[str, float]:
    """Every constant of the rule, from the grid."""
    measured = calls(doc)
    depths = split_depths(measured)
    return {**standard_backward(measured), **stack_chunks(measured), **persistent(measured),
            "SPLIT_DEPTH fp16": depths.get(True, 0), "SPLIT_DEPTH tf32": depths.get(False, 0)}


def launch_slopes(doc: dict) -> list[float]:
    """Per pair of points that differ in their time steps alone, forward and backward: the host's seconds to issue the
    call, grown over the kernels it launched."""
    pairs: dict[tuple, list[dict]] = {}
    for p in doc["points"]:
        pairs.setdefault(tuple(p[k] for k in POINT), []).append(p)
    out = []
    for points in (sorted(ps, key=lambda p: p["steps"]) for ps in pairs.values() if len(ps) > 1):
        short, long = points[0], points[-1]
        for phase, op in (("forward", FORWARD), ("backward", BACKWARD)):
            grown = long["launches"][op] - short["launches"][op]
            if grown > 0:
                out.append((long["issue_s"][phase]["median_s"] - short["issue_s"][phase]["median_s"]) / grown)
    return out


def library_launch(doc: dict, ceilings: dict) -> float:
    """A library launch's host cost over one op's (ceilings' dispatch `op_issue_s`), to one decimal."""
    op_issue_s = ceilings["payload"]["dispatch"]["op_issue_s"]["median"]
    return round(statistics.median(launch_slopes(doc)) / op_issue_s, 1)


def in_rule() -> dict[str, float]:
    """The same constants as collectors/trace/rnn.py has them."""
    return {"PER_CELL_STEP": rnn.PER_CELL_STEP, "BACKWARD_PER_LAYER": rnn.BACKWARD_PER_LAYER,
            "BIDIRECTIONAL_BACKWARD": rnn.BIDIRECTIONAL_BACKWARD, "PACKED_STEP": rnn.PACKED_STEP,
            "COPIES_PER_CHANGE backward forward direction": rnn.COPIES_PER_CHANGE[False][0],
            "COPIES_PER_CHANGE backward reverse direction": rnn.COPIES_PER_CHANGE[False][1],
            "COPIES_PER_CHANGE forward reverse direction": rnn.COPIES_PER_CHANGE[True][1],
            "STEPS_PER_CHUNK": rnn.STEPS_PER_CHUNK, "MAX_CHUNKS": rnn.MAX_CHUNKS, "FILLS lstm": rnn.FILLS[rnn.LSTM],
            "FILLS other": rnn.OTHER_FILLS, "FP32_COPY": rnn.FP32_COPY,
            "PERSISTENT_SMALL_H forward": rnn.PERSISTENT_SMALL_H[0],
            "PERSISTENT_SMALL_H backward": rnn.PERSISTENT_SMALL_H[1],
            "PERSISTENT_STATIC forward": rnn.PERSISTENT_STATIC[0],
            "PERSISTENT_STATIC backward": rnn.PERSISTENT_STATIC[1],
            "PERSISTENT_BIDIRECTIONAL_BACKWARD": rnn.PERSISTENT_BIDIRECTIONAL_BACKWARD,
            "SPLIT_DEPTH fp16": rnn.SPLIT_DEPTH[True], "SPLIT_DEPTH tf32": rnn.SPLIT_DEPTH[False]}


def compare(doc: dict) -> list[dict]:
    """Every call: the rule's launches beside the measured."""
    out = []
    for c in calls(doc):
        counted = rnn.rnn_launches(c.call)
        out.append({"call": c.call, "algorithm": rnn.algorithm(c.call), "rule": counted, "measured": c.launches,
                    "error": counted / c.launches - 1})
    return out


def label(call: rnn.RnnCall) -> str:
    return (f"mode {call.mode} h{call.hidden:<5} L{call.layers} {'bi ' if call.directions == 2 else 'uni'} "
            f"T{call.steps:<4} B{call.batch:<4} {'fp16' if call.half else 'tf32'}{' packed' if call.packed else '':7} "
            f"{'forward ' if call.forward else 'backward'}")


def failures(derived: dict[str, float], rows: list[dict]) -> list[str]:
    rule = {**in_rule(), "LIBRARY_LAUNCH": LIBRARY_LAUNCH}
    out = [f"{name}: derived {derived[name]:g}, the rule has {rule[name]:g}" for name in rule
           if derived[name] != rule[name]]
    out += [f"{label(r['call'])}: rule {r['rule']}, measured {r['measured']} ({r['error']:+.1%})" for r in rows
            if not r["call"].forward and r["algorithm"] == rnn.STANDARD and abs(r["error"]) > TOLERANCE]
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else GRID
    doc = json.loads(path.read_text(encoding="utf-8"))
    ceilings = json.loads((Path(args[1]) if len(args) > 1 else CEILINGS).read_text(encoding="utf-8"))
    derived = {**derive(doc), "LIBRARY_LAUNCH": library_launch(doc, ceilings)}
    rule = {**in_rule(), "LIBRARY_LAUNCH": LIBRARY_LAUNCH}
    slopes = sorted(launch_slopes(doc))
    print(f"the host's issue time a launch: {statistics.median(slopes) * 1e6:.2f} µs ({len(slopes)} pairs, "
          f"{slopes[0] * 1e6:.1f}-{slopes[-1] * 1e6:.1f})")
    print(f"{'constant':46s} {'derived':>8s} {'rule':>6s}")
    for name, value in derived.items():
        print(f"{name:46s} {value:8g} {rule[name]:6g}")
    rows = compare(doc)
    print()
    for r in rows:
        print(f"{label(r['call'])} {r['algorithm']:10s} rule {r['rule']:4d} measured {r['measured']:4d} "
              f"{r['error']:+6.1%}")
    for part in ("forward ", "backward"):
        mine = [abs(r["error"]) for r in rows if label(r["call"]).endswith(part)]
        print(f"{part.strip()}: median |error| {statistics.median(mine):.1%}, largest {max(mine):.1%}")
    bad = failures(derived, rows)
    for line in bad:
        print(f"DIFFERS: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
