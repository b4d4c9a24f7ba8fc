"""`gpuplan accuracy` on a terminal: per direction the headline and a line per workload, fitting COLUMNS; the
Markdown of every configuration with --markdown. On the frozen H100 and H200."""

from __future__ import annotations

import pytest
from paths import FROZEN

from gpuplan_schema.results import load_machine
from planner.check.accuracy import build_accuracy
from planner.cli import main as gpuplan


@pytest.mark.parametrize("columns", [80, 120])
def test_the_accuracy_check_fits_the_terminal_and_names_every_workload(capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert gpuplan(["accuracy", str(FROZEN / "h100-80gb"), str(FROZEN / "h200")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= columns
    table = build_accuracy(load_machine(FROZEN / "h100-80gb"), load_machine(FROZEN / "h200"))
    workloads = {r.workload for r in table.rows if r.counted}
    assert lines[0].startswith("h100-80gb → h200: median |error|")
    blank = lines.index("")  # the h100 → h200 direction: its headline, a blank line, its table
    table_lines = lines[blank + 1: lines.index("", blank + 1)]
    assert table_lines[0].split()[:2] == ["workload", "configs"]
    assert {line.split()[0] for line in table_lines[1:]} == workloads
    assert "--markdown" in lines[-2] or "--markdown" in lines[-1]


def test_markdown_keeps_every_configuration(capsys):
    assert gpuplan(["accuracy", str(FROZEN / "h100-80gb"), str(FROZEN / "h200"), "--markdown"]) == 0
    out = capsys.readouterr().out
    table = build_accuracy(load_machine(FROZEN / "h100-80gb"), load_machine(FROZEN / "h200"))
    assert "**h100-80gb → h200**" in out and "**h200 → h100-80gb**" in out
    assert out.count("\n| ") >= 2 * len(table.rows)


def test_each_boundary_says_how_its_probes_ran(tmp_path):
    """A boundary searched with each probe a job (workloads collector 8) is told from one whose probes shared a model,
    side by side: the frozen machines' are all of one model; the H200's searched again as jobs shows 'one model → jobs'
    (results/h200/diagnostics/probe-chain-2026-11-29)."""
    import json
    import shutil

    from planner.check.accuracy import render_markdown
    frozen = build_accuracy(load_machine(FROZEN / "h100-80gb"), load_machine(FROZEN / "h200"))
    assert frozen.capacity and {c.probes for c in frozen.capacity} == {"one model"}
    target = tmp_path / "h200"
    shutil.copytree(FROZEN / "h200", target)
    for path in target.glob("workload-*.json"):   # the copy's boundaries as collector 8 would have searched them
        doc = json.loads(path.read_text())
        for b in doc["payload"]["boundaries"]:
            b["fresh_probes"] = True
        path.write_text(json.dumps(doc))
    table = build_accuracy(load_machine(FROZEN / "h100-80gb"), load_machine(target))
    assert {c.probes for c in table.capacity} == {"one model → jobs"}
    assert "| one model → jobs |" in render_markdown(table)
