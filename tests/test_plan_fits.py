"""`gpuplan plan` fits the terminal: COLUMNS (or the terminal's width, 100 through a pipe) bounds every line,
with --verbose and --job too; reasons wrap, tables narrow; rates and counts have one format each."""

from __future__ import annotations

import io
import json
import re
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from paths import FIXTURES, RESULTS

from planner.cli import main as gpuplan
from planner.render.fit import DEFAULT_WIDTH, chunk_columns, fit_table, plan_width, wrap
from planner.units import THIN_SPACE, format_count

JOB = "resnet50 bf16 epochs=100 dataset=imagenet"
MODES = {"plain": [], "verbose": ["--verbose"], "job": ["--job", JOB], "job-verbose": ["--job", JOB, "--verbose"]}
SCIENTIFIC = re.compile(r"\d\.?\d*e[+-]\d")


@pytest.fixture(scope="module")
def fixture_machine(tmp_path_factory) -> Path:
    """The small H100 fixture: its ceilings (tests/fixtures/results) with its quick workloads (results-quick)."""
    folder = tmp_path_factory.mktemp("plan") / "h100-80gb"
    shutil.copytree(FIXTURES / "h100-80gb", folder)
    for path in sorted((FIXTURES.parent / "results-quick" / "h100-quick").glob("workload-*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["machine"] = "h100-80gb"
        (folder / path.name).write_text(json.dumps(doc), encoding="utf-8")
    return folder


def plan_lines(folder: Path, args: list[str], monkeypatch, columns: int | None) -> list[str]:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    with redirect_stdout(out):
        assert gpuplan(["plan", str(folder), *args]) == 0
    return out.getvalue().splitlines()


def too_long(lines: list[str], width: int) -> list[str]:
    return [f"{len(line)}: {line}" for line in lines if len(line) > width]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("columns", [60, 80, 120])
def test_every_line_of_the_plan_fits_columns(fixture_machine, monkeypatch, mode, columns):
    lines = plan_lines(fixture_machine, MODES[mode], monkeypatch, columns)
    assert len(lines) > 20 and not too_long(lines, columns)


@pytest.mark.parametrize("mode", MODES)
def test_committed_results_plan_fits_80_columns(monkeypatch, mode):
    """Reads the committed results/h100-80gb: COLUMNS=80 gpuplan plan (and --verbose, --job) has no line over 80."""
    lines = plan_lines(RESULTS / "h100-80gb", MODES[mode], monkeypatch, 80)
    assert not too_long(lines, 80)
    text = "\n".join(lines)
    assert not SCIENTIFIC.search(text), SCIENTIFIC.search(text)   # never 1.004e+07 in text
    # a rate: three figures with k/M (dlrm-small's millions of samples/s), never a raw run of digits
    assert not re.search(r"\d{5,}(?:\.\d+)? \w+/s", text) and re.search(r"\d\.\dM \w+/s", text)


def test_committed_results_plan_through_a_pipe_is_100_columns_wide(monkeypatch):
    """Reads the committed results/h100-80gb: without COLUMNS and without a terminal, 100 columns."""
    lines = plan_lines(RESULTS / "h100-80gb", ["--verbose"], monkeypatch, None)
    assert not too_long(lines, DEFAULT_WIDTH) and max(map(len, lines)) > 80


def test_the_width_is_columns_else_100(monkeypatch):
    monkeypatch.setenv("COLUMNS", "93")
    assert plan_width() == 93
    monkeypatch.delenv("COLUMNS")
    assert plan_width() == DEFAULT_WIDTH  # pytest's standard output is not a terminal
    monkeypatch.setenv("COLUMNS", "12")
    assert plan_width() == 40  # narrower than a line can say anything in: wrap at 40


def test_a_reason_wraps_under_a_hanging_indent_and_keeps_its_figures_whole():
    text = "bound: memory-bandwidth-bound (step: 0% math, 97% memory, 3% host); fusing (torch.compile) helps"
    lines = wrap(text, 40, "   ", "  ")
    assert lines[0].startswith("   bound:") and all(line.startswith("     ") for line in lines[1:])
    assert max(map(len, lines)) <= 40 and " ".join(line.strip() for line in lines) == text
    assert "memory-bandwidth-bound" in "".join(lines)  # no break at its hyphens


def test_a_narrow_table_leaves_out_its_least_important_columns_and_says_which():
    rows = [["instance", "hours", "limited by"], ["p5.48xlarge", "1.2", "memory-bandwidth-bound"]]
    lines, dropped = fit_table(rows, {1}, 24, droppable=(2,))
    assert dropped == ["limited by"] and lines == ["instance     hours", "p5.48xlarge    1.2"]
    assert fit_table(rows, {1}, 80, droppable=(2,))[1] == []


def test_a_wide_table_splits_its_columns_and_repeats_the_key():
    rows = [["workload", "A", "B", "C"], ["gpt-small", "77 / 84", "137 / 149", "45 / 49"]]
    lines = chunk_columns(rows, 1, {1, 2, 3}, 30)
    assert "" in lines and sum(line.startswith("workload") for line in lines) == 2
    assert max(map(len, lines)) <= 30 and {"77 / 84", "137 / 149", "45 / 49"} <= set(" ".join(lines).split("  "))


def test_counts_group_digits_with_thin_spaces_from_ten_thousand():
    assert [format_count(n) for n in (512, 4600, 10_000, 1_048_576)] == \
        ["512", "4600", f"10{THIN_SPACE}000", f"1{THIN_SPACE}048{THIN_SPACE}576"]
