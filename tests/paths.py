"""The paths every test module shares (conftest.py turns the loaded machines into fixtures).

Tests of behaviour read FROZEN, a copy of results/ frozen when it was taken (tests/fixtures/frozen/): the
documents are real, and collecting a machine again changes no test outcome. The few tests that check the
committed results themselves (the docs generated from them, the plausibility of what is published) read
RESULTS and say so in their names (`test_committed_results_*`).
"""

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"                         # the committed real collections: only test_committed_results_*
FROZEN = REPO / "tests" / "fixtures" / "frozen"     # a frozen copy of results/ (real documents, never edited)
FIXTURES = REPO / "tests" / "fixtures" / "results"  # small real collections kept for tests


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """A file that is not a package module (a benchmarks/ script, an example) imported from its path, under `name`
    (its stem by default) in sys.modules: the dataclasses it defines look their module up there."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
    spec.loader.exec_module(module)
    return module


def copy_machine(src: Path, dst: Path, machine: str) -> None:
    """A machine folder's documents copied to `dst` under another machine id (a root of several machines)."""
    dst.mkdir(parents=True)
    for path in src.glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["machine"] = machine
        (dst / path.name).write_text(json.dumps(doc), encoding="utf-8")
