"""The paths every test module shares (conftest.py turns the loaded machines into fixtures)."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"                         # the committed real collections
FIXTURES = REPO / "tests" / "fixtures" / "results"  # small real collections kept for tests
