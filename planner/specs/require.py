"""A GPU or an instance the user named, or one clear line saying it is not in the catalog.

`match_gpu`/`match_instance` answer None for an unknown name; a command that was given the name
(`gpuplan plan --target NAME`) wants an error instead, naming the option, the catalog file, the
closest names it holds and how to list them all, e.g.

    --target: 'H10' is not a GPU of planner/specs/gpus.json; close: 'H100 SXM', 'H100 PCIe' (gpuplan specs --gpus)

UnknownSpec is a DocumentError, so the command line prints it as one line with exit status 2.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from gpuplan_schema.schema import DocumentError
from planner.specs import gpus, instances
from planner.specs.gpus import GPUS_FILE, GpuSpec, load_gpu_catalog, match_gpu
from planner.specs.instances import INSTANCES_FILE, InstanceSpec, load_instances, match_instance

CLOSE_MATCHES = 4


class UnknownSpec(DocumentError):
    """A name the spec catalog does not hold; the message lists the closest ones it does."""


def close_names(name: str, names: Iterable[str], norm: Callable[[str], str]) -> list[str]:
    """Catalog names that look like `name` (compared without case and punctuation), closest first: names
    that start with it ('a100' → every A100), then those sharing its start ('A100-80G' → 'a100-80gb'),
    then difflib's nearest."""
    by_key: dict[str, str] = {}
    for candidate in names:
        by_key.setdefault(norm(candidate), candidate)
    key = norm(name)
    if not key:
        return []
    keys = [k for k in by_key if k.startswith(key)]
    keys += sorted((k for k in by_key if k not in keys and _common_start(k, key) >= max(3, len(key) - 2)),
                   key=lambda k: -_common_start(k, key))
    keys += [k for k in difflib.get_close_matches(key, list(by_key), n=CLOSE_MATCHES, cutoff=0.5) if k not in keys]
    return list(dict.fromkeys(by_key[k] for k in keys))


def _common_start(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _unknown(option: str, name: str, what: str, catalog: Path, close: list[str], listing: str) -> UnknownSpec:
    shown = name if len(name) <= 80 else name[:77] + "..."
    hint = f"close: {', '.join(repr(c) for c in close)}" if close else "nothing close"
    return UnknownSpec(option, "", f"{shown!r} is not {what} of {_relative(catalog)}; {hint} ({listing} lists them)")


def _relative(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def require_gpu(name: str, option: str = "--target") -> GpuSpec:
    """The catalog GPU `name` means (as `match_gpu` reads it); UnknownSpec naming `option` otherwise."""
    spec = match_gpu(name) if name.strip() else None
    if spec is not None:
        return spec
    raise _unknown(option, name, "a GPU", GPUS_FILE, close_gpus(name), "gpuplan specs --gpus")


def close_gpus(name: str) -> list[str]:
    names = [n for g in load_gpu_catalog() for n in (g.name, *g.aliases)]
    close = close_names(name, names, gpus._norm)
    # an alias shows as its GPU's name
    return list(dict.fromkeys(match_gpu(n).name for n in close))[:CLOSE_MATCHES]  # type: ignore[union-attr]


def require_instance(name: str, option: str = "--instance") -> InstanceSpec:
    """The catalog instance `name` means (as `match_instance` reads it); UnknownSpec naming `option` otherwise."""
    spec = match_instance(name) if name.strip() else None
    if spec is not None:
        return spec
    raise _unknown(option, name, "an instance", INSTANCES_FILE, close_instances(name), "gpuplan specs --instances")


def close_instances(name: str) -> list[str]:
    bare = name.rpartition(":")[2]
    return close_names(bare, [i.name for i in load_instances()], instances._norm)[:CLOSE_MATCHES]


def require_target(name: str, option: str = "--target") -> GpuSpec | InstanceSpec:
    """A GPU or an instance of the catalogs (`gpuplan plan --target`). Unknown: one line with the closest
    names of both; a name that starts several (`a100`) says it is ambiguous and lists them."""
    found = (match_gpu(name) or match_instance(name)) if name.strip() else None
    if found is not None:
        return found
    close = close_gpus(name) + close_instances(name)
    shown = name if len(name) <= 80 else name[:77] + "..."
    # a family name ('a100', 'p5': the first word of several catalog names) is ambiguous, not mistyped
    family = [c for c in close if re.split(r"[\s._-]+", c.lower())[0] == gpus._norm(name)]
    if len(family) > 1:
        problem = f"{shown!r} is ambiguous; candidates: {', '.join(family)}"
    else:
        problem = f"unknown GPU or instance {shown!r}; " + (f"closest: {', '.join(close[:CLOSE_MATCHES])}" if close
                                                             else "nothing close")
    raise UnknownSpec(option, "", problem + " (gpuplan specs lists them)")
