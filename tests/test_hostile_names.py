"""Hostile content in a results folder: machine ids, hostnames, GPU, CPU and workload names holding
markup, script, quotes, template syntax, `../` and path separators. They must be shown as text in the
HTML, the PDF and the site (escaped, never run), never lead a file out of the output folder, and a
workload named like a user file (`path.py:fn`) is never executed outside `collect`.

HOSTILE below is what docs/reliability.md counts as the hostile names tried."""

from __future__ import annotations

import csv
import html.parser
import io
import json
import os
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from paths import FROZEN
from pypdf import PdfReader

from gpuplan_schema.schema import load_document
from planner.cli import main as gpuplan
from planner.site.build import CSV_NAME

HOSTILE = {
    "machine": "<script>alert('machine')</script>/../../escape",
    "hostname": "\"'><img src=x onerror=alert('host')>",
    "cpu": "</script><script>alert('cpu')</script>",
    "gpu": "</title><svg onload=alert('gpu')>{{ 7*7 }}",
    "workload": "../../../escape/<b onmouseover=alert('w')>x</b>\\..\\w",
    "unit": "</style><script>alert('unit')</script>",
    "source": "<!-- --><iframe src=javascript:alert('src')>",
    "op": "</script><script>alert('op')</script>",
}
# Names a spreadsheet would run as formulas (OWASP CSV injection), one per leading character it runs.
FORMULAS = {**HOSTILE, "machine": '=HYPERLINK("http://x","y")', "gpu": "@SUM(1+1)", "workload": "+cmd",
            "op": "\t=1+1"}
GPU_DOCS = ("environment", "ceilings", "workload-gpt-small", "roofline-gpt-small")
CPU_DOCS = ("environment", "ceilings", "workload-mlp-stgan")


def make_hostile(doc: dict, names: dict[str, str] = HOSTILE) -> dict:
    """A real document with every name it holds replaced by a hostile one."""
    doc = json.loads(json.dumps(doc))
    doc["machine"] = names["machine"]
    payload = doc["payload"]
    if doc["kind"] == "environment":
        payload["hostname"] = names["hostname"]
        payload["cpu"]["model"] = names["cpu"]
        for gpu in payload["gpus"]:
            gpu["name"] = names["gpu"]
    if doc["kind"] == "ceilings":
        payload["device_name"] = names["gpu"] if payload["device"] == "cuda" else names["cpu"]
    if doc["kind"] in ("workload", "roofline"):  # each machine's workload keeps a name (and a page) of its own
        payload["workload"], payload["source"] = names["workload"] + payload["workload"], names["source"]
    if doc["kind"] == "roofline":  # op and kernel names go into the charts' JSON data blocks
        payload["ops"][0]["name"] = payload["ops"][0]["kernels"][0]["name"] = names["op"]
    if doc["kind"] == "workload":
        payload["unit"] = names["unit"]
    return doc


def plain_gpu(doc: dict) -> dict:
    """The benign twin names its GPU plainly but, like the hostile name, not as the catalog does: both sites
    then take the same paths (no plan for an unknown GPU), and only the escaping of the names differs."""
    doc = json.loads(json.dumps(doc))
    payload = doc["payload"]
    for gpu in payload.get("gpus", []) if doc["kind"] == "environment" else []:
        gpu["name"] = PLAIN_GPU
    if doc["kind"] == "ceilings" and payload["device"] == "cuda":
        payload["device_name"] = PLAIN_GPU
    return doc


PLAIN_GPU = "Plain GPU"


def write_machine(folder: Path, source: str, stems: tuple[str, ...], hostile: bool,
                  names: dict[str, str] = HOSTILE) -> None:
    folder.mkdir(parents=True)
    for stem in stems:
        doc = json.loads((FROZEN / source / f"{stem}.json").read_text(encoding="utf-8"))
        doc = make_hostile(doc, names) if hostile else plain_gpu({**doc, "machine": folder.name})
        (folder / f"{stem}.json").write_text(json.dumps(doc), encoding="utf-8")


def run(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        return gpuplan(args), err.getvalue()


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


class Elements(html.parser.HTMLParser):
    """The element structure of a page: tags and attribute names, and the text of its <title>."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes |= {name for name, _ in attrs}


def elements(page: Path) -> Elements:
    parser = Elements()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A hostile results root and a benign twin (the same documents, plain names), each built as a site
    with PDFs; returns (the sandbox, the hostile site, the benign site)."""
    sandbox = tmp_path_factory.mktemp("sandbox")
    for kind, hostile in (("hostile", True), ("benign", False)):
        write_machine(sandbox / kind / "gpu-box", "h100-80gb", GPU_DOCS, hostile)
        write_machine(sandbox / kind / "cpu-box", "vm-cpu", CPU_DOCS, hostile)
    # the hostile machines must not share one id: the CPU box keeps a name of its own beside the markup
    for path in (sandbox / "hostile" / "cpu-box").glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps({**doc, "machine": doc["machine"] + " cpu"}), encoding="utf-8")
    before = files_under(sandbox)
    for kind in ("hostile", "benign"):
        rc, err = run(["site", str(sandbox / kind), "--out", str(sandbox / f"site-{kind}")])
        assert rc == 0, err
    written = files_under(sandbox) - before
    assert {Path(p).parts[0] for p in written} == {"site-hostile", "site-benign"}  # nothing outside the outputs
    return sandbox, sandbox / "site-hostile", sandbox / "site-benign"


def test_no_file_is_written_outside_the_output_and_names_are_sanitised(built):
    sandbox, site, _ = built
    assert not (sandbox / "escape").exists() and not (sandbox.parent / "escape").exists()
    machines = sorted(p.name for p in (site / "machines").iterdir())
    workloads = sorted(p.name for p in (site / "workloads").iterdir())
    assert all(set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789._-") for name in machines + workloads)
    assert len(machines) == 2 and len(workloads) == 2


def test_the_pages_have_the_same_elements_as_with_plain_names(built):
    """Escaped text adds no element and no attribute: no script, img, svg, iframe, no on* handler."""
    _, site, benign = built
    hostile_pages = sorted(p.relative_to(site) for p in site.rglob("*.html"))
    benign_pages = sorted(p.relative_to(benign) for p in benign.rglob("*.html"))
    # index, accuracy, job chooser, 2 machine pages and their 2 appendix pages, 2 workloads
    assert len(hostile_pages) == len(benign_pages) == 9
    for page in hostile_pages:
        found = elements(site / page)
        assert not any(a.startswith("on") for a in found.attributes), page
        assert not {"img", "svg", "iframe", "b"} & set(found.tags), page
    def scripts(root: Path, pages: list[Path]) -> list[int]:
        return sorted(elements(root / page).tags.count("script") for page in pages)

    assert scripts(site, hostile_pages) == scripts(benign, benign_pages)


def test_the_hostile_names_are_shown_as_text_not_dropped(built):
    _, site, _ = built
    text = "\n".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    for name in HOSTILE.values():
        assert name not in text  # never verbatim: every one holds markup
    assert "&lt;script&gt;alert(&#39;machine&#39;)&lt;/script&gt;/../../escape" in text
    assert "{{ 7*7 }}" in text.replace("&#39;", "'")  # template syntax from a document is text, not evaluated
    # in the JSON data blocks of the charts the markup is escaped as JSON escapes
    assert "\\u003cscript\\u003ealert(?op?)" in text  # (chart labels show quotes and slashes as '?')


def test_the_pdf_shows_the_names_as_text(built):
    _, site, _ = built
    pdfs = sorted(site.rglob("report.pdf"))
    assert len(pdfs) == 2
    text = "".join(page.extract_text() for pdf in pdfs for page in PdfReader(pdf).pages)
    assert "<script>alert('machine')</script>" in text
    assert "alert('cpu')" in text


def test_names_a_spreadsheet_would_run_are_quoted_text_in_the_export_and_the_site_csv(tmp_path, capsys):
    write_machine(tmp_path / "root" / "gpu-box", "h100-80gb", GPU_DOCS, hostile=True, names=FORMULAS)
    assert gpuplan(["export", str(tmp_path / "root")]) == 0
    exported = capsys.readouterr().out
    assert gpuplan(["site", str(tmp_path / "root"), "--out", str(tmp_path / "site"), "--no-pdf"]) == 0
    with (tmp_path / "site" / CSV_NAME).open(encoding="utf-8", newline="") as f:  # a quoted CR stays in its cell
        assert f.read() == exported  # one writer, one guard
    rows = list(csv.DictReader(io.StringIO(exported, newline="")))
    assert {(r["machine"], r["gpu"]) for r in rows} == {("'" + FORMULAS["machine"], "'" + FORMULAS["gpu"])}
    assert {r["workload"] for r in rows} - {""} == {"'+cmdgpt-small"}
    assert "'\t=1+1" in {r["op"] for r in rows}  # the roofline op's name
    text = ("machine", "gpu", "collector", "workload", "op", "precision", "sweep", "layout", "allocator", "metric",
            "unit", "status", "bound")
    for row in rows:  # no text cell a spreadsheet would run is left; numbers are never quoted
        assert not any(row[c].startswith(("=", "+", "-", "@", "\t", "\r")) for c in text), row
        assert all(isinstance(float(row[c]), float) for c in ("batch", "value", "spread", "n") if row[c])


def test_a_workload_named_like_a_user_file_is_never_executed_outside_collect(tmp_path):
    marker = tmp_path / "executed"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('ran')\ndef build():\n    open({str(marker)!r}, 'w')\n")
    folder = tmp_path / "root" / "m"
    write_machine(folder, "vm-cpu", CPU_DOCS, hostile=False)
    path = folder / "workload-mlp-stgan.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["payload"]["workload"] = doc["payload"]["source"] = f"{evil}:build"
    path.write_text(json.dumps(doc), encoding="utf-8")
    for args in (["validate", str(folder)], ["export", str(folder)], ["report", str(folder), "--out",
                 str(tmp_path / "reports")], ["site", str(folder.parent), "--out", str(tmp_path / "site"), "--no-pdf"]):
        rc, err = run(args)
        assert rc == 0, (args, err)
    assert load_document(path).payload.workload == f"{evil}:build"
    assert not marker.exists()


def test_symlinks_in_a_results_root_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    write_machine(outside / "elsewhere", "vm-cpu", CPU_DOCS, hostile=False)
    root = tmp_path / "root"
    write_machine(root / "m", "vm-cpu", CPU_DOCS, hostile=False)
    (root / "linked").symlink_to(outside / "elsewhere", target_is_directory=True)  # a machine folder
    (root / "m" / "workload-resnet50.json").symlink_to(outside / "elsewhere" / "ceilings.json")  # a document
    rc, err = run(["site", str(root), "--out", str(tmp_path / "site"), "--no-pdf"])
    assert rc == 0, err  # the linked ceilings (machine 'elsewhere') would clash with 'm' if it were read
    assert sorted(p.name for p in (tmp_path / "site" / "machines").iterdir()) == ["m"]


def test_a_symlink_in_the_output_folder_cannot_lead_writes_out(tmp_path):
    root = tmp_path / "root"
    write_machine(root / "m", "vm-cpu", CPU_DOCS, hostile=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "workloads").symlink_to(elsewhere, target_is_directory=True)
    rc, err = run(["site", str(root), "--out", str(site), "--no-pdf"])
    assert rc == 2 and "outside the output folder" in err and err.count("\n") == 1
    assert list(elsewhere.iterdir()) == [] and sorted(os.listdir(site)) == ["workloads"]  # nothing written
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "m").symlink_to(elsewhere, target_is_directory=True)
    rc, err = run(["report", str(root / "m"), "--out", str(reports)])
    assert rc == 2 and "outside" in err and list(elsewhere.iterdir()) == []


def test_a_fifo_named_like_a_document_stops_the_report_instead_of_hanging(tmp_path):
    folder = tmp_path / "m"
    write_machine(folder, "vm-cpu", CPU_DOCS, hostile=False)
    os.mkfifo(folder / "workload-resnet50.json")  # reading it would wait for a writer for ever
    rc, err = run(["report", str(folder), "--out", str(tmp_path / "reports")])
    assert rc == 2 and "workload-resnet50.json: not a regular file" in err
    shutil.rmtree(folder)
