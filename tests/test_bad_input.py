"""Bad input, one case per kind of fault: each is refused with one line naming the file and the field,
exit status 2, and nothing already written is overwritten. Corrupt and implausible documents (through
the loader, `gpuplan validate` and `gpuplan report`), bad user workload files and unknown workloads
(through `collect`), unknown GPUs and instances (planner.specs.require_gpu / require_instance), a plan of a
CPU-only folder and a `--job` too small to rank (a unit-less token count).

BAD_DOCUMENTS and BAD_WORKLOADS are what docs/reliability.md counts."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from paths import FIXTURES, FROZEN, REPO

from collectors.__main__ import main as collect_main
from gpuplan_schema.schema import MAX_DOCUMENT_BYTES, DocumentError, load_document
from planner.cli import main as gpuplan
from planner.specs import UnknownSpec, require_gpu, require_instance

GOOD = FROZEN / "vm-cpu" / "workload-mlp-stgan.json"


def edit(change: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def apply(data: bytes) -> bytes:
        doc = json.loads(data)
        change(doc)
        return json.dumps(doc).encode()
    return apply


def point(field: str, value: object) -> Callable[[bytes], bytes]:
    return edit(lambda doc: doc["payload"]["points"][0].__setitem__(field, value))


def without_point_field(field: str) -> Callable[[bytes], bytes]:
    return edit(lambda doc: doc["payload"]["points"][0].pop(field))


def negated_stat(doc: dict) -> None:
    doc["payload"]["points"][0]["step_s"] = {k: -v if k != "n" else v
                                             for k, v in doc["payload"]["points"][0]["step_s"].items()}


# name: (how the good document is broken, the field named, what the problem says)
BAD_DOCUMENTS: dict[str, tuple[Callable[[bytes], bytes], str, str]] = {
    "truncated": (lambda data: data[:len(data) // 2], "", "not valid JSON"),
    "not-json": (lambda data: b"collected fine, trust me", "", "not valid JSON"),
    "empty": (lambda data: b"", "", "not valid JSON"),
    "binary": (lambda data: b"\xff\xfe\x00\x01" + data, "", "not UTF-8 text"),
    "a-list": (lambda data: b"[" + data + b"]", "", "not a JSON object"),
    "too-deep": (lambda data: b"[" * 200_000 + b"]" * 200_000, "", "nested too deeply"),
    "newer-schema": (edit(lambda doc: doc.__setitem__("schema_version", 2)), "schema_version",
                     "version 2 is newer than this gpuplan reads (1); upgrade gpuplan"),
    "schema-as-text": (edit(lambda doc: doc.__setitem__("schema_version", "1")), "schema_version",
                       "is not a positive whole number"),
    "unknown-kind": (edit(lambda doc: doc.__setitem__("kind", "benchmark")), "kind", "unknown kind 'benchmark'"),
    "no-payload": (edit(lambda doc: doc.pop("payload")), "payload", "missing"),
    "missing-field": (without_point_field("batch"), "payload.points[0].batch", "missing"),
    "mistyped-field": (point("batch", "256"), "payload.points[0].batch", "expected int, got str"),
    "nan": (lambda data: data.replace(b'"throughput_per_s": ', b'"throughput_per_s": NaN, "x": ', 1), "",
            "JSON holds NaN, which is not a number"),
    "infinity": (lambda data: data.replace(b'"elapsed_s": ', b'"elapsed_s": Infinity, "x": ', 1), "",
                 "JSON holds Infinity"),
    "negative-step": (edit(negated_stat), "payload.points[0].step_s.median", "is negative"),
    "batch-zero": (point("batch", 0), "payload.points[0]", "batch is 0; a point's batch is at least 1"),
    "seq-len-zero": (point("seq_len", 0), "payload.points[0].seq_len", "0 is below 1; a seq len is at least 1"),
    "absurd-fraction": (point("achieved_flops_fraction", 2e6), "payload.points[0].achieved_flops_fraction",
                        "2e+06 is not a plausible fraction of a measured ceiling"),
    "absurd-duration": (point("wall_s", 3e9), "payload.points[0].wall_s", "longer than any collection runs"),
    "absurd-number": (point("flops_per_step", 1e300), "payload.points[0].flops_per_step",
                      "beyond any plausible measurement"),
    # regression: 2**63 passed the magnitude check and overflowed the site's Int64 CSV column (a fuzz case)
    "batch-beyond-int64": (point("batch", 2**63), "payload.points[0].batch", "beyond any plausible count"),
    "huge-integer": (lambda data: data.replace(b'"parameters": ', b'"parameters": 1' + b"0" * 5000 + b', "x": ', 1),
                     "", "Exceeds the limit"),
    "ok-without-time": (point("step_s", None), "payload.points[0]", "status is ok but a timed point's step_s"),
    "control-character": (edit(lambda doc: doc["payload"].__setitem__("workload", "mlp\x00stgan")),
                          "payload.workload", "control character U+0000"),
    "bad-time": (edit(lambda doc: doc.__setitem__("created", "yesterday")), "created", "is not a UTC time"),
    "implausible-time": (edit(lambda doc: doc.__setitem__("created", "1970-01-01T00:00:00Z")), "created",
                         "not a plausible collection time"),
}


@pytest.fixture
def machine(tmp_path) -> Path:
    """A machine folder of real documents, and a report already rendered from it."""
    folder = tmp_path / "results" / "vm-cpu"
    folder.mkdir(parents=True)
    for path in GOOD.parent.glob("*.json"):
        (folder / path.name).write_bytes(path.read_bytes())
    return folder


def run(main: Callable[[list[str]], int], args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        return main(args), err.getvalue()


@pytest.mark.parametrize("case", list(BAD_DOCUMENTS))
def test_a_bad_document_is_refused_naming_file_and_field(tmp_path, case):
    breaks, field, problem = BAD_DOCUMENTS[case]
    path = tmp_path / "workload-mlp-stgan.json"
    path.write_bytes(breaks(GOOD.read_bytes()))
    with pytest.raises(DocumentError) as caught:
        load_document(path)
    assert (caught.value.path, caught.value.field) == (str(path), field)
    assert problem in caught.value.problem
    rc, err = run(gpuplan, ["validate", str(path)])
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"gpuplan: error: {path}: {field}")


@pytest.mark.parametrize("case", ["truncated", "newer-schema", "negative-step", "ok-without-time"])
def test_report_on_a_bad_document_keeps_the_earlier_report(machine, tmp_path, case):
    out = tmp_path / "reports"
    (out / "vm-cpu").mkdir(parents=True)
    earlier = {name: f"an earlier {name}".encode() for name in ("index.html", "report.pdf")}
    for name, data in earlier.items():
        (out / "vm-cpu" / name).write_bytes(data)
    bad = machine / "workload-mlp-stgan.json"
    bad.write_bytes(BAD_DOCUMENTS[case][0](bad.read_bytes()))
    rc, err = run(gpuplan, ["report", str(machine), "--out", str(out)])
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"gpuplan: error: {bad}: ")
    assert {p.name: p.read_bytes() for p in (out / "vm-cpu").iterdir()} == earlier


def test_what_is_not_a_regular_file_or_too_large_is_refused_without_reading_it(tmp_path):
    folder = tmp_path / "ceilings.json"
    folder.mkdir()
    with pytest.raises(DocumentError, match="not a regular file"):
        load_document(folder)
    huge = tmp_path / "environment.json"
    with huge.open("wb") as f:  # sparse: no disk is used
        f.truncate(MAX_DOCUMENT_BYTES + 1)
    with pytest.raises(DocumentError, match="larger than any gpuplan document"):
        load_document(huge)


# name: (the user file's text, what the error line says after the file's path)
BAD_WORKLOADS = {
    "raises-on-import": ("import nonexistent_module_xyz\n", "importing it raised ModuleNotFoundError"),
    "exits-on-import": ("import sys\nsys.exit(3)\n", "importing it raised SystemExit: 3"),
    "syntax-error": ("def build(:\n", "importing it raised SyntaxError"),
    "function-raises": ("def build():\n    raise ValueError('no GPU')\n", "build() raised ValueError: no GPU"),
    "function-exits": ("def build():\n    raise SystemExit('bye')\n", "build() raised SystemExit: bye"),
    "returns-a-list": ("def build():\n    return []\n", "the workload function must return a dict, got list"),
    "no-such-function": ("def other():\n    pass\n", "build: no such function in the file"),
    "bad-key": ("import torch\ndef build():\n    return {'name': 'x', 'model': torch.nn.Linear(1, 1), "
                "'make_batch': print, 'loss': None, 'batch_start': 0}\n", "batch_start: invalid value 0"),
}


@pytest.mark.parametrize("case", list(BAD_WORKLOADS))
def test_a_bad_user_workload_stops_collect_before_anything_is_written(tmp_path, case):
    text, message = BAD_WORKLOADS[case]
    user = tmp_path / f"{case}.py"
    user.write_text(text)
    folder = tmp_path / "out" / "m"
    folder.mkdir(parents=True)
    kept = folder / "environment.json"
    kept.write_bytes(b"collected earlier")
    rc, err = run(collect_main, ["--only", "environment", "workloads", "--workload", f"{user}:build",
                                 "--out", str(tmp_path / "out"), "--machine", "m"])
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"error: {user}: ") and message in err, err
    assert sorted(p.name for p in folder.iterdir()) == ["environment.json"]
    assert kept.read_bytes() == b"collected earlier"


def test_an_unknown_workload_or_time_limit_stops_collect_in_one_line(tmp_path):
    rc, err = run(collect_main, ["--workload", "gpt-huge", "--out", str(tmp_path), "--machine", "m"])
    assert rc == 2 and err == ("error: gpt-huge: not a built-in workload (gpt-small, resnet50, mlp-stgan, "
                               "conv-rollout) nor path/to/file.py:function\n")
    rc, err = run(collect_main, ["--point-timeout", "-5", "--out", str(tmp_path), "--machine", "m"])
    assert rc == 2 and "--point-timeout -5: expected a positive number of seconds" in err
    assert not (tmp_path / "m").exists()


def test_an_unknown_gpu_or_instance_is_one_line_with_close_names():
    with pytest.raises(UnknownSpec) as caught:
        require_gpu("H10")
    message = str(caught.value)
    assert message.startswith("--target: 'H10' is not a GPU of planner/specs/gpus.json; close: 'H100 SXM'")
    assert message.endswith("(gpuplan specs --gpus lists them)") and "\n" not in message
    assert require_gpu("NVIDIA H100 80GB HBM3").name == "H100 SXM"  # as NVML reports it
    with pytest.raises(UnknownSpec, match=r"'p5\.48' is not an instance .*close: 'p5\.48xlarge'"):
        require_instance("p5.48")
    assert require_instance("aws:p5.48xlarge").gpu_count == 8
    with pytest.raises(UnknownSpec, match="'<script>' is not a GPU .*; nothing close"):
        require_gpu("<script>", option="--gpu")


def run_gpuplan(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = gpuplan(args)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("folder", [FIXTURES / "cpu-test", FROZEN / "vm-cpu"], ids=["fixture", "vm-cpu"])
def test_plan_of_a_cpu_only_folder_says_what_it_can_and_cannot_plan(folder):
    code, out, err = run_gpuplan(["plan", str(folder)])
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err == (f"gpuplan: error: {folder} measured a CPU (no GPU): gpuplan plan needs a GPU machine's ceilings "
                   f"and workloads; `gpuplan report {folder}` still shows what was measured\n")


@pytest.mark.parametrize(("job", "word", "says"), [
    ("gpt-small bf16 tokens=300", "tokens=300", "did you mean tokens=300B?"),
    ("gpt-small bf16 tokens=5000", "tokens=5000", "did you mean tokens=5000B?"),
    ("gpt-small bf16 tokens=300000", "tokens=300000", "did you mean tokens=300000M?"),  # 300B, not 300 trillion
    ("gpt-small bf16 tokens=1e3", "tokens=1e3", "the job is 0.98 samples, less than one: nothing to rank"),
    ("resnet50 bf16 samples=0.5", "samples=0.5", "the job is 0.5 samples, less than one"),
])
def test_a_job_too_small_to_rank_is_refused_naming_the_job_field(job, word, says):
    code, out, err = run_gpuplan(["plan", str(FROZEN / "h100-80gb"), "--job", job])
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"gpuplan: error: --job {job!r}: {word}: ") and says in err


def test_a_pdf_without_the_systems_pango_says_what_to_install():
    from planner.cli import format_error

    error = OSError("cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file")
    line = format_error(error)
    assert line.startswith("gpuplan: error: cannot load library 'libpango-1.0-0'") and "\n" not in line
    assert "apt-get install libpango-1.0-0 libpangoft2-1.0-0" in line and "site --no-pdf need none" in line


def test_a_token_count_with_its_suffix_is_taken_as_written():
    from planner.rank.jobs import parse_job

    assert parse_job("gpt-small bf16 tokens=300B").tokens == 300e9
    assert parse_job("gpt-small bf16 tokens=300k").samples == pytest.approx(300e3 / 1024)  # small, but meant


def test_committed_results_and_fixtures_pass_the_plausibility_checks():
    paths = sorted([*REPO.glob("results/*/*.json"),  # documents, not the benchmarks' diagnostics/
                    *(p for p in REPO.glob("tests/fixtures/**/*.json") if "diagnostics" not in p.parts)])
    assert len(paths) >= 30
    for path in paths:
        load_document(path)
    assert os.path.getsize(max(paths, key=os.path.getsize)) < MAX_DOCUMENT_BYTES // 50


def test_plan_of_a_results_root_or_a_file_says_which_folder_to_give(tmp_path):
    code, out, err = run_gpuplan(["plan", str(FROZEN)])
    assert (code, out) == (2, "") and err.count("\n") == 1
    machines = sorted(p.name for p in FROZEN.iterdir() if p.is_dir() and any(p.glob("*.json")))
    assert err.endswith(f"it holds machine folders: give one of {', '.join(machines)}\n")
    file = tmp_path / "notes.json"
    file.write_text("{}")
    code, out, err = run_gpuplan(["plan", str(file)])
    assert (code, out, err) == (2, "", f"gpuplan: error: {file}: not a results folder (a file)\n")
