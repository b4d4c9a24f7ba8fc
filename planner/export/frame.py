"""The tidy table as a pandas DataFrame, and its CSV, JSON and Parquet files.

The rows come from the per-kind builders (planner/export/tidy.py); this module types them once
(counts nullable Int64, settings nullable boolean, `value` and `spread` float64, `status` and `bound`
categorical) and writes every
file format from that one frame: `gpuplan export`, the site's CSV and `planner.load_results` share it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from gpuplan_schema.payloads.common import Status
from gpuplan_schema.payloads.roofline import OpClass
from gpuplan_schema.results import MachineResults, load_machines
from planner.export.rows import COLUMNS, TidyRow
from planner.export.tidy import iter_tidy_rows

if TYPE_CHECKING:  # pandas loads in ~0.3 s: only the functions that build a frame import it
    import pandas as pd

STATUSES: tuple[str, ...] = get_args(Status)
BOUNDS: tuple[str, ...] = (*get_args(OpClass), "unattributed")  # roofline: op classes, time outside ops
INTEGERS = ("gpu_count", "nodes", "batch", "seq_len", "workers", "prefetch", "epoch", "rank", "n")
BOOLEANS = ("compile", "cudnn_benchmark", "capped", "pin", "persistent")
DTYPES: dict[str, str] = {**dict.fromkeys(INTEGERS, "Int64"), **dict.fromkeys(BOOLEANS, "boolean"),
                          "value": "float64", "spread": "float64"}
CATEGORIES: dict[str, tuple[str, ...]] = {"status": STATUSES, "bound": BOUNDS}  # each a fixed set of words
TEXT: list[str] = [c for c in COLUMNS if c not in DTYPES and c not in CATEGORIES]

# A spreadsheet (Excel, LibreOffice, Google Sheets) runs a cell that starts with one of these as a
# formula, e.g. `=HYPERLINK(...)` or `@SUM(...)` (OWASP "CSV injection"). Machine ids, GPU, workload
# and op names come from documents and user workload files, so they may start with one.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


class ParquetUnavailable(RuntimeError):
    """Parquet was asked for where pyarrow is not installed."""


def rows_frame(rows: Iterable[TidyRow]) -> pd.DataFrame:
    """Tidy rows as a typed frame, columns in the export's order."""
    import pandas as pd

    cells = attrgetter(*COLUMNS)
    frame = pd.DataFrame.from_records([cells(r) for r in rows], columns=list(COLUMNS))
    frame = frame.astype(DTYPES)
    # An empty cell is None in every text column (not NaN), as in the rows.
    frame[TEXT] = frame[TEXT].astype(object).where(frame[TEXT].notna(), None)
    for column, categories in CATEGORIES.items():
        frame[column] = pd.Categorical(frame[column], categories=categories)
    return frame


def machines_frame(machines: Iterable[MachineResults]) -> pd.DataFrame:
    return rows_frame(row for m in machines for row in iter_tidy_rows(m))


def csv_header() -> str:
    """The CSV's first line: its columns."""
    return to_csv(rows_frame([]))


def csv_records(machine: MachineResults) -> str:
    """One machine's records of the CSV, without the header: the CSV of many machines is `csv_header()` then each
    one's records in turn (a cell's text depends on its value and column alone), so a site builds and keeps each
    machine's part once. Written from the rows, not through a frame: a site of 200 machines writes 1.8 M rows,
    and the frame's typing and `DataFrame.to_csv` took 3x this writer's time for the same text (to_csv of the
    frame: tests/test_site_pages.py holds the two to the same bytes)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerows(_cells(row) for row in iter_tidy_rows(machine))
    return _records_end_in_lf(out.getvalue())


_ROW_CELLS = attrgetter(*COLUMNS)
_TEXT_AT = tuple(COLUMNS.index(c) for c in TEXT)
_TYPED_AT = tuple((COLUMNS.index(c), {"float64": float, "Int64": int, "boolean": bool}[kind])
                  for c, kind in DTYPES.items())


def _cells(row: TidyRow) -> list[object]:
    """A row's cells as the frame writes them: floats (value, spread) as float64's text, counts as integers,
    settings True/False, text guarded (spreadsheet_safe), None and NaN empty (the csv writer writes None empty)."""
    cells = list(_ROW_CELLS(row))
    for i in _TEXT_AT:
        cells[i] = spreadsheet_safe(cells[i])
    for i, kind in _TYPED_AT:
        value = cells[i]
        if value is not None and value.__class__ is not kind:
            cells[i] = None if value != value else kind(value)  # NaN: empty, as in the frame
    return cells


def load_frame(paths: Iterable[Path | str]) -> pd.DataFrame:
    """Every row of every machine under `paths` (machine folders or results roots); all documents are
    read before any row is built, so one bad file fails the whole load with its one-line error."""
    machines = [m for p in paths for m in load_machines(Path(p))]
    return machines_frame(machines)


def spreadsheet_safe(cell: object) -> object:
    """Text that a spreadsheet would run as a formula gets OWASP's leading `'`, which makes it text;
    numbers pass unchanged, so a negative figure (-0.034) stays a number."""
    return "'" + cell if isinstance(cell, str) and cell.startswith(FORMULA_PREFIXES) else cell


def to_csv(frame: pd.DataFrame) -> str:
    """The frame as CSV with the formula guard on every text column; empty cells empty."""
    guarded = frame.copy()
    for column in TEXT:  # Series.map: DataFrame.map is pandas 2.1's
        guarded[column] = guarded[column].map(spreadsheet_safe)
    # Python's csv writer before 3.11.9 quotes a field holding a bare CR only when the line terminator holds
    # one: with "\n" a CR in a name would end the line unquoted and the rest of the name would start a new
    # row (whose first cell escapes the guard). So write with "\r\n", then end each record with "\n".
    written = guarded.to_csv(index=False, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    return _records_end_in_lf(written)


def _records_end_in_lf(text: str) -> str:
    """Every CRLF outside quotes (a record's end) becomes LF; one inside a quoted cell is data and stays.
    Quotes inside a cell are doubled, so an even count of quotes so far means "outside"."""
    pieces = text.split("\r\n")
    out, quotes = [pieces[0]], pieces[0].count('"')
    for piece in pieces[1:]:
        out.append(("\n" if quotes % 2 == 0 else "\r\n") + piece)
        quotes += piece.count('"')
    return "".join(out)


def to_json(frame: pd.DataFrame) -> str:
    """A list of objects, one per row, empty cells as null (no formula guard: JSON is not run by spreadsheets)."""
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return json.dumps(records, indent=1, allow_nan=False, default=_plain) + "\n"


def _plain(value: object) -> object:
    # numpy integers and booleans (from the Int64 and boolean columns) are not JSON; floats subclass float.
    import numpy as np

    return bool(value) if isinstance(value, np.bool_) else int(value)  # type: ignore[call-overload]


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """The frame as Parquet (pyarrow keeps the dtypes: Int64, boolean, categorical status and bound)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ParquetUnavailable("--parquet needs pyarrow (pip install 'gpuplan[parquet]')") from None
    frame.to_parquet(path, index=False)
