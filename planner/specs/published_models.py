"""Published tables of many models on one GPU (`model_tables` of `published_throughput.json`), to check the planner.

The per-GPU tables beside them (planner/specs/published.py) time one model on many GPUs, an H100 or H200 among them;
these time many models on one GPU we never measured (timm's RTX 3090 training benchmark), so each row is checked
against a prediction for that GPU, and each model's rate over the table's `reference_model` row (ResNet-50) against
the same ratio predicted, which removes the published host and clocks. Rows are only the models gpuplan has a
workload of: `workload` is its name, `published_name` the table's; a row whose model differs from ours says how in
`note` (`proxy` where the parameter counts differ). Figures transcribed exactly, each row citing its CSV line.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from planner.specs.catalog_checks import EntryReader, read_tables
from planner.specs.gpus import load_gpu_catalog
from planner.specs.published import KIND, MODEL_TABLES, PRECISIONS, PUBLISHED_FILE, SCHEMA_VERSION, TASKS

LAYOUTS = ("channels_last", "nchw")
_OPTIONAL_ROW_FIELDS = ("note",)


@dataclass(frozen=True)
class ModelRow:
    """One model's published figure on the table's GPU."""

    workload: str           # the gpuplan workload this model is (examples/*.py, a reference workload)
    published_name: str     # the table's name for it (timm's model name)
    throughput_per_s: float
    batch: int
    image_size: int
    param_count_m: float    # as published, millions
    cite: str
    note: str | None = None


@dataclass(frozen=True)
class ModelTable:
    """One source's measurements of many models on one GPU with one stack, precision and memory layout."""

    id: str
    source: str
    url: str
    retrieved: str
    stack: str
    gpu: str                # a catalog name
    gpu_label: str
    task: str
    precision: str
    layout: str             # the inputs' and weights' memory format: channels_last (NHWC) or nchw
    unit: str
    reference_model: str    # the workload every row's ratio is taken to (a row of this table or of `reference_table`)
    reference_table: str | None  # where the reference row is another table's of the same host (None: this table's)
    notes: str
    rows: tuple[ModelRow, ...]

    def row(self, workload: str) -> ModelRow | None:
        return next((r for r in self.rows if r.workload == workload), None)


ROW_FIELDS = tuple(f.name for f in fields(ModelRow))
TABLE_FIELDS = tuple(f.name for f in fields(ModelTable))


def _read_row(path: Path, where: str, entry: dict[str, Any]) -> ModelRow:
    reader = EntryReader(path, where, {k: None for k in _OPTIONAL_ROW_FIELDS} | entry, ROW_FIELDS)
    return ModelRow(workload=reader.text("workload"), published_name=reader.text("published_name"),
                    throughput_per_s=reader.number("throughput_per_s"), batch=reader.number("batch", whole=True),
                    image_size=reader.number("image_size", whole=True),
                    param_count_m=reader.number("param_count_m"), cite=reader.url("cite"),
                    note=reader.text("note", nullable=True))


def _read_table(path: Path, where: str, entry: dict[str, Any], catalog_names: set[str]) -> ModelTable:
    reader = EntryReader(path, where, {"reference_table": None} | entry, TABLE_FIELDS)
    gpu = reader.text("gpu")
    if gpu not in catalog_names:
        raise reader.fail("gpu", f"must be a GPU name of planner/specs/gpus.json, not {gpu!r}")
    rows: list[ModelRow] = []
    for i, raw in enumerate(reader.objects("rows")):
        row = _read_row(path, f"{where}.rows[{i}]", raw)
        if any(r.workload == row.workload for r in rows):
            raise reader.fail(f"rows[{i}].workload", f"{row.workload!r} has an earlier row in this table")
        rows.append(row)
    reference_table = reader.text("reference_table", nullable=True)
    reference = reader.text("reference_model")
    if reference_table is None and not any(r.workload == reference for r in rows):
        raise reader.fail("reference_model", f"{reference!r} has no row here and no reference_table names another")
    return ModelTable(
        id=reader.text("id"), source=reader.text("source"), url=reader.url("url"),
        retrieved=reader.date("retrieved"), stack=reader.text("stack"), gpu=gpu, gpu_label=reader.text("gpu_label"),
        task=reader.choice("task", TASKS), precision=reader.choice("precision", PRECISIONS),
        layout=reader.choice("layout", LAYOUTS), unit=reader.text("unit"), reference_model=reference,
        reference_table=reference_table, notes=reader.text("notes"), rows=tuple(rows))


def read_model_tables(path: Path | str) -> list[ModelTable]:
    """Every model table of a published-throughput file, checked field by field (CatalogError, a ValueError); a
    `reference_table` must name another model table of the file that has the reference model's row."""
    catalog_names = {spec.name for spec in load_gpu_catalog()}
    path = Path(path)
    tables = read_tables(path, SCHEMA_VERSION, KIND,
                         lambda p, where, entry: _read_table(p, where, entry, catalog_names),
                         key=MODEL_TABLES, optional=("tables",))
    by_id = {t.id: t for t in tables}
    for i, t in enumerate(tables):
        other = by_id.get(t.reference_table) if t.reference_table else t
        if other is None or other.row(t.reference_model) is None or other.gpu != t.gpu:
            raise EntryReader(path, f"{MODEL_TABLES}[{i}]", {}, ()).fail(
                "reference_table", f"{t.reference_table!r} is no model table of {t.gpu} with a "
                                   f"{t.reference_model!r} row")
    return tables


def load_model_tables(path: Path | str | None = None) -> list[ModelTable]:
    """The committed model tables (`planner/specs/published_throughput.json`), or those of `path`."""
    return read_model_tables(PUBLISHED_FILE if path is None else path)


def reference_row(table: ModelTable, tables: list[ModelTable]) -> ModelRow:
    """The row every ratio of `table` is taken to: its own reference model's, or its reference table's."""
    source = next(t for t in tables if t.id == table.reference_table) if table.reference_table else table
    row = source.row(table.reference_model)
    assert row is not None  # read_model_tables checked it
    return row
