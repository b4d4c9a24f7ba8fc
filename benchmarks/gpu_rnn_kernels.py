"""Every kernel cuDNN launches per RNN call, and the host's time to issue them: the measurements behind
collectors/trace/rnn.py (issue 41). The committed profiles keep each op's five longest kernels, so they show the
per-step cell kernels of GNMT's and a 2-layer LSTM's calls but not every launch, and no GRU, plain RNN, small hidden
size or packed stack at all; benchmarks/rnn_launches.py compares the rule with them.

    OUT=/path python benchmarks/gpu_rnn_kernels.py            # a GPU: under two minutes on an H100 or H200
    python benchmarks/gpu_rnn_kernels.py --small --out DIR    # the CPU: tiny sizes, a check of the script (the CPU
                                                              # runs no cuDNN: no kernel is counted)

Each point is an nn.LSTM, GRU or RNN (tanh) with input = hidden, at a batch, a sequence length, layers, directions and
a dtype (fp16, or fp32 with TF32 on), over a padded or a packed batch (sequences one step shorter each, as a sorted
batch of pack_padded_sequence). One forward and backward is profiled (torch.profiler): every kernel launched under
aten::_cudnn_rnn and under aten::_cudnn_rnn_backward, by name, beside what the trace's rule counts for the same call
(collectors/trace/rnn.py: the algorithm, the cell steps, the launches). Then the host's time to issue the forward and
the backward apart, each from an idle GPU (synchronised before, the host clock around the call, no sync inside),
median and quartiles of REPEATS after WARMUP, and the device time of both (CUDA events): the host's cost per launch
is the slope of the issue time over the launches across points of one algorithm. Writes ONE file,
$OUT/rnn-kernels.json (or --out DIR), and prints each point's counts.
"""

from __future__ import annotations

import runpy
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from collectors.roofline.op_profile import kernels_below  # noqa: E402
from collectors.trace.rnn import LSTM, RnnCall, algorithm, rnn_launches  # noqa: E402

# the batch-norm grid's timer, statistics and environment (one method for every grid), run from its file
_grid = runpy.run_path(str(Path(__file__).with_name("gpu_batchnorm_grid.py")))
Timer, _stats, environment = _grid["Timer"], _grid["_stats"], _grid["environment"]

WARMUP, REPEATS = 2, 10
OUT_NAME = "rnn-kernels.json"
MODES = {"lstm": (nn.LSTM, LSTM), "gru": (nn.GRU, 3), "rnn_tanh": (nn.RNN, 1)}
DTYPES = {"fp16": torch.float16, "tf32": torch.float32}
OPS = ("aten::_cudnn_rnn", "aten::_cudnn_rnn_backward")
KEYS = ("mode", "hidden", "layers", "bidirectional", "steps", "batch", "dtype", "packed")


def grid(small: bool) -> list[dict]:
    """The points: the standard algorithm's layers, directions and sequence; the modes; fp16's persistent kernel
    around its batch limit (128, a multiple of 8); the small-hidden persistent kernels; packed stacks; GNMT's and
    the LSTM LM's own calls."""
    if small:
        pts = [("lstm", 32, 2, True, 6, 4, "tf32", False), ("gru", 32, 1, False, 6, 4, "tf32", True)]
    else:
        pts = [("lstm", 256, layers, bi, steps, 64, "tf32", False)
               for layers in (1, 2) for bi in (False, True) for steps in (16, 64)]
        pts += [(mode, 256, 2, False, 32, 64, "tf32", False) for mode in ("gru", "rnn_tanh")]
        pts += [("lstm", 256, 1, False, 32, batch, "fp16", False) for batch in (8, 64, 128, 136, 256)]
        pts += [("gru", 256, 1, False, 32, 64, "fp16", False), ("rnn_tanh", 256, 1, False, 32, 64, "fp16", False)]
        pts += [("lstm", hidden, 2, True, 32, 64, "tf32", False) for hidden in (64, 160)]
        pts += [("lstm", 64, 2, True, 32, 64, "tf32", True), ("lstm", 256, 2, False, 32, 64, "fp16", True)]
        pts += [("lstm", 1024, 1, False, 31, 128, "fp16", False), ("lstm", 1024, 1, True, 31, 128, "fp16", True),
                ("lstm", 1024, 2, False, 128, 32, "fp16", False), ("lstm", 1024, 2, False, 128, 128, "tf32", False)]
    return [dict(zip(KEYS, p, strict=True)) for p in pts]


def build(p: dict, device: torch.device) -> tuple[nn.Module, torch.Tensor, torch.Tensor | None]:
    """The RNN, a random input that needs its gradient (the padded batch, time-major) and the packed lengths."""
    cls = MODES[p["mode"]][0]
    rnn = cls(p["hidden"], p["hidden"], p["layers"], bidirectional=p["bidirectional"])
    rnn = rnn.to(device=device, dtype=DTYPES[p["dtype"]])
    x = torch.randn(p["steps"], p["batch"], p["hidden"], device=device, dtype=DTYPES[p["dtype"]], requires_grad=True)
    lengths = torch.arange(p["steps"], p["steps"] - p["batch"], -1).clamp(min=1) if p["packed"] else None
    return rnn, x, lengths


def forward(rnn: nn.Module, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    if lengths is None:
        return rnn(x)[0]
    return rnn(nn.utils.rnn.pack_padded_sequence(x, lengths))[0].data


def rule(p: dict, forward_call: bool) -> dict:
    """What collectors/trace/rnn.py counts for the call (its RnnCall from the point, as the trace reads it)."""
    steps, batch = p["steps"], p["batch"]
    lengths = [max(1, steps - i) for i in range(batch)]   # build()'s, one step shorter each
    changes = len({sum(n > t for n in lengths) for t in range(steps)}) - 1 if p["packed"] else 0
    call = RnnCall(MODES[p["mode"]][1], p["hidden"], p["hidden"], p["layers"], 2 if p["bidirectional"] else 1, steps,
                   batch, p["packed"], p["dtype"] == "fp16", False, 0, forward_call, changes)
    return {"algorithm": algorithm(call), "cell_steps": call.cell_steps, "launches": rnn_launches(call)}


def kernels(p: dict, device: torch.device) -> dict:
    """The kernels launched under each RNN op in one profiled forward + backward, by name."""
    from torch.profiler import ProfilerActivity, profile
    rnn, x, lengths = build(p, device)
    forward(rnn, x, lengths).float().sum().backward()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        forward(rnn, x, lengths).float().sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
    out = {op: Counter() for op in OPS}
    for evt in prof.events():
        if evt.name in out:
            out[evt.name].update(name for name, _ in kernels_below(evt))
    return {op: dict(c.most_common()) for op, c in out.items()}


def issue(p: dict, device: torch.device, timer: Timer) -> dict:
    """The host's seconds to issue the forward and the backward, each from an idle GPU; the device's for both."""
    rnn, x, lengths = build(p, device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    fwd, bwd = [], []
    for i in range(WARMUP + REPEATS):
        sync()
        started = time.perf_counter()
        out = forward(rnn, x, lengths).float().sum()
        issued = time.perf_counter()
        sync()
        back = time.perf_counter()
        out.backward()
        done = time.perf_counter()
        if i >= WARMUP:
            fwd.append(issued - started)
            bwd.append(done - back)
    device_s = [timer(lambda: forward(rnn, x, lengths).float().sum().backward()) for _ in range(REPEATS)]
    return {"forward": _stats(fwd), "backward": _stats(bwd), "device": _stats(device_s)}


def run(small: bool, budget_s: float, device: torch.device) -> dict:
    timer, started = Timer(device), time.monotonic()
    doc = {"environment": environment(device), "small": small, "warmup": WARMUP, "repeats": REPEATS, "points": [],
           "skipped": [], "checks": {}}
    for p in grid(small):
        if time.monotonic() - started > budget_s:
            doc["skipped"].append(p)
            continue
        measured = kernels(p, device)
        doc["points"].append({**p, "rule": {op: rule(p, op == OPS[0]) for op in OPS},
                              "kernels": measured, "launches": {op: sum(k.values()) for op, k in measured.items()},
                              "issue_s": issue(p, device, timer)})
    doc["elapsed_s"] = time.monotonic() - started
    return doc


def table(doc: dict) -> str:
    """Per point and op: the rule's algorithm and launches beside the launches measured, and the issue time."""
    lines = []
    for r in doc["points"]:
        name = (f"{r['mode']:<8} h{r['hidden']:<5} L{r['layers']} {'bi' if r['bidirectional'] else 'uni'} "
                f"T{r['steps']:<4} B{r['batch']:<4} {r['dtype']:<5}{' packed' if r['packed'] else '':7}")
        for op, part in zip(OPS, ("forward", "backward"), strict=True):
            want = r["rule"][op]
            lines.append(f"{name} {part:<8} rule {want['algorithm']:<10} {want['launches']:5d}  measured "
                         f"{r['launches'][op]:5d}  issue {r['issue_s'][part]['median_s'] * 1e3:7.3f} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return _grid["grid_main"](argv, __doc__, OUT_NAME, 240.0, run, table, tf32=True)


if __name__ == "__main__":
    sys.exit(main())
