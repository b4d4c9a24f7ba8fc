"""The site's machines, loaded once per build: from the cache where a folder's documents are unchanged.

Parsing a GPU machine's forty-odd documents takes a quarter of a second; reading its cached load, a few
hundredths. A folder whose JSON files are all foreign (no gpuplan envelope: a package.json, someone's notes)
is no machine folder: it is skipped, and said in one line naming it, as is a machine's own foreign file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.results import MachineResults, all_foreign, load_machine, machine_folders
from gpuplan_schema.schema import DocumentError
from planner.site.cache import SiteCache, folder_digest


@dataclass(frozen=True)
class Loaded:
    machines: list[MachineResults]
    digests: dict[str, str]              # machine name → its folder's digest
    warnings: list[str]                  # one line each: a skipped folder, a machine's foreign files


@dataclass(frozen=True)
class _Foreign:
    """A cached folder that held only foreign JSON files."""

    paths: tuple[Path, ...]


def load_root(root: Path, cache: SiteCache) -> Loaded:
    root = Path(root)
    if not root.is_dir():
        raise DocumentError(root, "", "not a results root (no such directory)")
    machines, digests, warnings = [], {}, []
    for folder in machine_folders(root):
        digest = folder_digest(folder)
        found = cache.get("load", digest)
        if found is None:
            found = _Foreign(tuple(foreign)) if (foreign := all_foreign(folder)) else load_machine(folder)
            cache.put("load", digest, found)
        if isinstance(found, _Foreign):
            warnings.append(skipped_line(folder, list(found.paths), "skipped the folder: "))
            continue
        machines.append(found)
        digests[found.machine] = digest
        if found.skipped:
            warnings.append(skipped_line(folder, list(found.skipped), ""))
    if not machines:
        raise DocumentError(root, "", "holds no machine folders with results")
    return Loaded(machines, digests, warnings)


def skipped_line(folder: Path, paths: list[Path], what: str) -> str:
    names = ", ".join(p.name for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    files = f"{len(paths)} JSON file{'s' if len(paths) > 1 else ''}"
    verb = "are" if len(paths) > 1 else "is"
    return f"{what}{folder}: {files} that {verb} no gpuplan document ({names})"
