"""Published data-parallel scaling (`published_scaling.json`), to check the planner's multi-GPU efficiency.

Lambda's benchmark trained the models of its single-GPU tables on 2, 4 and 8 GPUs of one host at the
1-GPU per-GPU batch. The efficiency of a row is what N GPUs did over N × one GPU of the same host; the
1-GPU step (per-GPU batch ÷ the 1-GPU throughput) is the compute the gradient sync was added to. Rows
that cannot be read as scaling stay in the file with the reason (`excluded`), left out of every check.
A bad field stops with one line naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from planner.specs.catalog_checks import CatalogError, EntryReader, read_json_object
from planner.specs.gpus import SPECS_DIR, load_gpu_catalog

SCALING_FILE = SPECS_DIR / "published_scaling.json"
KIND = "published_scaling"
INTERCONNECTS = ("nvlink", "pcie")
PRECISIONS = ("amp", "fp32")
ROW_FIELDS = ("system", "gpu", "gpu_label", "gpus", "interconnect", "model", "per_gpu_batch", "global_batch",
              "one_gpu_per_s", "gpus_per_s", "cite", "one_gpu_cite", "excluded")
MODEL_FIELDS = ("parameters", "tokens_per_sample", "source")
TOP_FIELDS = ("schema_version", "kind", "source", "retrieved", "stack", "units", "interconnect_note", "left_out",
              "models", "tables")


@dataclass(frozen=True)
class ScalingRow:
    """One published N-GPU figure beside its host's 1-GPU figure (throughput in the table's unit)."""

    table: str
    precision: str
    system: str
    gpu: str            # catalog name
    gpus: int
    interconnect: str   # "nvlink" or "pcie"
    model: str          # gpuplan's workload of the same model
    per_gpu_batch: int
    one_gpu_per_s: float
    gpus_per_s: float
    parameters: int
    tokens_per_sample: int | None
    cite: str
    excluded: str | None

    @property
    def efficiency(self) -> float:
        return self.gpus_per_s / (self.gpus * self.one_gpu_per_s)

    @property
    def step_s(self) -> float:
        """The 1-GPU step of the host: the compute the N-GPU step adds its gradient sync to."""
        return self.per_gpu_batch * (self.tokens_per_sample or 1) / self.one_gpu_per_s


def _row(path: Path, where: str, entry: dict[str, Any], table: dict[str, Any], models: dict[str, dict],
         gpus: set[str]) -> ScalingRow:
    reader = EntryReader(path, where, {"excluded": None} | entry, ROW_FIELDS)
    gpu, model = reader.text("gpu"), reader.text("model")
    if gpu not in gpus:
        raise reader.fail("gpu", f"must be a GPU name of planner/specs/gpus.json, not {gpu!r}")
    if model not in models:
        raise reader.fail("model", f"must be one of the file's models ({', '.join(models)}), not {model!r}")
    count, per_gpu = reader.number("gpus", whole=True), reader.number("per_gpu_batch", whole=True)
    if count < 2:
        raise reader.fail("gpus", f"must be 2 or more (a multi-GPU row), not {count}")
    if reader.number("global_batch", whole=True) != per_gpu * count:
        raise reader.fail("global_batch", f"must be per_gpu_batch × gpus = {per_gpu * count} (weak scaling)")
    return ScalingRow(
        table=table["id"], precision=table["precision"], system=reader.text("system"), gpu=gpu, gpus=count,
        interconnect=reader.choice("interconnect", INTERCONNECTS), model=model, per_gpu_batch=per_gpu,
        one_gpu_per_s=reader.number("one_gpu_per_s"), gpus_per_s=reader.number("gpus_per_s"),
        parameters=models[model]["parameters"], tokens_per_sample=models[model]["tokens_per_sample"],
        cite=reader.text("cite"), excluded=reader.text("excluded", nullable=True))


def _models(path: Path, raw: Any) -> dict[str, dict]:
    if not isinstance(raw, dict) or not raw:
        raise CatalogError(path, "models", "must be an object of model name → {parameters, tokens_per_sample, source}")
    out = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict):
            raise CatalogError(path, f"models.{name}", "must be an object")
        reader = EntryReader(path, f"models.{name}", entry, MODEL_FIELDS)
        reader.text("source")
        out[name] = {"parameters": reader.number("parameters", whole=True),
                     "tokens_per_sample": reader.number("tokens_per_sample", whole=True, nullable=True)}
    return out


def read_published_scaling(path: Path | str) -> list[ScalingRow]:
    """Every row of a published-scaling file, excluded ones included, checked field by field."""
    path = Path(path)
    raw = read_json_object(path, TOP_FIELDS)
    if raw["kind"] != KIND or raw["schema_version"] != 1:
        raise CatalogError(path, "kind", f"must be {KIND!r} at schema_version 1")
    models = _models(path, raw["models"])
    gpus = {g.name for g in load_gpu_catalog()}
    rows = []
    for i, table in enumerate(raw["tables"] if isinstance(raw["tables"], list) else []):
        where = f"tables[{i}]"
        if not isinstance(table, dict) or table.get("precision") not in PRECISIONS or not table.get("id"):
            raise CatalogError(path, where, f"must be an object with an id and a precision of {', '.join(PRECISIONS)}")
        for j, entry in enumerate(table.get("rows") or []):
            if not isinstance(entry, dict):
                raise CatalogError(path, f"{where}.rows[{j}]", "must be an object")
            rows.append(_row(path, f"{where}.rows[{j}]", entry, table, models, gpus))
    if not rows:
        raise CatalogError(path, "tables", "must hold at least one row")
    return rows


def load_published_scaling(path: Path | str | None = None) -> list[ScalingRow]:
    """The committed rows (`planner/specs/published_scaling.json`, read once, as the catalogs are), or those of
    `path`."""
    return list(_committed_rows()) if path is None else read_published_scaling(path)


@lru_cache(maxsize=1)
def _committed_rows() -> tuple[ScalingRow, ...]:
    return tuple(read_published_scaling(SCALING_FILE))
