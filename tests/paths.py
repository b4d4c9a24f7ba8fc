"""The paths every test module shares (conftest.py turns the loaded machines into fixtures).

Tests of behaviour read FROZEN, a copy of results/ frozen when it was taken (tests/fixtures/frozen/): the
documents are real, and collecting a machine again changes no test outcome. The few tests that check the
committed results themselves (the docs generated from them, the plausibility of what is published) read
RESULTS and say so in their names (`test_committed_results_*`).
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"                         # the committed real collections: only test_committed_results_*
FROZEN = REPO / "tests" / "fixtures" / "frozen"     # a frozen copy of results/ (real documents, never edited)
FIXTURES = REPO / "tests" / "fixtures" / "results"  # small real collections kept for tests
