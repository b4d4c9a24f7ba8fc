"""Every error of issue 37's list is one line naming what is wrong, with exit status 2 (and --version answers):
each case is run through the command line as a user types it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from paths import FROZEN, REPO

from planner.cli import main as gpuplan

H100, CPU, MULTI = FROZEN / "h100-80gb", FROZEN / "vm-cpu", FROZEN / "h200-x2"
GOOD = FROZEN / "h100-80gb" / "workload-gpt-small.json"


def one_line(capsys: pytest.CaptureFixture, *args: str) -> str:
    """The command's only output: one error line on stderr, exit 2; returns the line."""
    rc = gpuplan(list(args))
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("gpuplan: error: "), (rc, out, err)
    return err


def test_version_answers_with_the_installed_version(capsys):
    assert gpuplan(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gpuplan ") and out.count("\n") == 1


def test_collect_without_torch_says_it_needs_torch_in_one_line():
    """Was a ModuleNotFoundError traceback from the collectors' child process."""
    code = ("import sys; sys.modules['torch'] = None; from planner.cli import main; "
            "sys.exit(main(['collect', '--help']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "gpuplan collect needs PyTorch" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("other", "says"), [(CPU, "measured a CPU"), (MULTI, "no ceilings.json")])
def test_accuracy_against_a_machine_it_cannot_compare_is_one_line(capsys, other, says):
    """Was an AssertionError traceback."""
    assert says in one_line(capsys, "accuracy", str(H100), str(other))


def test_accuracy_of_one_folder_against_itself_is_refused(capsys):
    """Was accepted: 'median |error| 0.0%'."""
    assert "given twice" in one_line(capsys, "accuracy", str(H100), str(H100) + "/")


def test_an_empty_job_is_refused_not_ignored(capsys):
    assert "--job '': empty" in one_line(capsys, "plan", str(H100), "--job", "")


@pytest.mark.parametrize("amount", ["samples=1e99", "tokens=1e30"])
def test_an_amount_beyond_any_training_run_is_refused(capsys, amount):
    """samples=1e99 was accepted and broke the table."""
    line = one_line(capsys, "plan", str(H100), "--job", f"gpt-small bf16 {amount}")
    assert amount in line and "more than any training run" in line


def test_validate_refuses_an_unknown_precision_naming_its_field(tmp_path, capsys):
    doc = json.loads(GOOD.read_text(encoding="utf-8"))
    doc["payload"]["points"][0]["precision"] = "bf17"
    bad = tmp_path / "workload-gpt-small.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    line = one_line(capsys, "validate", str(bad))
    assert f"{bad}: payload.points[0].precision: 'bf17' is not one of" in line


def test_a_json_error_names_its_place_once(tmp_path, capsys):
    """Read 'Unterminated string starting at at line 26'."""
    bad = tmp_path / "workload-gpt-small.json"
    bad.write_text('{"schema_version": 1, "kind": "workload", "machine": "unterminated', encoding="utf-8")
    line = one_line(capsys, "validate", str(bad))
    assert "at at" not in line and "not valid JSON (Unterminated string starting at line 1 column" in line


def test_site_given_a_machine_folder_asks_for_a_results_root(capsys):
    """Blamed diagnostics/boundary-spread.json instead."""
    line = one_line(capsys, "site", str(H100), "--no-pdf")
    assert "is a machine folder; gpuplan site wants a results root" in line and "diagnostics" not in line
