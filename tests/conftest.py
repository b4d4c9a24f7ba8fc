"""Shared test set-up: the committed machines as fixtures (loaded once per session; loading is read-only),
and the slow marks, so that `make test-fast` (pytest -m "not slow") leaves those tests out; `make test`
runs all. The shared paths are in tests/paths.py (importable by every test module).

Slow: the browser and PDF tests and those that run real collections. Whole modules are listed here, and in
a mixed module the fixtures that collect or lay out a PDF; a test may also carry @pytest.mark.slow itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths import FIXTURES, FROZEN, REPO

from gpuplan_schema.results import MachineResults, load_machine, load_results_root

SLOW_MODULES = {
    "test_browser.py",               # headless chromium
    "test_pdf.py",                   # WeasyPrint layouts and pdftoppm
    "test_collectors_standalone.py",  # a real CPU collection in a fresh interpreter
    "test_dataloader_pipeline.py",   # real DataLoader points with worker processes
    "test_fault_injection.py",       # real collections killed and resumed
    "test_multigpu_launch.py",       # torchrun with gloo ranks
    "test_resume.py",                # real tiny collections, interrupted
    "test_workloads.py",             # real workload collections and the CLI in subprocesses
}
# Fixtures of mixed modules that run a real collection or lay out a PDF.
SLOW_FIXTURES = {
    "test_report_dataloader.py": {"cpu_folder", "loader"},
    "test_report_workloads.py": {"cpu_folder", "h100_report"},
}


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = Path(str(item.fspath)).name
        if module in SLOW_MODULES or SLOW_FIXTURES.get(module, set()) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def in_repo() -> Iterator[Path]:
    """The working directory is the repository root for the module: workload files are given by their path
    relative to it, as the docs show them."""
    saved = Path.cwd()
    os.chdir(REPO)
    try:
        yield REPO
    finally:
        os.chdir(saved)


@pytest.fixture(scope="session")
def results_machines() -> list[MachineResults]:
    """Every machine of the frozen copy of results/, as `gpuplan site` loads a results root."""
    return load_results_root(FROZEN)


@pytest.fixture(scope="session")
def h100() -> MachineResults:
    """The H100 collection (standard + capacity, roofline, dataloader), frozen from results/."""
    return load_machine(FROZEN / "h100-80gb")


@pytest.fixture(scope="session")
def h200() -> MachineResults:
    return load_machine(FROZEN / "h200")


@pytest.fixture(scope="session")
def fixture_h100() -> MachineResults:
    """The small H100 fixture of tests/fixtures/results."""
    return load_machine(FIXTURES / "h100-80gb")
