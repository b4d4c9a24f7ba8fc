"""Count, in committed workload documents, the FLOPs cuDNN can run as Winograd on CUDA cores (winograd_flops_per_step).

Collections before 2026-11-29 did not count them (collectors/core/winograd_flops.py): the dense 3×3 stride-1
convolutions' forward and input gradient. They are a function of the model's shapes, so this script counts them on
the meta device (no GPU), each workload once at batch 2 in fp32, and writes the count per sample × each point's batch
into every point that has `flops_per_step` (a convolution's FLOPs are linear in the batch at a fixed image size). Only
workloads with a 3×3 convolution are written; no time, byte or other FLOP field changes, and a point already counted
is left as it is, so the script can run again. The workload is built from the document's own `source` (a built-in name
or examples/X.py:function). Run: `PYTHONPATH=$PWD .venv/bin/python benchmarks/count_winograd_flops.py [folders…]`
(default: results/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from collectors.core.winograd_flops import WinogradFlopCounter
from collectors.workloads import BUILTIN, load_workload

BATCH = 2


def per_sample(spec: str, name: str) -> float | None:
    """Winograd-eligible FLOPs per sample of the workload `spec` (None: it has no 3×3 convolution, or `spec` builds
    another workload than the document's `name`: an example file's other function)."""
    workload = load_workload(spec)
    threes = (m for m in workload.model.modules() if isinstance(m, torch.nn.Conv2d) and tuple(m.kernel_size) == (3, 3))
    if workload.name != name or not any(True for _ in threes):
        return None
    meta = torch.device("meta")
    model = workload.model.to(meta)
    inputs, targets = workload.make_batch(BATCH, meta)
    counter = WinogradFlopCounter()  # the forward and backward (the optimizer runs no convolution)
    with counter:
        out = workload.run(model, inputs) if workload.run else model(inputs)
        loss = workload.loss(out, targets) if workload.loss else out.float().sum()
        loss.backward()
    return counter.flops / BATCH


def spec_of(payload: dict) -> str | None:
    """The workload to build: a built-in by name, else its example file's `build` (a path recorded absolute from
    another checkout is read from this one's examples/)."""
    name, source = payload.get("workload"), payload.get("source") or ""
    if name in BUILTIN:
        return name
    if not source.endswith(".py"):
        return None
    path = Path(source)
    if path.is_absolute() or not path.is_file():
        path = Path("examples") / path.name
    return f"{path}:build" if path.is_file() else None


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv] or [Path("results")]
    counted: dict[str, float | None] = {}
    for folder in folders:
        for path in sorted(folder.rglob("workload-*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            payload = doc.get("payload", {})
            spec = spec_of(payload)
            if doc.get("kind") != "workload" or spec is None:
                continue
            key = f"{spec} {payload['workload']}"
            if key not in counted:
                try:
                    counted[key] = per_sample(spec, payload["workload"])
                except RuntimeError as e:  # a step the meta device cannot run: its documents stay uncounted
                    print(f"{key}: not counted ({str(e).splitlines()[0]})")
                    counted[key] = None
                    continue
                print(f"{key}: {counted[key] or 0:.4g} Winograd-eligible FLOPs a sample")
            each = counted[key]
            if each is None:
                continue
            changed = False
            for point in payload.get("points", []):
                if point.get("flops_per_step") and point.get("winograd_flops_per_step") is None:
                    point["winograd_flops_per_step"] = each * point["batch"]
                    changed = True
            if changed:
                path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
                print(f"counted {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
