"""The site's incremental rebuild (planner/site/cache.py): a page is made again exactly when what it is made
from changed, and a rebuild from the cache gives the bytes a build from nothing gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from paths import FROZEN, copy_machine

import planner.site.cache as site_cache
from gpuplan_schema.schema import DocumentError
from planner.site.build import STAMP_RE, make_site
from planner.site.cache import CACHE_DIR, code_files


def scaled(value: object, factor: float) -> object:
    """Every float of a payload times `factor` (a statistic's figures alike, so it stays ordered)."""
    if isinstance(value, dict):
        return {k: scaled(v, factor) for k, v in value.items()}
    if isinstance(value, list):
        return [scaled(v, factor) for v in value]
    return value * factor if isinstance(value, float) else value


def published(out: Path) -> dict[str, bytes]:
    """The site's files (the cache left out), the index's build stamp masked."""
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*")
             if p.is_file() and CACHE_DIR not in p.parts}
    files["index.html"] = STAMP_RE.sub(r"\1\2\3", files["index.html"].decode()).encode()
    return files


@pytest.fixture()
def root(tmp_path):
    """Two hosts of one GPU type (h200-a stands for the type in the checks between machines) and a CPU box."""
    root = tmp_path / "results"
    copy_machine(FROZEN / "h200", root / "h200-a", "h200-a")
    copy_machine(FROZEN / "h200", root / "h200-b", "h200-b")
    copy_machine(FROZEN / "vm-cpu", root / "cpu", "cpu")
    return root


def test_an_unchanged_root_is_read_from_the_cache_and_a_changed_machine_alone_is_made_again(root, tmp_path):
    out = tmp_path / "site"
    assert sorted(make_site(root, out, pdf=False).rendered) == ["cpu", "h200-a", "h200-b"]
    again = make_site(root, out, pdf=False)
    assert again.rendered == [] and sorted(again.cached) == ["cpu", "h200-a", "h200-b"]
    # h200-b's hostname: its own page changes, nothing a plan reads of it does
    env = root / "h200-b" / "environment.json"
    env.write_text(env.read_text(encoding="utf-8").replace('"hostname": "vm"', '"hostname": "rack-7"'),
                   encoding="utf-8")
    changed = make_site(root, out, pdf=False)
    assert changed.rendered == ["h200-b"] and sorted(changed.cached) == ["cpu", "h200-a"]
    assert "rack-7" in (out / "machines" / "h200-b" / "appendix.html").read_text(encoding="utf-8")  # the method
    assert published(out) == published(make_site(root, tmp_path / "fresh", pdf=False).index.parent)


def test_a_change_that_the_other_plans_read_makes_every_page_again(root, tmp_path):
    out = tmp_path / "site"
    make_site(root, out, pdf=False)
    # h200-a stands for the H200s: its figures set the published check's residuals, so every plan's bands
    path = root / "h200-a" / "workload-resnet50.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["payload"] = scaled(doc["payload"], 1.07)
    path.write_text(json.dumps(doc), encoding="utf-8")
    changed = make_site(root, out, pdf=False)
    assert sorted(changed.rendered) == ["cpu", "h200-a", "h200-b"]
    assert published(out) == published(make_site(root, tmp_path / "fresh", pdf=False).index.parent)


def test_a_change_to_gpuplan_makes_every_page_again(root, tmp_path, monkeypatch):
    out = tmp_path / "site"
    make_site(root, out, pdf=False)
    monkeypatch.setattr(site_cache, "code_digest", lambda: "another gpuplan")
    assert sorted(make_site(root, out, pdf=False).rendered) == ["cpu", "h200-a", "h200-b"]
    names = {path.name for _, path in code_files()}
    assert {"gpus.json", "instances.json", "plan.py", "report.html.j2"} <= names  # catalogs and templates too


def test_the_cache_holds_one_build_and_a_broken_entry_is_made_again(root, tmp_path):
    out = tmp_path / "site"
    make_site(root, out, pdf=False)
    entries = sorted((out / CACHE_DIR).glob("*.pickle"))
    (root / "cpu").rename(tmp_path / "cpu-gone")
    make_site(root, out, pdf=False)
    assert len(list((out / CACHE_DIR).glob("*.pickle"))) < len(entries)  # the gone machine's entries went
    for path in (out / CACHE_DIR).glob("page-*.pickle"):
        path.write_bytes(b"not a pickle")
    assert sorted(make_site(root, out, pdf=False).rendered) == ["h200-a", "h200-b"]


def test_a_folder_of_foreign_json_is_skipped_with_one_line_naming_it(root, tmp_path, capsys):
    notes = root / "notes"
    notes.mkdir()
    (notes / "package.json").write_text('{"name": "x"}', encoding="utf-8")
    build = make_site(root, tmp_path / "site", pdf=False)
    assert "notes" not in build.rendered + build.cached
    lines = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(lines) == 1 and str(notes) in lines[0] and "package.json" in lines[0]
    assert re.search(r"1 JSON file that is no gpuplan document", lines[0])


def test_folders_read_on_every_core_stop_at_the_first_bad_document_in_order(tmp_path, monkeypatch):
    """A root large enough to be read by workers (planner/site/load.py): two bad documents, the first in folder
    order is the one line, as a serial read says it, and nothing is written."""
    import planner.site.machines as site_machines

    root = tmp_path / "results"
    for i in range(site_machines.PARALLEL_FROM + 2):
        copy_machine(FROZEN / "vm-cpu", root / f"m{i:02d}", f"m{i:02d}")
    for name in ("m03", "m07"):
        env = root / name / "environment.json"
        env.write_text(env.read_text(encoding="utf-8")[:80], encoding="utf-8")
    with pytest.raises(DocumentError, match=r"m03/environment\.json") as parallel:
        make_site(root, tmp_path / "site", pdf=False)
    monkeypatch.setattr(site_machines, "PARALLEL_FROM", 10**6)
    with pytest.raises(DocumentError) as serial:
        make_site(root, tmp_path / "site", pdf=False)
    assert str(parallel.value) == str(serial.value) and not (tmp_path / "site").exists()


def test_the_sites_csv_is_every_machines_records_under_one_header(root, tmp_path):
    """Each machine's part of the CSV is made as its folder is read (and kept with it): the whole is the export's."""
    from gpuplan_schema.results import load_results_root
    from planner.export.frame import machines_frame, to_csv
    from planner.site.build import CSV_NAME

    out = tmp_path / "site"
    make_site(root, out, pdf=False)
    expected = to_csv(machines_frame(load_results_root(root)))
    assert (out / CSV_NAME).read_text(encoding="utf-8") == expected and expected.count("\n") > 100
    make_site(root, out, pdf=False)
    assert (out / CSV_NAME).read_text(encoding="utf-8") == expected


def test_a_cache_outside_the_site_leaves_the_published_folder_clean(root, tmp_path, capsys):
    """`gpuplan site --cache DIR`: the site's folder holds only what is published, and the rebuild reads DIR."""
    from planner.cli import main as gpuplan

    out, kept = tmp_path / "site", tmp_path / "kept"
    assert gpuplan(["site", str(root), "--out", str(out), "--no-pdf", "--cache", str(kept)]) == 0
    assert not (out / CACHE_DIR).exists() and any(kept.glob("page-*.pickle"))
    first = published(out)
    again = make_site(root, out, pdf=False, cache=kept)
    assert again.rendered == [] and published(out) == first
    capsys.readouterr()
