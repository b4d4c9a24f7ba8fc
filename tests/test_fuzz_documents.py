"""Property tests: generated documents (mutations of the real committed ones, tests/mutations.py) thrown
at the loader, `gpuplan report` and `gpuplan site`. Never a traceback: a document is read, or rejected
with one line naming the file (and the field); the commands exit 0 or 2, and when they exit 2 every
file already in the output folder is unchanged and none is added.

The loader gets LOADER_EXAMPLES documents; the commands, which render (the report a PDF too), fewer,
drawn from mutations the loader often accepts so that they reach the rendering code.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from mutations import REPO, base_documents, mutated_bytes

from gpuplan_schema.schema import DocumentError, load_document, save_document
from planner.cli import main as gpuplan

LOADER_EXAMPLES = 1200
REPORT_EXAMPLES = 10
SITE_EXAMPLES = 40
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]
# One machine folder holding a document of every kind (small ones), so that a mutation can reach
# every section of the report: its machine is renamed to match.
MIXED = {
    "environment": "tests/fixtures/frozen/vm-cpu/environment.json",
    "ceilings": "tests/fixtures/frozen/vm-cpu/ceilings.json",
    "workload-mlp-stgan": "tests/fixtures/frozen/vm-cpu/workload-mlp-stgan.json",
    "workload-gpt-small": "tests/fixtures/kill-resume-h100/partial-workload-gpt-small.json",
    "roofline-mlp-stgan": "tests/fixtures/frozen/h100-80gb/roofline-mlp-stgan.json",
    "dataloader": "tests/fixtures/frozen/h100-80gb/dataloader.json",
    "collectives": "tests/fixtures/multigpu/cpu-gloo-2/collectives.json",
    "ddp": "tests/fixtures/multigpu/cpu-gloo-2/ddp.json",
}
MACHINE = "mixed"


def mixed_documents() -> tuple[tuple[str, dict], ...]:
    docs = []
    for stem, source in MIXED.items():
        doc = json.loads((REPO / source).read_text(encoding="utf-8"))
        docs.append((f"{stem}.json", {**doc, "machine": MACHINE}))
    return tuple(docs)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def check_rejection(error: DocumentError, path: Path) -> None:
    message = str(error)
    assert message.startswith(f"{path}: ") and "\n" not in message and len(message) < 1000, message


@settings(max_examples=LOADER_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(case=mutated_bytes())
def test_the_loader_reads_or_rejects_every_mutated_document(scratch, case):
    _, data = case
    path = scratch / "document.json"
    path.write_bytes(data)
    try:
        doc = load_document(path)
    except DocumentError as e:
        check_rejection(e, path)
        return
    # what loads is clean: it saves as strict JSON and reads back the same
    assert load_document(save_document(doc, scratch / "again.json")) == doc


def test_the_mutations_cover_every_fixture_document():
    names = {name for name, _ in base_documents()}
    frozen = "tests/fixtures/frozen"
    assert len(names) >= 30 and {f"{frozen}/h100-80gb/ceilings.json", f"{frozen}/h200-x2/ddp.json"} <= names


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run_gpuplan(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        rc = gpuplan(args)
    return rc, err.getvalue()


@pytest.fixture(scope="module")
def mixed_root(scratch) -> Path:
    """results root / mixed / one document of each kind, and an output folder with files already in it."""
    folder = scratch / "root" / MACHINE
    folder.mkdir(parents=True)
    for name, doc in mixed_documents():
        (folder / name).write_text(json.dumps(doc), encoding="utf-8")
    assert run_gpuplan(["site", str(folder.parent), "--out", str(scratch / "site"), "--no-pdf"])[0] == 0
    return folder.parent


def exits_0_or_2_keeping_output(args: list[str], out: Path) -> int:
    before = snapshot(out)
    rc, err = run_gpuplan(args)
    assert rc in (0, 2), err
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gpuplan: error: "), err
        assert snapshot(out) == before  # nothing overwritten, nothing added
    return rc


def with_document(root: Path, name: str, data: bytes) -> Path:
    """Put a mutated document in the mixed folder in place of its original; return the original's copy."""
    path = root / MACHINE / name
    saved = root.parent / "original.json"
    shutil.copyfile(path, saved)
    path.write_bytes(data)
    return saved


@settings(max_examples=SITE_EXAMPLES, deadline=None, suppress_health_check=[*SLOW, HealthCheck.too_slow])
@given(case=mutated_bytes(documents=mixed_documents(), gentle=True))
def test_site_builds_or_stops_cleanly_on_every_mutated_document(mixed_root, scratch, case):
    name, data = case
    saved = with_document(mixed_root, name, data)
    try:
        exits_0_or_2_keeping_output(["site", str(mixed_root), "--out", str(scratch / "site"), "--no-pdf"],
                                    scratch / "site")
    finally:
        shutil.copyfile(saved, mixed_root / MACHINE / name)


@settings(max_examples=REPORT_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(case=mutated_bytes(documents=mixed_documents()[:3], gentle=True))
def test_report_renders_or_stops_cleanly_on_every_mutated_document(mixed_root, scratch, case):
    name, data = case
    out = scratch / "reports"
    (out / MACHINE).mkdir(parents=True, exist_ok=True)
    for existing in ("index.html", "report.pdf"):  # what an earlier run left: a failed run must keep it
        (out / MACHINE / existing).write_text(f"earlier {existing}\n")
    small = scratch / "small" / MACHINE  # environment, ceilings and one workload: a PDF in a second or two
    small.mkdir(parents=True, exist_ok=True)
    for keep, _ in mixed_documents()[:3]:
        shutil.copyfile(mixed_root / MACHINE / keep, small / keep)
    (small / name).write_bytes(data)
    exits_0_or_2_keeping_output(["report", str(small), "--out", str(out)], out)
