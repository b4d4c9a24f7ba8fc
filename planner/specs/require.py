"""A GPU or an instance the user named, or one clear line saying it is not in the catalog.

`match_gpu`/`match_instance` answer None for an unknown name; a command that was given the name
(`gpuplan plan --target NAME`) wants an error instead, naming the option, the catalog file, the
closest names it holds and how to list them all, e.g.

    --target: 'H10' is not a GPU of planner/specs/gpus.json; close: 'H100 SXM', 'H100 PCIe' (gpuplan specs --gpus)

UnknownSpec is a DocumentError, so the command line prints it as one line with exit status 2.
"""

from __future__ import annotations

import difflib
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
    """Catalog names that look like `name` (compared without case and punctuation), closest first."""
    by_key: dict[str, str] = {}
    for candidate in names:
        by_key.setdefault(norm(candidate), candidate)
    keys = difflib.get_close_matches(norm(name), list(by_key), n=CLOSE_MATCHES, cutoff=0.5)
    # a prefix ('h100' for 'H100 SXM') is close whatever difflib's ratio says
    keys += [k for k in by_key if norm(name) and k.startswith(norm(name)) and k not in keys]
    return [by_key[k] for k in keys[:CLOSE_MATCHES]]


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
    names = [n for g in load_gpu_catalog() for n in (g.name, *g.aliases)]
    close = close_names(name, names, gpus._norm)
    canonical = list(dict.fromkeys(match_gpu(n).name for n in close))  # an alias shows as its GPU's name
    raise _unknown(option, name, "a GPU", GPUS_FILE, canonical, "gpuplan specs --gpus")


def require_instance(name: str, option: str = "--instance") -> InstanceSpec:
    """The catalog instance `name` means (as `match_instance` reads it); UnknownSpec naming `option` otherwise."""
    spec = match_instance(name) if name.strip() else None
    if spec is not None:
        return spec
    bare = name.rpartition(":")[2]
    close = close_names(bare, [i.name for i in load_instances()], instances._norm)
    raise _unknown(option, name, "an instance", INSTANCES_FILE, close, "gpuplan specs --instances")
