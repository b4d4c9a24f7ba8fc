"""Published single-GPU training throughput tables (`published_throughput.json`), to check the planner.

The planner predicts throughput on GPUs we never ran on from our own H100 / H200 measurements. A
published table that measured an H100 (or H200) and other GPUs with one software stack gives the
ratio target / H100 to hold those predictions against. Each table is one source and one stack;
numbers are transcribed exactly as published, each row citing the file and line it came from.
A row whose stack differs from its table's names its own `stack` and is left out of `ratios` unless
asked for. A table whose published step ran under torch.compile says `"compiled": true` (absent:
false). A bad field stops with one line naming the file and the field, e.g.
`planner/specs/published_throughput.json: tables[3].rows[1].throughput_per_s: must be a number > 0, not -5`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from planner.specs.catalog_checks import EntryReader, read_tables
from planner.specs.gpus import SPECS_DIR, load_gpu_catalog, match_gpu

PUBLISHED_FILE = SPECS_DIR / "published_throughput.json"
SCHEMA_VERSION = 1
KIND = "published_throughput"
PRECISIONS = ("amp", "tf32", "fp32", "bf16")
TASKS = ("training",)
# The GPUs we measure on: every table needs one of them, measured with the table's own stack.
REFERENCE_GPUS = ("H100 SXM", "H200 SXM")
_OPTIONAL_ROW_FIELDS = ("stack", "note", "informed")
# Table fields a table may leave out, with the value it then has.
_OPTIONAL_TABLE_FIELDS = {"compiled": False}
# The file's second list: one GPU, many models (timm's RTX 3090 tables; planner/specs/published_models.py)
MODEL_TABLES = "model_tables"


@dataclass(frozen=True)
class PublishedRow:
    """One GPU's published figure. `gpu` is the catalog name, None where the catalog lacks the GPU
    (then `note` says so); `gpu_label` is the name as published; `cite` the file and line."""

    gpu: str | None
    gpu_label: str
    throughput_per_s: float
    batch: int | None
    cite: str
    stack: str | None = None  # only where this row's stack differs from its table's
    note: str | None = None
    informed: str | None = None  # what this row changed in the model (a choice made on it); None: only checked

    @property
    def same_stack(self) -> bool:
        return self.stack is None


@dataclass(frozen=True)
class PublishedTable:
    """One source's measurements with one software stack (`stack`), one model and precision."""

    id: str
    source: str
    url: str
    retrieved: str
    stack: str
    model: str
    task: str
    precision: str
    unit: str
    batch: int | None  # the per-GPU batch where the whole table used one, else None (see rows)
    notes: str
    rows: tuple[PublishedRow, ...]
    compiled: bool = False  # the published step ran under torch.compile: compared with our torch.compile trials

    def row(self, gpu: str) -> PublishedRow | None:
        """The row of a catalog GPU (any name or alias the catalog knows), or None."""
        spec = match_gpu(gpu)
        name = spec.name if spec else gpu
        return next((r for r in self.rows if r.gpu == name), None)


ROW_FIELDS = tuple(f.name for f in fields(PublishedRow))
TABLE_FIELDS = tuple(f.name for f in fields(PublishedTable))


def _read_row(path: Path, where: str, entry: dict[str, Any], catalog_names: set[str]) -> PublishedRow:
    filled = {k: None for k in _OPTIONAL_ROW_FIELDS} | entry
    reader = EntryReader(path, where, filled, ROW_FIELDS)
    gpu = reader.text("gpu", nullable=True)
    if gpu is not None and gpu not in catalog_names:
        spec = match_gpu(gpu)
        hint = f" (the catalog spells it {spec.name!r})" if spec else ""
        raise reader.fail("gpu", f"must be a GPU name of planner/specs/gpus.json or null, not {gpu!r}{hint}")
    note = reader.text("note", nullable=True)
    if gpu is None and note is None:
        raise reader.fail("note", "must say why the row has no catalog gpu")
    batch = reader.number("batch", whole=True, nullable=True)
    return PublishedRow(gpu=gpu, gpu_label=reader.text("gpu_label"),
                        throughput_per_s=reader.number("throughput_per_s"),
                        batch=batch, cite=reader.url("cite"),
                        stack=reader.text("stack", nullable=True), note=note,
                        informed=reader.text("informed", nullable=True))


def _read_table(path: Path, where: str, entry: dict[str, Any], catalog_names: set[str]) -> PublishedTable:
    entry = _OPTIONAL_TABLE_FIELDS | entry
    reader = EntryReader(path, where, entry, TABLE_FIELDS)
    if not isinstance(entry["compiled"], bool):
        raise reader.fail("compiled", f"must be true or false, not {entry['compiled']!r}")
    rows = [_read_row(path, f"{where}.rows[{i}]", raw, catalog_names) for i, raw in enumerate(reader.objects("rows"))]
    seen: set[str] = set()
    for i, row in enumerate(rows):
        if row.gpu is not None and row.gpu in seen:
            raise reader.fail(f"rows[{i}].gpu", f"{row.gpu!r} has an earlier row in this table (one row per GPU)")
        seen.add(row.gpu or "")
    if not any(r.gpu in REFERENCE_GPUS and r.same_stack for r in rows):
        raise reader.fail("rows", f"must include a row of {' or '.join(REFERENCE_GPUS)} measured with "
                                  "the table's stack (no 'stack' of its own)")
    batch = reader.number("batch", whole=True, nullable=True)
    return PublishedTable(
        id=reader.text("id"), source=reader.text("source"), url=reader.url("url"),
        retrieved=reader.date("retrieved"), stack=reader.text("stack"), model=reader.text("model"),
        task=reader.choice("task", TASKS), precision=reader.choice("precision", PRECISIONS),
        unit=reader.text("unit"), batch=batch, notes=reader.text("notes"), rows=tuple(rows),
        compiled=entry["compiled"])


def read_published(path: Path | str) -> list[PublishedTable]:
    """Every table of a published-throughput file, checked field by field (CatalogError, a ValueError)."""
    catalog_names = {spec.name for spec in load_gpu_catalog()}
    return read_tables(Path(path), SCHEMA_VERSION, KIND,
                       lambda path, where, entry: _read_table(path, where, entry, catalog_names),
                       optional=(MODEL_TABLES,))


def load_published(path: Path | str | None = None) -> list[PublishedTable]:
    """The committed tables (`planner/specs/published_throughput.json`), or those of `path`."""
    return read_published(PUBLISHED_FILE if path is None else path)


def ratios(table: PublishedTable, reference: str = "H100 SXM", *,
           include_other_stacks: bool = False) -> dict[str, float]:
    """Published throughput of each other catalog GPU divided by the reference GPU's, keyed by
    catalog name. Rows without a catalog gpu are left out, and so are rows of another stack than
    the table's unless `include_other_stacks`. `reference` may be any name or alias the catalog
    knows ('H100-SXM'); KeyError where the table has no same-stack row for it."""
    ref = table.row(reference)
    if ref is None or not ref.same_stack:
        raise KeyError(f"table {table.id!r} has no row of {reference!r} measured with its own stack")
    return {r.gpu: r.throughput_per_s / ref.throughput_per_s for r in table.rows
            if r.gpu is not None and r is not ref and (r.same_stack or include_other_stacks)}
