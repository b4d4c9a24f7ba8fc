"""What every report section has, and the two sections the frame makes itself when data is missing.

A section is a frozen dataclass with three class attributes: `kind` names its template partial
(`templates/partials/<kind>.html.j2`), `title` its heading, `in_toc` whether it has an entry in
the contents. A section kind that appears more than once (one per workload) has an `anchor`
attribute too; otherwise its anchor is its kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


class SectionBase:
    """What every section kind has: `kind` names its template partial; `in_toc` puts it in the contents."""

    kind: ClassVar[str]
    title: ClassVar[str]
    in_toc: ClassVar[bool] = True


@dataclass(frozen=True)
class NotCollectedSection(SectionBase):
    """Document kinds absent from the results folder, in one line under the summary, so that no one
    mistakes silence for zero."""

    kind: ClassVar[str] = "not_collected"
    title: ClassVar[str] = "Not collected"
    in_toc: ClassVar[bool] = False
    kinds: list[str]


@dataclass(frozen=True)
class PlaceholderSection:
    """A part of the report with nothing to show for this machine: its heading stays, in its place in
    the contents, with one line saying what is missing and where it would come from."""

    kind: ClassVar[str] = "placeholder"
    in_toc: ClassVar[bool] = True
    anchor: str
    title: str
    line: str
