"""Shared fixtures: the committed machines, loaded once per test session (loading is read-only)."""

from __future__ import annotations

import pytest
from paths import FIXTURES, RESULTS

from gpuplan_schema.results import MachineResults, load_machine, load_results_root


@pytest.fixture(scope="session")
def results_machines() -> list[MachineResults]:
    """Every machine under results/, as `gpuplan site results` loads them."""
    return load_results_root(RESULTS)


@pytest.fixture(scope="session")
def h100() -> MachineResults:
    """The committed H100 collection (standard + capacity, roofline, dataloader)."""
    return load_machine(RESULTS / "h100-80gb")


@pytest.fixture(scope="session")
def h200() -> MachineResults:
    return load_machine(RESULTS / "h200")


@pytest.fixture(scope="session")
def fixture_h100() -> MachineResults:
    """The small H100 fixture of tests/fixtures/results."""
    return load_machine(FIXTURES / "h100-80gb")
