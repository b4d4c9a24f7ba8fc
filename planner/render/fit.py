"""Fitting the plan's text to a terminal: its width, wrapped lines, and tables narrowed to fit.

`plan_width()` is the terminal's width (`shutil.get_terminal_size`, which honours COLUMNS), DEFAULT_WIDTH when
standard output is not a terminal. `wrap` breaks a line at spaces with a hanging indent (never inside a word,
so a figure stays whole); `fit_table` aligns a table and, where it is wider than the width, leaves out its
least important columns, in the order given, and says which.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

DEFAULT_WIDTH = 100   # what a pipe or a file gets: the README's examples, `gpuplan plan … | less`
MIN_WIDTH = 40        # below this a line holds too little to read; wrap at 40 and let the terminal fold


def plan_width() -> int:
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def wrap(text: str, width: int, indent: str = "", hang: str = "  ") -> list[str]:
    """`text` as lines of at most `width` characters: the first indented by `indent`, the rest by `indent` + `hang`.
    A single word longer than a line is cut (only a name or a path can be)."""
    if len(indent) + len(text) <= width:
        return [indent + text]
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + hang,
                         break_on_hyphens=False, break_long_words=True) or [indent]


def wrap_all(lines: Sequence[str], width: int, hang: str = "  ") -> list[str]:
    """Each line wrapped at `width`, its continuation under its own indent plus `hang`."""
    out: list[str] = []
    for line in lines:
        body = line.lstrip(" ")
        out += wrap(body, width, line[:len(line) - len(body)], hang)
    return out


def render_table(rows: list[list[str]], right: set[int], gap: str = "  ") -> list[str]:
    """Rows (the first is the header) in aligned columns; columns in `right` right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [gap.join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
            .rstrip() for r in rows]


def fit_table(rows: list[list[str]], right: set[int], width: int, droppable: Sequence[int] = (),
              indent: str = "") -> tuple[list[str], list[str]]:
    """The table at most `width` wide: columns of `droppable` (indexes, least important first) are left out
    one by one until it fits. Returns its lines (each prefixed by `indent`) and the headers left out."""
    keep = list(range(len(rows[0])))
    dropped: list[str] = []
    for column in [None, *droppable]:
        if column is not None:
            keep.remove(column)
            dropped.append(rows[0][column].strip() or f"column {column + 1}")
        lines = render_table([[r[i] for i in keep] for r in rows], {keep.index(i) for i in right if i in keep})
        if max(len(indent) + len(line) for line in lines) <= width:
            break
    return [indent + line for line in lines], dropped


def chunk_columns(rows: list[list[str]], keys: int, right: set[int], width: int, indent: str = "") -> list[str]:
    """A wide table as several narrower ones, one under the other: each repeats the first `keys` columns and
    takes as many of the others, in order, as fit in `width`. Nothing is left out."""
    rest = list(range(keys, len(rows[0])))
    out: list[str] = []
    while rest:
        take = 1
        while take < len(rest) and _width(rows, [*range(keys), *rest[:take + 1]]) + len(indent) <= width:
            take += 1
        columns = [*range(keys), *rest[:take]]
        table = render_table([[r[i] for i in columns] for r in rows], {columns.index(i) for i in right if i in columns})
        out += ([""] if out else []) + [indent + line for line in table]
        rest = rest[take:]
    return out


def _width(rows: list[list[str]], columns: list[int]) -> int:
    return sum(max(len(r[i]) for r in rows) for i in columns) + 2 * (len(columns) - 1)
