"""The site's machines, loaded once per build: from the cache where a folder's documents are unchanged, else
parsed on every core.

Parsing a GPU machine's forty-odd documents takes a quarter of a second; reading its cached load, a few
hundredths. A folder that is read is also turned into its records of the site's CSV there and then (they depend
on the folder alone), so that they are made on every core and kept with the load. A folder whose JSON files are
all foreign (no gpuplan envelope: a package.json, someone's notes) is no machine folder: it is skipped, and said
in one line naming it, as is a machine's own foreign file.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.results import MachineResults, all_foreign, load_machine, machine_folders
from gpuplan_schema.schema import DocumentError
from planner.export.frame import csv_records
from planner.site.cache import SiteCache, folder_digest
from planner.site.machines import map_forked


@dataclass(frozen=True)
class Loaded:
    machines: list[MachineResults]
    digests: dict[str, str]              # machine name → its folder's digest
    warnings: list[str]                  # one line each: a skipped folder, a machine's foreign files
    csv: dict[str, str]                  # machine name → its records of the site's CSV (csv_records)


@dataclass(frozen=True)
class _Foreign:
    """A cached folder that held only foreign JSON files."""

    paths: tuple[Path, ...]


@dataclass(frozen=True)
class _Machine:
    """A folder as read: the machine and its records of the CSV (what the cache keeps)."""

    machine: MachineResults
    csv: str


@dataclass(frozen=True)
class _Failed:
    """A folder's DocumentError, sent back from a worker as a value (the exception does not unpickle)."""

    path: str
    field: str
    problem: str


def read_folder(folder: Path) -> bytes:
    """The folder as read (_Machine or _Foreign) or its error (_Failed), pickled: as the cache keeps it."""
    entry: _Machine | _Foreign | _Failed
    try:
        if foreign := all_foreign(folder):
            entry = _Foreign(tuple(foreign))
        else:
            machine = load_machine(folder)
            entry = _Machine(machine, csv_records(machine))
    except DocumentError as e:
        entry = _Failed(e.path, e.field, e.problem)
    return pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)


def load_root(root: Path, cache: SiteCache) -> Loaded:
    root = Path(root)
    if not root.is_dir():
        raise DocumentError(root, "", "not a results root (no such directory)")
    folders = machine_folders(root)
    digests = [folder_digest(folder) for folder in folders]
    found = [cache.get("load", digest) for digest in digests]
    todo = [i for i, entry in enumerate(found) if not isinstance(entry, (_Machine, _Foreign))]
    for i, data in zip(todo, map_forked(read_folder, [folders[i] for i in todo]), strict=True):
        entry = pickle.loads(data)
        if isinstance(entry, _Failed):  # the first bad folder in order stops the build, as a serial load would
            raise DocumentError(entry.path, entry.field, entry.problem)
        found[i] = entry
        cache.put_pickled("load", digests[i], data)
    return collect(root, folders, digests, found)


def collect(root: Path, folders: list[Path], digests: list[str], found: list) -> Loaded:
    machines, by_name, warnings, csv = [], {}, [], {}
    for folder, digest, entry in zip(folders, digests, found, strict=True):
        if isinstance(entry, _Foreign):
            warnings.append(skipped_line(folder, list(entry.paths), "skipped the folder: "))
            continue
        machine = entry.machine
        machines.append(machine)
        by_name[machine.machine] = digest
        csv[machine.machine] = entry.csv
        if machine.skipped:
            warnings.append(skipped_line(folder, list(machine.skipped), ""))
    if not machines:
        raise DocumentError(root, "", "holds no machine folders with results")
    return Loaded(machines, by_name, warnings, csv)


def skipped_line(folder: Path, paths: list[Path], what: str) -> str:
    names = ", ".join(p.name for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    files = f"{len(paths)} JSON file{'s' if len(paths) > 1 else ''}"
    verb = "are" if len(paths) > 1 else "is"
    return f"{what}{folder}: {files} that {verb} no gpuplan document ({names})"
