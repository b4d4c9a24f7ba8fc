"""The one way to and from disk for every gpuplan document.

A document is a JSON object with an envelope (`schema_version`, `kind`, `collector`,
`machine`, `created`) and a `payload`. Payloads are dataclasses registered per kind in
`gpuplan_schema.payloads`; `load_document` checks the envelope, migrates older versions,
refuses newer ones and converts the payload into its dataclass, naming the field of any
problem. Standard library only: this module runs on bare GPU hosts.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import tempfile
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpuplan_schema.plausible import number_problem, text_problem

SCHEMA_VERSION = 1
MAX_DOCUMENT_BYTES = 64 << 20  # the largest real document is ~1 MB; a larger file is not one of ours
ENVELOPE_FIELDS = ("schema_version", "kind", "collector", "machine", "created", "payload")

# Migrations from version N to N+1, applied in order to older documents. Each takes the raw
# document dict and returns it at the next version. Empty while there is only version 1.
MIGRATIONS: dict[int, Callable[[dict], dict]] = {}


class DocumentError(ValueError):
    """A document that cannot be read; the message names the file and the field."""

    def __init__(self, path: Path | str, field: str, problem: str):
        # A document may hold a value of megabytes; the one line quotes only its start.
        field, problem = _shortened(field), _shortened(problem)
        self.path, self.field, self.problem = str(path), field, problem
        super().__init__(f"{path}: {field}: {problem}" if field else f"{path}: {problem}")


class ForeignDocument(DocumentError):
    """A JSON object that is no gpuplan document at all (no envelope field: a package.json, a notes file): a reader
    of a results folder skips it with a warning; `gpuplan validate` reports it like any bad document."""


MAX_MESSAGE_PART = 500


def _shortened(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_PART else text[:MAX_MESSAGE_PART - 1] + "…"


@dataclass(frozen=True)
class CollectorInfo:
    name: str
    version: str


@dataclass(frozen=True)
class Document:
    kind: str
    collector: CollectorInfo
    machine: str
    created: str
    payload: Any
    schema_version: int = SCHEMA_VERSION


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_document(kind: str, collector: str, version: str, machine: str, payload: Any) -> Document:
    return Document(kind, CollectorInfo(collector, version), machine, utc_now(), payload)


def document_to_dict(doc: Document) -> dict:
    return {
        "schema_version": doc.schema_version,
        "kind": doc.kind,
        "collector": dataclasses.asdict(doc.collector),
        "machine": doc.machine,
        "created": doc.created,
        "payload": dataclasses.asdict(doc.payload) if dataclasses.is_dataclass(doc.payload) else doc.payload,
    }


def save_document(doc: Document, path: Path) -> Path:
    """Write atomically: a temp file in the same folder, fsync, then rename over the target."""
    text = json.dumps(document_to_dict(doc), indent=1, allow_nan=False) + "\n"
    write_text_atomic(Path(path), text)
    return Path(path)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Temp file in the target's folder, fsync, rename: readers see the old file or the new one,
    never half of one. The file gets the usual umask-based mode (mkstemp alone gives 0600, which
    a published site cannot serve)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_document(path: Path | str) -> Document:
    path = Path(path)
    try:
        if not path.is_file():  # a folder, a FIFO (reading would wait for ever) or a device
            raise DocumentError(path, "", "no such file" if not path.exists() else "not a regular file")
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise DocumentError(path, "", f"{path.stat().st_size} bytes, larger than any gpuplan document "
                                          f"({MAX_DOCUMENT_BYTES >> 20} MiB)")
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except FileNotFoundError:
        raise DocumentError(path, "", "no such file") from None
    except UnicodeDecodeError:
        raise DocumentError(path, "", "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        # json's messages may end in "at" ("Unterminated string starting at"): the position follows once
        msg = e.msg.removesuffix(" at")
        raise DocumentError(path, "", f"not valid JSON ({msg} at line {e.lineno} column {e.colno})") from None
    except ValueError as e:  # NaN or Infinity, or an integer of thousands of digits
        raise DocumentError(path, "", str(e)) from None
    except RecursionError:
        raise DocumentError(path, "", "nested too deeply to be a gpuplan document") from None
    return parse_document(raw, path)


def _reject_constant(name: str) -> float:
    raise ValueError(f"JSON holds {name}, which is not a number")


def parse_document(raw: Any, path: Path | str = "<document>") -> Document:
    if not isinstance(raw, dict):
        raise DocumentError(path, "", "not a JSON object")
    if not any(name in raw for name in ENVELOPE_FIELDS):
        raise ForeignDocument(path, "schema_version", "missing: not a gpuplan document (none of its envelope fields: "
                                                      f"{', '.join(ENVELOPE_FIELDS)})")
    raw = migrate(raw, path)
    for name in ENVELOPE_FIELDS:
        if name not in raw:
            raise DocumentError(path, name, "missing")
    from gpuplan_schema.payloads import PAYLOADS  # late import: payloads imports this module

    kind = _check(raw["kind"], str, path, "kind")
    if kind not in PAYLOADS:
        raise DocumentError(path, "kind", f"unknown kind {kind!r} (known: {', '.join(sorted(PAYLOADS))})")
    collector = from_dict(CollectorInfo, raw["collector"], path, "collector")
    created = _check(raw["created"], str, path, "created")
    try:
        year = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").year
    except ValueError:
        raise DocumentError(path, "created", f"{created!r} is not a UTC time like 2026-01-31T12:00:00Z") from None
    if not 2000 <= year < 2100:
        raise DocumentError(path, "created", f"{created!r} is not a plausible collection time (years 2000-2099)")
    machine = from_dict(str, raw["machine"], path, "machine")
    if not machine.strip():
        raise DocumentError(path, "machine", "empty")
    payload = from_dict(PAYLOADS[kind], raw["payload"], path, "payload")
    return Document(kind, collector, machine, created, payload, raw["schema_version"])


def migrate(raw: dict, path: Path | str) -> dict:
    version = raw.get("schema_version")
    if version is None:
        raise DocumentError(path, "schema_version", "missing")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DocumentError(path, "schema_version", f"{version!r} is not a positive whole number")
    if version > SCHEMA_VERSION:
        raise DocumentError(
            path, "schema_version",
            f"version {version} is newer than this gpuplan reads ({SCHEMA_VERSION}); upgrade gpuplan",
        )
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise DocumentError(path, "schema_version", f"no migration from version {version}")
        raw = MIGRATIONS[version](dict(raw))
        version += 1
        raw["schema_version"] = version
    return raw


def _check(value: Any, typ: type, path: Path | str, field: str) -> Any:
    if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
        raise DocumentError(path, field, f"expected {typ.__name__}, got {type(value).__name__}")
    return value


@functools.cache
def _shape(tp: Any) -> tuple[str, Any]:
    """What kind of type `tp` is, and its arguments: worked out once per type (a load meets a few dozen types
    a million times)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return "any", None
    if origin in (typing.Union, types.UnionType):
        return "union", typing.get_args(tp)
    if origin is list:
        return "list", typing.get_args(tp)[0]
    if origin is dict:
        return "dict", typing.get_args(tp)
    if origin is typing.Literal:
        return "literal", typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        return "dataclass", None
    return {float: "float", int: "int", str: "str"}.get(tp, "other"), None


def from_dict(tp: Any, value: Any, path: Path | str, field: str) -> Any:
    """Convert parsed JSON into the typed value `tp`, naming the field path of any mismatch."""
    kind, args = _shape(tp)
    if kind == "any":
        return value
    if kind == "union":
        return _from_union(args, value, path, field)
    if kind == "list":
        _check(value, list, path, field)
        return [from_dict(args, v, path, f"{field}[{i}]") for i, v in enumerate(value)]
    if kind == "dict":
        key_tp, val_tp = args
        _check(value, dict, path, field)
        return {from_dict(key_tp, k, path, f"{field} key"): from_dict(val_tp, v, path, f"{field}.{k}")
                for k, v in value.items()}
    if kind == "literal":
        if value not in args:
            raise DocumentError(path, field, f"{value!r} is not one of {list(args)}")
        return value
    if kind == "dataclass":
        return _from_dataclass(tp, value, path, field)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DocumentError(path, field, f"expected a number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise DocumentError(path, field, f"{value} is not a finite number")
        return float(_plausible_number(value, path, field))
    if kind == "int":
        return _plausible_number(_check(value, int, path, field), path, field)
    if kind == "str":
        _check(value, str, path, field)
        if problem := text_problem(value):
            raise DocumentError(path, field, problem)
        return value
    return _check(value, tp, path, field)


def _plausible_number(value: float, path: Path | str, field: str) -> float:
    if problem := number_problem(value, field):
        raise DocumentError(path, field, problem)
    return value


def _from_union(options: tuple, value: Any, path: Path | str, field: str) -> Any:
    if value is None and type(None) in options:
        return None
    real = [o for o in options if o is not type(None)]
    errors = []
    for option in real:
        try:
            return from_dict(option, value, path, field)
        except DocumentError as e:
            errors.append(e)
    if len(errors) == 1:
        raise errors[0]
    raise DocumentError(path, field, f"does not match any of {[getattr(o, '__name__', str(o)) for o in real]}")


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    # Resolving a dataclass's string annotations is most of a load's time; they never change.
    return typing.get_type_hints(cls)


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """Each field of the dataclass: its name, its type and whether a document must give it."""
    hints = _type_hints(cls)
    return tuple((f.name, hints[f.name], f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                 for f in dataclasses.fields(cls))


def _from_dataclass(cls: Any, value: Any, path: Path | str, field: str) -> Any:
    _check(value, dict, path, field)
    kwargs = {}
    for name, hint, required in _fields(cls):
        if name in value:
            kwargs[name] = from_dict(hint, value[name], path, f"{field}.{name}")
        elif required:
            raise DocumentError(path, f"{field}.{name}", "missing")
    check = getattr(cls, "check", None)
    obj = cls(**kwargs)
    if check is not None:
        problem = check(obj)
        if problem:
            raise DocumentError(path, field, problem)
    return obj
