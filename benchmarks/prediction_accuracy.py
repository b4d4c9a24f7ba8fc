"""Print the planner's prediction accuracy on the committed results: every measured pair of GPUs both
ways (the model beside one-spec-ratio answers), errors by regime, and the published cross-architecture
check (planner/model/accuracy_markdown.py). Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/prediction_accuracy.py [RESULTS_ROOT]
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpuplan_schema.results import load_results_root
from planner.model.accuracy_markdown import render_accuracy_markdown


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("results")
    print(render_accuracy_markdown(list(load_results_root(root))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
