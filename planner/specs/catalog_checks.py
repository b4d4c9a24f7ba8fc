"""Reading one catalog entry field by field, so a bad value fails with the file and the field named.

The catalogs are hand-edited data files; a typo must stop the planner with one line such as
`planner/specs/instances.json: instances[12].gpu_count: must be a whole number ≥ 1, not '8x'`,
never with a TypeError deep inside a model.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuplan_schema.schema import DocumentError

# A price date as precise as the source gives it: a day, a month or only a year.
DATE_PATTERN = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
_OWN = object()  # `EntryReader.number`: read the entry's own field


class CatalogError(DocumentError):
    """A catalog file that cannot be used; the message names the file and the field."""


def read_json_object(path: Path, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """A data file's top-level object, refused with one line unless it is valid JSON with exactly `keys` (and any of
    `optional`)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CatalogError(path, "", f"not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(raw, dict) or not set(keys) <= set(raw) <= set(keys) | set(optional):
        also = f" (and optionally {', '.join(optional)})" if optional else ""
        raise CatalogError(path, "", f"must be an object with exactly the keys {', '.join(keys)}{also}")
    return raw


def read_tables(path: Path, schema_version: int, kind: str,
                read_table: Callable[[Path, str, dict[str, Any]], Any], key: str = "tables",
                optional: tuple[str, ...] = ()) -> list[Any]:
    """The tables of a published-figures file ({schema_version, kind, tables}, and any `optional` lists of tables of
    another shape): the header checked, each entry of `key` read by `read_table(path, where, entry)`, each table's
    `id` unique (CatalogError naming the field otherwise)."""
    raw = read_json_object(path, ("schema_version", "kind", key), optional)
    if raw["schema_version"] != schema_version:
        raise CatalogError(path, "schema_version", f"must be {schema_version}, not {raw['schema_version']!r}")
    if raw["kind"] != kind:
        raise CatalogError(path, "kind", f"must be {kind!r}, not {raw['kind']!r}")
    entries = raw[key]
    if not isinstance(entries, list) or not entries:
        raise CatalogError(path, key, "must be a non-empty list")
    tables, ids = [], set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise CatalogError(path, f"{key}[{i}]", "must be an object")
        table = read_table(path, f"{key}[{i}]", entry)
        if table.id in ids:
            raise CatalogError(path, f"{key}[{i}].id", f"{table.id!r} names an earlier table too")
        ids.add(table.id)
        tables.append(table)
    return tables


def load_entries(path: Path, key: str) -> list[dict[str, Any]]:
    """The list under `key` of a catalog file, after checking the file is that shape."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CatalogError(path, "", f"not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(raw, dict) or set(raw) != {key}:
        raise CatalogError(path, "", f"must be an object with exactly one key, {key!r}")
    entries = raw[key]
    if not isinstance(entries, list) or not entries:
        raise CatalogError(path, key, "must be a non-empty list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise CatalogError(path, f"{key}[{i}]", "must be an object")
    return entries


class EntryReader:
    """Typed access to one entry's fields; every problem raises CatalogError naming the field."""

    def __init__(self, path: Path, where: str, entry: dict[str, Any], fields: tuple[str, ...]):
        self.path, self.where, self.entry = path, where, entry
        missing = [f for f in fields if f not in entry]
        extra = [f for f in entry if f not in fields]
        if missing or extra:
            problem = "; ".join(p for p in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unknown {', '.join(extra)}" if extra else "") if p)
            raise CatalogError(path, where, f"{problem} (the fields are: {', '.join(fields)})")

    def fail(self, key: str, problem: str) -> CatalogError:
        return CatalogError(self.path, f"{self.where}.{key}", problem)

    def text(self, key: str, *, nullable: bool = False) -> str | None:
        value = self.entry[key]
        if value is None and nullable:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"must be non-empty text{' or null' if nullable else ''}, not {value!r}")
        return value

    def objects(self, key: str) -> list[dict[str, Any]]:
        """A non-empty list of objects, each for a reader of its own (`<where>.<key>[i]`)."""
        raw = self.entry[key]
        if not isinstance(raw, list) or not raw:
            raise self.fail(key, "must be a non-empty list")
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                raise self.fail(f"{key}[{i}]", "must be an object")
        return raw

    def url(self, key: str) -> str:
        """An https:// address (a source that can be checked), one word."""
        value = self.text(key)
        assert value is not None
        if not value.startswith("https://") or any(c.isspace() for c in value):
            raise self.fail(key, f"must be an https:// address where it can be checked, not {value!r}")
        return value

    def number(self, key: str, *, nullable: bool = False, whole: bool = False, value: Any = _OWN) -> float | None:
        """A finite number > 0 (a whole number ≥ 1 if `whole`); `value` is checked instead of the
        entry's own field when given (for values nested under `key`, e.g. `flops_per_s.bf16`)."""
        value = self.entry[key] if value is _OWN else value
        if value is None and nullable:
            return None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
        if ok and whole:
            ok = float(value).is_integer()
        if not ok:
            kind = "a whole number ≥ 1" if whole else "a number > 0"
            raise self.fail(key, f"must be {kind}{' or null' if nullable else ''}, not {value!r}")
        return int(value) if whole else float(value)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.entry[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(key, f"must be a list of non-empty texts, not {value!r}")
        return tuple(value)

    def choice(self, key: str, choices: tuple[str, ...], *, nullable: bool = False) -> str | None:
        value = self.entry[key]
        if value is None and nullable:
            return None
        if value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}{' or null' if nullable else ''}, not {value!r}")
        return value

    def date(self, key: str) -> str:
        value = self.entry[key]
        if not isinstance(value, str) or not DATE_PATTERN.match(value):
            raise self.fail(key, f"must be a date YYYY-MM-DD (or YYYY-MM, YYYY when the source says no more), "
                                 f"not {value!r}")
        return value
