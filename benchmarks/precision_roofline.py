"""The per-op roofline of a workload at any precision and batches given, as the roofline collector profiles one
(collectors/roofline/collect.py `collect_roofline`: one step for allocations and autotuning, the plain step timed,
then the profiled steps; each op classed against this machine's roofs from its ceilings document). It made the
first tf32 profiles (2026-11-26), before the collector took tf32 itself (roofline collector 4): would a measured
split predict the published tf32 rows better than the FLOP/byte counts (docs/prediction-model.md § 4)? Runs on the
GPU host with torch and the standard library:

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.core.device import pick_device  # noqa: E402
from collectors.roofline.collect import NAME, VERSION, collect_roofline  # noqa: E402
from collectors.roofline.op_roofline import build_roofs  # noqa: E402
from collectors.workloads.sweep_plan import load_ceilings  # noqa: E402
from collectors.workloads.training import precision_unsupported  # noqa: E402
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
    with Progress("precision roofline", total=len(args.plan)) as progress:
        for name, batches in args.plan:
            payload = collect_roofline(name, roofs, device, progress, None, args.precision, batches)
            progress.advance(f"{name}: {payload.status}")
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
