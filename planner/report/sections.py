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
    """What every section kind has, given as class arguments:
    `class CeilingsSection(SectionBase, kind="ceilings", title="Measured ceilings")`. `kind` names its template
    partial, `title` its heading (a section whose heading varies has a `title` field instead), `in_toc` puts it
    in the contents, and its anchor is its kind unless the section has an `anchor` field (one per workload)."""

    kind: ClassVar[str]
    title: ClassVar[str]
    in_toc: ClassVar[bool] = True
    anchor: ClassVar[str]

    def __init_subclass__(cls, *, kind: str, title: str | None = None, in_toc: bool = True, **kwargs: object):
        super().__init_subclass__(**kwargs)
        cls.kind, cls.in_toc = kind, in_toc
        if title is not None:
            cls.title = title
        if "anchor" not in cls.__dict__.get("__annotations__", {}):
            cls.anchor = kind


@dataclass(frozen=True)
class NotCollectedSection(SectionBase, kind="not_collected", title="Not collected", in_toc=False):
    """Document kinds absent from the results folder, in one line under the summary, so that no one
    mistakes silence for zero."""

    kinds: list[str]


@dataclass(frozen=True)
class PlaceholderSection(SectionBase, kind="placeholder"):
    """A part of the report with nothing to show for this machine: its heading stays, in its place in
    the contents, with one line saying what is missing and where it would come from."""

    anchor: str
    title: str
    line: str
