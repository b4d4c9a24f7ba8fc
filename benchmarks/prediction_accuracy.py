"""Print the planner's prediction accuracy on the committed results: every measured pair of GPUs both
ways (the model beside one-spec-ratio answers), errors by regime, and the published cross-architecture
check (planner/check/accuracy_markdown.py). Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/prediction_accuracy.py [RESULTS_ROOT]

The accuracy page of the site and docs/accuracy.md show the same tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpuplan_schema.results import load_results_root
from gpuplan_schema.schema import DocumentError
from planner.check.accuracy_markdown import render_accuracy_markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("results"),
                        help="a results root: one folder per machine (default: results)")
    args = parser.parse_args(argv)
    try:
        machines = list(load_results_root(args.root))
    except DocumentError as e:
        print(f"prediction_accuracy: {e}", file=sys.stderr)
        return 2
    print(render_accuracy_markdown(machines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
