"""`gpuplan`: exit codes, one-line errors naming file and field, and each command's wiring."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from paths import FIXTURES, FROZEN, REPO
from paths import REPO as ROOT

from gpuplan_schema.schema import DocumentError, load_document
from planner.cli import main

H100 = FIXTURES / "h100-80gb"
COMMANDS = ("collect", "validate", "export", "plan", "accuracy", "report", "site", "specs")


def broken_copy(tmp_path: Path, change) -> Path:
    """A copy of the H100 ceilings document with one thing broken by `change(raw) -> text`."""
    raw = json.loads((H100 / "ceilings.json").read_text(encoding="utf-8"))
    path = tmp_path / "ceilings.json"
    path.write_text(change(raw), encoding="utf-8")
    return path


def truncated(raw: dict) -> str:
    return json.dumps(raw, indent=1)[:300]


def newer_version(raw: dict) -> str:
    return json.dumps({**raw, "schema_version": raw["schema_version"] + 1})


def missing_machine(raw: dict) -> str:
    return json.dumps({k: v for k, v in raw.items() if k != "machine"})


# ── validate ────────────────────────────────────────────────────────────────────────────────

def test_validate_fixtures_ok(capsys):
    assert main(["validate", str(FIXTURES)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 4 and all(line.startswith("ok ") for line in lines)
    assert f"ok {H100 / 'ceilings.json'} (ceilings)" in lines


@pytest.mark.parametrize(("change", "field"), [(truncated, "not valid JSON"), (newer_version, "schema_version"),
                                               (missing_machine, "machine: missing")])
def test_validate_bad_document_is_one_line_naming_the_file(tmp_path, capsys, change, field):
    path = broken_copy(tmp_path, change)
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"gpuplan: error: {path}: ") and field in err


def test_validate_reports_each_bad_document_and_every_good_one(tmp_path, capsys):
    bad = broken_copy(tmp_path, missing_machine)
    assert main(["validate", str(H100), str(bad), str(tmp_path / "absent.json")]) == 2
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 and len(err.splitlines()) == 2
    assert "absent.json: no such file" in err


def test_validate_and_the_loaders_skip_a_machines_diagnostics_folder(capsys):
    """The committed machines keep benchmark outputs (not result documents) in `diagnostics/`: validate
    passes over them, and loading the machine reads only its own documents."""
    from gpuplan_schema.results import load_machine
    folder = FROZEN / "h100-80gb"
    assert (folder / "diagnostics" / "host-noise.json").is_file()
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "diagnostics" not in out and "ok " in out
    assert "host-noise" not in str(list(load_machine(folder).documents))


# ── export ──────────────────────────────────────────────────────────────────────────────────

def test_export_csv_to_stdout(capsys):
    assert main(["export", str(FIXTURES)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["machine"] for r in rows} == {"h100-80gb", "cpu-test"}
    bf16 = next(r for r in rows if r["machine"] == "h100-80gb" and r["precision"] == "bf16")
    doc = load_document(H100 / "ceilings.json")
    assert float(bf16["value"]) == next(m for m in doc.payload.matmul if m.dtype == "bf16").flops_per_s.median


def test_export_json_to_file(tmp_path, capsys):
    out = tmp_path / "tidy.json"
    assert main(["export", str(H100), "--json", "-o", str(out)]) == 0
    records = json.loads(out.read_text(encoding="utf-8"))
    assert {r["machine"] for r in records} == {"h100-80gb"}
    assert f"to {out}" in capsys.readouterr().out


def test_export_csv_and_json_are_exclusive(capsys):
    assert main(["export", str(H100), "--csv", "--json"]) == 2
    assert "not allowed with" in capsys.readouterr().err


def test_export_of_a_bad_folder_is_one_line(tmp_path, capsys):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "ceilings.json").write_text(newer_version(json.loads((H100 / "ceilings.json").read_text())))
    assert main(["export", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert f"{folder / 'ceilings.json'}: schema_version:" in err


def test_export_of_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# ── report, site (stand-ins for the rendering functions, to test only the wiring) ─────────────

def fake_module(monkeypatch, name: str, func_name: str, func) -> None:
    module = types.ModuleType(name)
    setattr(module, func_name, func)
    monkeypatch.setitem(sys.modules, name, module)


def test_report_calls_render_report(monkeypatch, tmp_path, capsys):
    calls = []
    fake_module(monkeypatch, "planner.render.report", "render_report",
                lambda results, out, paper, job, others, full: calls.append((results, out, paper, job, others, full))
                or [out / "r.pdf"])
    assert main(["report", str(H100), "--out", str(tmp_path)]) == 0
    assert main(["report", str(H100), "--out", str(tmp_path), "--paper", "letter"]) == 0
    assert main(["report", str(H100), "--out", str(tmp_path), "--job", "gpt-small bf16 tokens=1B"]) == 0
    assert [c[:3] for c in calls] == [(H100, tmp_path, "a4"), (H100, tmp_path, "letter"), (H100, tmp_path, "a4")]
    assert calls[0][3] is None and calls[2][3].spec == "gpt-small bf16 tokens=1B"
    assert all(c[4] == [] and c[5] is False for c in calls)   # the folder alone, the short PDF
    other = FROZEN / "h200"
    assert main(["report", str(H100), "--out", str(tmp_path), "--full", "--with", str(other)]) == 0
    assert [m.machine for m in calls[3][4]] == ["h200"] and calls[3][5] is True
    assert f"wrote {tmp_path / 'r.pdf'}" in capsys.readouterr().out


def test_report_help_names_the_planners_default_job():
    from planner.cli import DEFAULT_JOB_HELP
    from planner.plan.plan import DEFAULT_JOB

    assert DEFAULT_JOB_HELP == repr(DEFAULT_JOB)


def test_report_refuses_a_paper_it_does_not_know(capsys):
    assert main(["report", str(H100), "--paper", "a5"]) == 2
    assert "invalid choice: 'a5'" in capsys.readouterr().err


def test_site_calls_build_site_with_default_out(monkeypatch, capsys):
    calls = []
    fake_module(monkeypatch, "planner.site.build", "build_site",
                lambda root, out, **options: calls.append((root, out, options)))
    assert main(["site", str(FIXTURES)]) == 0
    assert main(["site", str(FIXTURES), "--no-pdf", "--paper", "letter", "--cache", "kept"]) == 0
    # stderr captured here is no terminal: no progress bar, so that a log holds only the result or one error line
    assert calls == [(FIXTURES, Path("site/_build"), {"pdf": True, "paper": "a4", "progress": False, "cache": None}),
                     (FIXTURES, Path("site/_build"), {"pdf": False, "paper": "letter", "progress": False,
                                                      "cache": Path("kept")})]


def test_document_error_inside_a_command_is_one_line(monkeypatch, capsys):
    def render_report(results, out, paper, job, others, full):
        raise DocumentError(results / "ceilings.json", "payload.matmul", "empty")

    fake_module(monkeypatch, "planner.render.report", "render_report", render_report)
    assert main(["report", str(H100)]) == 2
    assert capsys.readouterr().err == f"gpuplan: error: {H100 / 'ceilings.json'}: payload.matmul: empty\n"


# ── specs, help, collect ────────────────────────────────────────────────────────────────────

def test_specs_lists_the_catalog(capsys):
    assert main(["specs", "--gpus"]) == 0
    lines = capsys.readouterr().out.splitlines()
    h100 = [line for line in lines if line.startswith("H100 SXM ")]   # one row in each table the columns split into
    assert "3350" in h100[0] and any("989" in row for row in h100) and any("1979" in row for row in h100)
    assert "Sources (datasheet figures, dense):" in lines and any(line.startswith("  H100 SXM: ") for line in lines)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command, capfd):  # capfd: `collect` runs the collectors in a child process
    assert main([command, "--help"]) == 0
    out = capfd.readouterr().out
    assert out.startswith(f"usage: gpuplan {command}")
    assert len(out.splitlines()) > 4


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().err


def test_collect_environment_writes_a_valid_document(tmp_path, capfd):
    assert main(["collect", "--only", "environment", "--out", str(tmp_path), "--machine", "Box 1/.."]) == 0
    (path,) = (tmp_path / "box-1").glob("*.json")
    assert load_document(path).kind == "environment"
    assert "Collected into" in capfd.readouterr().out


def test_real_subprocess_help_and_validate(tmp_path):
    run = [sys.executable, "-m", "planner.cli"]
    help_ = subprocess.run([*run, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert help_.returncode == 0 and all(c in help_.stdout for c in COMMANDS)
    ok = subprocess.run([*run, "validate", str(FIXTURES)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    bad = broken_copy(tmp_path, truncated)
    fail = subprocess.run([*run, "validate", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert fail.returncode == 2
    assert fail.stderr.splitlines() == [fail.stderr.strip()] and str(bad) in fail.stderr
    assert "Traceback" not in fail.stderr


def test_a_closed_pipe_ends_quietly():  # regression: `gpuplan plan … | head` printed "Broken pipe", exit 2
    proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "plan", str(FROZEN / "h100-80gb")],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader has gone before the first line is written
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""
