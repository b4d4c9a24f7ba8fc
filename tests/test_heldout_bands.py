"""benchmarks/heldout_bands.py: the bands checked on workloads they were not built from, on the frozen
results (leave one workload out) and on a pair of machine folders (the lead's new collections; here the
frozen H100 and H200)."""

from __future__ import annotations

import pytest
from paths import FROZEN, REPO, load_script

from planner.check.bands import band_table_for
from planner.check.coverage import TARGET_COVERAGE


def _script():
    return load_script(REPO / "benchmarks" / "heldout_bands.py")


def test_leave_one_workload_out_checks_every_measured_pair_row(results_machines):
    checks = _script().committed_checks(results_machines)
    assert checks and all(c.residual.same_architecture for c in checks)
    assert sum(c.inside for c in checks) / len(checks) >= TARGET_COVERAGE
    assert {c.residual.group for c in checks} >= {"resnet50", "gpt-small", "sensor-cnn"}


def test_a_new_pair_is_checked_against_bands_that_never_saw_its_workloads(h100, h200, results_machines):
    script = _script()
    table = band_table_for(results_machines)
    checks = script.new_model_checks(table, h100, h200)
    assert {script.kind(c) for c in checks} == {"GPU-bound", "host-bound", "compiled"}
    for c in checks[::7]:
        band = table.without(c.residual.group).band(True, c.residual.host, c.residual.compiled)
        assert (c.low, c.high) == (band.low, band.high)
    text = script.report(checks, "pair")
    assert "| compiled |" in text and "| host-bound |" in text and "workload: resnet50" in text
    # across architectures: the DLE ratios of the pair's models (here resnet50's), each against its two bands
    judged = script.held_out_ratio_checks(table, [h100])
    assert judged and {j.ratio.table for j in judged} == {"dle-resnet50"} and all(j.half_width > 0 for j in judged)
    assert {j.source for j in judged} == {h100.gpu_name}  # the GPU each was predicted from (new folders share an id)
    assert "Across architectures (DLE ratios" in script.render_held_out(judged)


def test_a_folder_that_is_not_a_machine_stops_with_one_line(tmp_path, capsys):
    code = _script().main(["--results", str(FROZEN), "--pair", str(tmp_path), str(FROZEN / "h200")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(tmp_path) in err


@pytest.mark.parametrize("args", [[], ["--pair", str(FROZEN / "h100-80gb"), str(FROZEN / "h200")]])
def test_it_runs_from_the_command_line_and_writes_every_check(tmp_path, capsys, args):
    out = tmp_path / "checks.json"
    assert _script().main(["--results", str(FROZEN), *args, "--json", str(out)]) == 0
    assert "measured truths inside their band" in capsys.readouterr().out and out.read_text().startswith("[")
