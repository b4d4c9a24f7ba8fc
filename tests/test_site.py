"""Static site of the real fixtures: index side by side, relative links, deterministic, rewrites nothing."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from paths import FIXTURES

from gpuplan_schema.results import load_results_root
from gpuplan_schema.schema import DocumentError
from planner.site.build import STAMP_RE, build_site
from planner.units import format_number

MACHINES = ("cpu-test", "h100-80gb")


def snapshot(folder: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Path, tuple[bytes, int]]]:
    out = tmp_path_factory.mktemp("site")
    index = build_site(FIXTURES, out)
    assert index == (out / "index.html").resolve()
    return out, snapshot(out)


def links(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


def test_index_lists_both_machines_with_relative_links_that_resolve(built):
    out, _ = built
    html = (out / "index.html").read_text(encoding="utf-8")
    hrefs = links(html)
    for machine in MACHINES:
        assert f"machines/{machine}/index.html" in hrefs
        assert f"machines/{machine}/report.pdf" in hrefs
    for href in hrefs:
        parts = urlsplit(href)
        assert not parts.scheme and not parts.netloc and not href.startswith("/"), href
        assert (out / parts.path).resolve().is_file(), href


def test_machine_pages_link_back_to_the_index(built):
    out, _ = built
    for machine in MACHINES:
        page = out / "machines" / machine / "index.html"
        html = page.read_text(encoding="utf-8")
        assert "../../index.html" in links(html)
        assert (page.parent / "../../index.html").resolve() == (out / "index.html").resolve()
        assert (page.parent / "report.pdf").is_file()


def test_index_shows_the_measured_peaks_side_by_side(built):
    out, _ = built
    html = (out / "index.html").read_text(encoding="utf-8")
    for machine in load_results_root(FIXTURES):
        bf16 = next(m.flops_per_s for m in machine.ceilings.matmul if m.dtype == "bf16")
        assert f">{format_number(bf16.median / 1e12)}</td>" in html
    assert "TFLOP/s" in html and "GB/s" in html and "µs" in html
    assert 'title="skipped: no fp8 matmul on the CPU"' in html  # a missing figure says why
    assert "<script src" not in html and 'id="machines"' in html


def test_rebuilding_gives_the_same_bytes_and_rewrites_nothing(built):
    out, first = built
    build_site(FIXTURES, out)
    assert snapshot(out) == first  # same bytes and same mtimes: nothing was rewritten


def test_a_fresh_build_differs_only_in_its_stamp(built, tmp_path):
    out, first = built
    other = tmp_path / "again"
    build_site(FIXTURES, other)
    second = snapshot(other)
    assert [p.relative_to(other) for p in second] == [p.relative_to(out) for p in first]
    for (path, (data, _)), (_, (again, _)) in zip(first.items(), second.items(), strict=True):
        if path.name == "index.html" and path.parent == out:
            mask = STAMP_RE.sub(r"\1\2\3", data.decode()), STAMP_RE.sub(r"\1\2\3", again.decode())
            assert mask[0] == mask[1]
            assert len(STAMP_RE.findall(data.decode())) == 1
        else:
            assert data == again, path


def test_truncated_document_raises_naming_the_file_and_leaves_the_site_alone(built, tmp_path):
    out, first = built
    root = tmp_path / "results"
    shutil.copytree(FIXTURES, root)
    target = root / "h100-80gb" / "environment.json"
    target.write_text(target.read_text(encoding="utf-8")[:100], encoding="utf-8")
    with pytest.raises(DocumentError, match="environment.json"):
        build_site(root, out)
    assert snapshot(out) == first


def test_machine_ids_that_sanitise_alike_are_refused_before_anything_is_written(tmp_path):
    root = tmp_path / "results"
    for folder, machine in (("a", "Lab Box"), ("b", "lab-box")):
        shutil.copytree(FIXTURES / "cpu-test", root / folder)
        for path in (root / folder).glob("*.json"):
            doc = json.loads(path.read_text(encoding="utf-8"))
            doc["machine"] = machine
            path.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "site"
    with pytest.raises(DocumentError, match="lab-box"):
        build_site(root, out)
    assert not out.exists()
