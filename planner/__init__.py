"""gpuplan's planner: the model, the export, the report, the site.

The public Python API is `load_results`; everything else is reached through the `gpuplan` command.
pandas is imported inside the function, so `import planner.model` (what `gpuplan plan` needs) stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_results"]


def load_results(path: str | Path) -> pd.DataFrame:
    """Every measured figure under `path` (a machine folder `results/<machine>/` or a results root) as the
    tidy table: one row per figure, columns `machine, gpu, collector, workload, precision, batch, variant,
    metric, value, unit, spread, n, status` (what `gpuplan export` writes). `batch` and `n` are nullable
    Int64, `value` and `spread` float64, `status` categorical; a bad document raises
    `gpuplan_schema.schema.DocumentError` naming its file and field."""
    from planner.export.frame import load_frame

    return load_frame([path])
