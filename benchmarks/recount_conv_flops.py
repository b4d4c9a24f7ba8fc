"""Recount the FLOPs of committed documents whose grouped convolutions torch's counter overcounted.

Collections made before collectors/core/conv_flops.py counted a grouped convolution's weight gradient as a dense
one (torch's formula loses the group division): EfficientNet-B0's training step 14.0× its FLOPs, ResNeXt-101
32x4d's 1.62×. Only FLOP counts change here, never a time or a byte: they are a function of the model's shapes,
which this script counts again on the meta device (no GPU, no memory), each model once at batch 2. Every count is
linear in the batch, so a document's figures are scaled by the ratio of the two counts:

- a workload point's `flops_per_step` and `achieved_flops_fraction` by the step's ratio;
- a roofline op `aten::convolution_backward`'s `flops` and `math_s` by the op's ratio, and its class, `expected_s`
  and `efficiency` again by the roofline collector's rule (collectors/roofline/op_roofline.classify). `expected_s`
  is a sum of each call's larger roof, which the document keeps only summed: it becomes the larger of the op's two
  roofs and its old value less the FLOP time removed (both lower bounds of the per-call sum).

A document already counted right (its op or step within 1 % of the new count) is left as it is, so the script can
run again. Run: `PYTHONPATH=$PWD .venv/bin/python benchmarks/recount_conv_flops.py [folders…]` (default: results/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode, flop_registry

TORCH_FORMULA = flop_registry[torch.ops.aten.convolution_backward]  # before conv_flops replaces it
import collectors.core.conv_flops  # noqa: E402,F401 - the fixed formula, registered on import
from collectors.roofline.op_roofline import classify  # noqa: E402

OP = "aten::convolution_backward"
TOLERANCE = 0.01


def models() -> dict[str, torch.nn.Module]:
    """The workloads with grouped convolutions, built as their example files build them."""
    from examples.efficientnet_b0 import EfficientNet
    from examples.resnext101 import ResNeXt
    return {"efficientnet-b0": EfficientNet(), "resnext101-32x4d": ResNeXt()}


def per_sample(model: torch.nn.Module, torch_formula: bool) -> tuple[float, float]:
    """(the training step's FLOPs, convolution_backward's) per sample, with torch's formula or the fixed one."""
    TORCH_FORMULA._get_raw = True  # already shape-wrapped: FlopCounterMode must not wrap it again
    mapping = {torch.ops.aten.convolution_backward: TORCH_FORMULA} if torch_formula else {}
    meta = model.to("meta")
    counter = FlopCounterMode(display=False, custom_mapping=mapping)
    with counter:
        meta(torch.randn(2, 3, 224, 224, device="meta")).float().sum().backward()
    op = counter.get_flop_counts()["Global"].get(torch.ops.aten.convolution_backward, 0)
    return counter.get_total_flops() / 2, op / 2


def near(value: float, target: float) -> bool:
    return abs(value / target - 1) <= TOLERANCE


def fix_point(point: dict, wrong: float, right: float) -> bool:
    flops = point.get("flops_per_step")
    if not flops or not point.get("batch") or near(flops / point["batch"], right):
        return False
    point["flops_per_step"] = flops * right / wrong
    if point.get("achieved_flops_fraction") is not None:
        point["achieved_flops_fraction"] *= right / wrong
    return True


def fix_op(op: dict, batch: int, wrong: float, right: float, launch: float | None) -> bool:
    if op.get("name") != OP or not op.get("flops") or near(op["flops"] / batch, right):
        return False
    k = right / wrong
    old_math = op.get("math_s")
    op["flops"] *= k
    if old_math is not None:
        op["math_s"] = old_math * k
        roofs = [v for v in (op["math_s"], op.get("memory_s")) if v is not None]
        if op.get("expected_s") is not None:
            op["expected_s"] = max(max(roofs), op["expected_s"] - (old_math - op["math_s"]))
        time = op["time_s"]["median"]
        op["efficiency"] = op["expected_s"] / time if op.get("expected_s") is not None and time > 0 else None
        op["op_class"] = classify(op["math_s"], op.get("memory_s"), op.get("expected_s"), time, op["calls"], launch)
    return True


def fix_document(path: Path, counts: dict[str, tuple[tuple[float, float], tuple[float, float]]]) -> bool:
    doc = json.loads(path.read_text(encoding="utf-8"))
    payload = doc.get("payload", {})
    if payload.get("workload") not in counts:
        return False
    (wrong_step, wrong_op), (right_step, right_op) = counts[payload["workload"]]
    changed = False
    if doc.get("kind") == "workload":
        changed = any([fix_point(p, wrong_step, right_step) for p in payload.get("points", [])])
    elif doc.get("kind") == "roofline":
        launch = (payload.get("roofs") or {}).get("launch_latency_s")
        for at in [payload, *(payload.get("batches") or [])]:
            changed |= any([fix_op(op, at["batch"], wrong_op, right_op, launch) for op in at.get("ops") or []])
    if changed:
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv] or [Path("results")]
    counts = {name: (per_sample(m, True), per_sample(m, False)) for name, m in models().items()}
    for name, ((ws, wo), (rs, ro)) in counts.items():
        print(f"{name}: step {ws / 1e9:.2f} -> {rs / 1e9:.2f} GFLOP a sample, {OP} {wo / 1e9:.2f} -> {ro / 1e9:.2f}")
    for folder in folders:
        for path in sorted(folder.rglob("*.json")):
            if path.name.startswith(("workload-", "roofline-")) and fix_document(path, counts):
                print(f"recounted {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
