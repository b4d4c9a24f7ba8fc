"""The per-op roofline of a workload at a precision the roofline collector does not profile (it profiles bf16 only,
fp16 where there is no bf16), at the batches given: does a tf32 step split like its bf16 twin, and would a measured
split predict the published tf32 rows better than the FLOP/byte counts do (docs/prediction-model.md § 4)?

Each batch is profiled as the collector profiles one (collectors/roofline/collect.py `profile_batch`: one step for
allocations and autotuning, the plain step timed, then the profiled steps; each op classed against this machine's
roofs from its ceilings document). Runs on the GPU host with torch and the standard library:

    python3 benchmarks/precision_roofline.py --machine-dir results/h100-80gb --precision tf32 \\
        --workload resnet50 --batch 256 --workload examples/bert_squad.py:build --batch 160 [--out FILE.json]

`--batch` belongs to the `--workload` before it (repeat it for several batches; the first is the document's main
batch). The output holds one roofline document per workload ({"documents": [...]}, each as the collector would
save it); it stays under diagnostics/ and is read by no planner code.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.core.device import pick_device  # noqa: E402
from collectors.roofline.collect import NAME, VERSION, profile_batch  # noqa: E402
from collectors.roofline.op_roofline import build_roofs  # noqa: E402
from collectors.workloads.sweep_plan import instantiate, load_ceilings  # noqa: E402
from collectors.workloads.training import Variant, precision_unsupported  # noqa: E402
from gpuplan_schema.payloads import RooflinePayload  # noqa: E402
from gpuplan_schema.progress import Progress  # noqa: E402
from gpuplan_schema.schema import build_document, document_to_dict  # noqa: E402


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine-dir", type=Path, required=True, help="the machine folder with ceilings.json")
    parser.add_argument("--precision", default="tf32", help="the precision to profile (default: tf32)")
    parser.add_argument("--workload", action="append", default=[], help="a built-in name or FILE.py:FN (repeat)")
    parser.add_argument("--batch", action="append", type=int, default=[], help="a batch of the workload before it")
    parser.add_argument("--out", type=Path, help="write the documents here (JSON)")
    args = parser.parse_args(argv)
    args.plan = plan_batches(list(argv if argv is not None else sys.argv[1:]))  # each --batch after its --workload
    if not args.plan:
        parser.error("give at least one --workload with a --batch after it")
    return args


def plan_batches(tokens: list[str]) -> list[tuple[str, list[int]]]:
    """[(workload, [batches])] in the order given: each --batch belongs to the --workload before it."""
    plan: list[tuple[str, list[int]]] = []
    for flag, value in zip(tokens, tokens[1:], strict=False):
        if flag == "--workload":
            plan.append((value, []))
        elif flag == "--batch" and plan:
            plan[-1][1].append(int(value))
    return [(w, b) for w, b in plan if b]


def profile_workload(name: str, batches: list[int], precision: str, roofs, device: torch.device,  # noqa: ANN001
                     progress: Progress) -> RooflinePayload:
    started = time.perf_counter()
    workload = instantiate(name, device)
    profiled = []
    for b in batches:
        profiled.append(profile_batch(workload, precision, b, Variant(), roofs, device, progress))
        progress.advance(f"{name} batch {b}: {profiled[-1].status}")
    first, others = profiled[0], profiled[1:]
    return RooflinePayload(
        workload=workload.name, source=workload.source, device=device.type, precision=precision, batch=batches[0],
        training=workload.training, roofs=roofs, scale="tiny" if device.type == "cpu" else "reference",
        timer=device.type, status=first.status,
        reason=first.reason, steps=first.steps, step_s=first.step_s, unattributed_s=first.unattributed_s,
        unmatched_calls=first.unmatched_calls, ops=first.ops, batches=others, variant=first.variant,
        elapsed_s=time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device = pick_device()
    why = precision_unsupported(args.precision, device)
    if why:  # on a CPU only fp32 runs: the path is tested there at the workloads' tiny sizes
        print(f"precision_roofline.py: this device does not run {args.precision} ({why})", file=sys.stderr)
        return 2
    folder = args.machine_dir
    roofs = build_roofs(load_ceilings(folder), device.type, str(folder / "ceilings.json"))
    documents = []
    with Progress("precision roofline", total=sum(len(b) for _, b in args.plan)) as progress:
        for name, batches in args.plan:
            payload = profile_workload(name, batches, args.precision, roofs, device, progress)
            doc = build_document("roofline", NAME, VERSION, folder.name, payload)
            documents.append(document_to_dict(doc))
            print(f"{payload.workload} {args.precision}: " + ", ".join(
                f"batch {b.batch} {b.status}" + (f" {b.step_s.median * 1e3:.1f} ms" if b.step_s else "")
                for b in payload.profiled()), flush=True)
            if args.out:  # after each workload: a run cut by its time limit keeps what it profiled
                args.out.parent.mkdir(parents=True, exist_ok=True)
                text = json.dumps({"precision": args.precision, "documents": documents}, indent=1) + "\n"
                args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
