"""timm's RTX 3090 training tables (planner/specs/published_throughput.json `model_tables`) against gpuplan, two ways
(issues 39 and 41; planner/check/model_tables.py decides, this prints):

1. Measured: each model predicted on the RTX 3090 from our H200 and H100 collections of it, absolute and as the ratio
   to ResNet-50's row, each against its band (built from the committed results without the model's family).
2. Trace-only (`--plan PLAN_JSON`): a plan of the models' CPU traces for the RTX 3090, made with

       PYTHONPATH=$PWD python -m collectors.trace resnet50 examples/vit_tiny.py:build_b16 examples/vit_tiny.py:build \\
           examples/resnet18.py:build examples/efficientnet_b0.py:build examples/mobilenet_v3.py:build \\
           examples/convnext_tiny.py:build examples/swin_tiny.py:build examples/resnext101.py:build \\
           --out /tmp/timm-traces --machine timm
       gpuplan plan /tmp/timm-traces/timm --json --target "RTX 3090" > plan.json

    PYTHONPATH=$PWD python benchmarks/timm_rtx3090.py [--plan plan.json] [--json rows.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplan_schema.results import load_results_root  # noqa: E402
from planner.check.bands import band_table_for  # noqa: E402
from planner.check.model_tables import measured_checks, render, trace_checks  # noqa: E402
from planner.specs.published_models import load_model_tables  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results", help="the results root (default: results/)")
    parser.add_argument("--plan", type=Path, help="a trace-only plan's JSON for the RTX 3090, scored as well")
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args(argv)
    tables = load_model_tables()
    measured = measured_checks(band_table_for(load_results_root(args.results)), tables, args.results)
    rows = [c.__dict__ | {"error": c.error, "ratio_error": c.ratio_error} for c in measured]
    for source in dict.fromkeys(c.source for c in measured):
        print(render([c for c in measured if c.source == source], f"timm RTX 3090 from the {source}"))
    if args.plan:
        traced = trace_checks(json.loads(args.plan.read_text()), tables)
        print(render(traced, "timm RTX 3090, trace-only plan"))
        rows += [c.__dict__ | {"error": c.error, "ratio_error": c.ratio_error} for c in traced]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
