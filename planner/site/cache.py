"""What a site build made, kept in the output folder for the next build: an unchanged root rebuilds in seconds.

Every entry is stored under the digest of everything it was made from, so an entry is either exactly what a
fresh build would make or never read:

- a machine folder, loaded: its documents' bytes (and the other hosts' under diagnostics/), its path, and
  gpuplan's code and catalogs (`code_digest`);
- a machine's page and the short report the site's shared pages read: the folder's digest, what its plan reads
  of the other machines (`planner.plan.measured.Measured.digest`: the bands, validated GPUs, scaling, node),
  the code, and the page's navigation;
- the pages made from every machine (accuracy, job chooser, CSV): the digests of all of their inputs.

The cache lives in OUT/.gpuplan-cache/ (one pickle per entry, written atomically; entries that a build did not
use are removed at its end, so it holds one build's worth). Deleting it costs one full build, nothing more; an
unreadable entry is made again.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from gpuplan_templates import TEMPLATES_DIR

from gpuplan_schema.results import OTHER_HOSTS, iter_document_paths
from gpuplan_schema.schema import write_bytes_atomic

CACHE_DIR = ".gpuplan-cache"
PACKAGES = Path(__file__).resolve().parent.parent.parent
# gpuplan's planner (code and catalogs), its schema and its templates: a change to any of them may change a page
CODE_DIRS = (PACKAGES / "planner", PACKAGES / "gpuplan_schema", TEMPLATES_DIR)
CODE_SUFFIXES = (".py", ".json", ".j2", ".css", ".js")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """gpuplan's code, catalogs and templates, with the versions of the libraries that draw and lay out a page."""
    import altair
    import jinja2
    import vl_convert
    import weasyprint

    versions = f"{altair.__version__} {jinja2.__version__} {weasyprint.__version__} {vl_convert.__version__}"
    digest = hashlib.sha256(versions.encode())
    for folder, path in code_files():
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def code_files() -> list[tuple[Path, Path]]:
    """(package folder, file) for every file of gpuplan's code, catalogs and templates."""
    return [(folder, path) for folder in CODE_DIRS
            for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in CODE_SUFFIXES)]


def folder_digest(folder: Path) -> str:
    """A machine folder as the loader reads it: each document's name and bytes, the other hosts' workload
    documents, the folder's path (a loaded machine records it) and the code that reads them."""
    digest = hashlib.sha256(f"{code_digest()}\0{folder.resolve()}".encode())
    other = sorted(p for p in (folder / OTHER_HOSTS).glob("*/workload-*.json") if not p.is_symlink())
    for path in [*iter_document_paths(folder), *other]:
        digest.update(b"\0" + path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def digest_of(*parts: object) -> str:
    """The digest of values whose repr holds all they are (strings, numbers, tuples of them, dataclasses)."""
    return hashlib.sha256(repr((code_digest(), *parts)).encode()).hexdigest()


@dataclass
class SiteCache:
    folder: Path
    used: set[str] = field(default_factory=set)
    pending: dict[str, bytes] = field(default_factory=dict)  # made by this build (pickled), written by `commit`

    def get(self, kind: str, key: str) -> object | None:
        """The entry, or None where there is none (or it cannot be read: it is made again)."""
        name = f"{kind}-{key}.pickle"
        self.used.add(name)
        try:
            return pickle.loads(self.pending[name] if name in self.pending else (self.folder / name).read_bytes())
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            return None

    def put(self, kind: str, key: str, value: object) -> None:
        """Keep an entry, to be written once the build has succeeded (a failed build leaves the folder as it was)."""
        self.put_pickled(kind, key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def put_pickled(self, kind: str, key: str, data: bytes) -> None:
        """`put` an entry pickled already: by a worker, which sends what it made so (the build's process, which
        unpickles it to use it, need not pickle it again)."""
        name = f"{kind}-{key}.pickle"
        self.used.add(name)
        self.pending[name] = data

    def commit(self) -> None:
        """Write the entries this build made and remove those it did not read or write."""
        for name, data in self.pending.items():
            write_bytes_atomic(self.folder / name, data)
        self.pending.clear()
        if self.folder.is_dir():
            for path in self.folder.glob("*.pickle"):
                if path.name not in self.used:
                    path.unlink(missing_ok=True)
