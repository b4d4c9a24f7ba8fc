"""Published single-GPU training tables in which no GPU we measure appears (`published_pairs.json`): NVIDIA
DeepLearningExamples' DGX A100 and DGX-1 V100 rows. Each table is one model of one source, with a row per GPU and
precision; the check (planner/check/pairs.py) compares its rows with each other, as ratios between two GPUs of the
table or between two precisions of one GPU, because two data pipelines make the absolute rates incomparable.

A table's `twin` says how gpuplan's workload of the same name relates to the published model: `same` (defined the
same way: scored), `proxy` (the same network in another configuration, e.g. BERT-large pretraining at sequence 128
against our SQuAD step at 384: scored apart, beside the same-model rows) or `none` (listed, not scored). A bad
field stops with one line naming the file and the field, e.g.
`planner/specs/published_pairs.json: tables[2].rows[1].precision: must be one of amp, tf32, fp32, not 'fp8'`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from planner.specs.catalog_checks import EntryReader, read_tables
from planner.specs.gpus import SPECS_DIR, load_gpu_catalog

PAIRS_FILE = SPECS_DIR / "published_pairs.json"
SCHEMA_VERSION = 1
KIND = "published_pairs"
PRECISIONS = ("amp", "tf32", "fp32")   # amp: fp16 autocast (or apex); fp32 on a V100 is plain fp32, tf32 on Ampere
TWINS = ("same", "proxy", "none")
LAYOUTS = ("channels_last", "nchw", "n/a")


@dataclass(frozen=True)
class PairRow:
    """One GPU's published figure at one precision; `cite` is the file at a commit and its line."""

    gpu: str
    gpu_label: str
    precision: str
    throughput_per_s: float
    batch: int
    layout: str   # the published run's tensor layout (channels_last, nchw; n/a where no convolution)
    cite: str
    note: str | None = None


@dataclass(frozen=True)
class PairTable:
    id: str
    source: str
    url: str
    commit: str
    retrieved: str
    stack: str
    model: str     # the gpuplan workload compared with it
    twin: str      # same / proxy / none: how that workload relates to the published model
    twin_layout: str  # the layout gpuplan's workload runs in (a row in another is compared apart, as a proxy)
    task: str
    unit: str
    notes: str
    rows: tuple[PairRow, ...]

    def row(self, gpu: str, precision: str) -> PairRow | None:
        return next((r for r in self.rows if r.gpu == gpu and r.precision == precision), None)

    @property
    def gpus(self) -> list[str]:
        """The table's GPUs in the order of their first row."""
        return list(dict.fromkeys(r.gpu for r in self.rows))


ROW_FIELDS = tuple(f.name for f in fields(PairRow))
TABLE_FIELDS = tuple(f.name for f in fields(PairTable))


def _read_row(path: Path, where: str, entry: dict[str, Any], commit: str, names: set[str]) -> PairRow:
    reader = EntryReader(path, where, {"note": None} | entry, ROW_FIELDS)
    gpu = reader.text("gpu")
    if gpu not in names:
        raise reader.fail("gpu", f"must be a GPU name of planner/specs/gpus.json, not {gpu!r}")
    cite = reader.text("cite")
    if not cite.startswith("https://") or commit not in cite or "#L" not in cite:
        raise reader.fail("cite", f"must be an https:// address at the table's commit with a #L line, not {cite!r}")
    return PairRow(gpu, reader.text("gpu_label"), reader.choice("precision", PRECISIONS),
                   reader.number("throughput_per_s"), int(reader.number("batch", whole=True)),
                   reader.choice("layout", LAYOUTS), cite, reader.text("note", nullable=True))


def _read_table(path: Path, where: str, entry: dict[str, Any], names: set[str]) -> PairTable:
    reader = EntryReader(path, where, entry, TABLE_FIELDS)
    commit = reader.text("commit")
    raw = entry["rows"]
    if not isinstance(raw, list) or not raw or not all(isinstance(r, dict) for r in raw):
        raise reader.fail("rows", "must be a non-empty list of objects")
    rows = tuple(_read_row(path, f"{where}.rows[{i}]", r, commit, names) for i, r in enumerate(raw))
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(rows):
        if (r.gpu, r.precision) in seen:
            raise reader.fail(f"rows[{i}]", f"{r.gpu} {r.precision} has an earlier row (one per GPU and precision)")
        seen.add((r.gpu, r.precision))
    if len({r.gpu for r in rows}) < 2:
        raise reader.fail("rows", "must cover at least two GPUs (the table is compared between its own rows)")
    return PairTable(reader.text("id"), reader.text("source"), reader.text("url"), commit, reader.date("retrieved"),
                     reader.text("stack"), reader.text("model"), reader.choice("twin", TWINS),
                     reader.choice("twin_layout", LAYOUTS),
                     reader.choice("task", ("training",)), reader.text("unit"), reader.text("notes"), rows)


def read_pairs(path: Path | str) -> list[PairTable]:
    """Every table of a published-pairs file, checked field by field (CatalogError, a ValueError)."""
    names = {spec.name for spec in load_gpu_catalog()}
    return read_tables(Path(path), SCHEMA_VERSION, KIND,
                       lambda path, where, entry: _read_table(path, where, entry, names))


def load_pairs(path: Path | str | None = None) -> list[PairTable]:
    """The committed tables (`planner/specs/published_pairs.json`), or those of `path`."""
    return read_pairs(PAIRS_FILE if path is None else path)
