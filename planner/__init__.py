"""gpuplan's planner: what it decides (model, scaling, check, rank, plan), the export, the report, the site.

The public Python API is `load_results`; everything else is reached through the `gpuplan` command.
pandas is imported inside the function, so `import planner.plan.plan` (what `gpuplan plan` needs) stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_results"]


def load_results(path: str | Path) -> pd.DataFrame:
    """Every measured figure under `path` (a machine folder `results/<machine>/` or a results root) as the
    tidy table (what `gpuplan export` writes): one row per figure, each setting it was measured under in a
    typed column of its own, identified by the key columns `planner.export.rows.KEY` (docs/metrics.md).
    Counts are nullable Int64, settings nullable boolean, `value` and `spread` float64, `status` (the
    outcome) and `bound` categorical; a bad document raises `gpuplan_schema.schema.DocumentError` naming
    its file and field."""
    from planner.export.frame import load_frame

    return load_frame([path])
