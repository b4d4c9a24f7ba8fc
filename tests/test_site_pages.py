"""The site's pages on the committed results: machines index with workloads, workload pages, accuracy page, CSV,
links, stale pages removed, PDFs rendered only when their report changed, parallel build = serial build."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from paths import FIXTURES, FROZEN, copy_machine

import planner.site.machines as site_machines
from gpuplan_schema.results import load_machine
from planner.check.accuracy import AccuracyRow
from planner.export.frame import load_frame, to_csv
from planner.model.workload_verdict import judged_point, main_batch
from planner.report.frame import build_report_for
from planner.report.summary import SummarySection
from planner.site.accuracy import build_accuracy_page
from planner.site.build import ACCURACY_NAME, CSV_NAME, MANIFEST_NAME, build_site
from planner.site.cache import CACHE_DIR
from planner.units import format_number


def html_files(out: Path) -> list[Path]:
    return sorted(out.rglob("*.html"))


def check_links(out: Path) -> int:
    """Every link of every page is relative and lands on a file of the site (and on an id, with a fragment)."""
    count = 0
    for page in html_files(out):
        html = page.read_text(encoding="utf-8")
        for href in re.findall(r'href="([^"]*)"', html):
            parts = urlsplit(href)
            assert not parts.scheme and not parts.netloc and not href.startswith("/"), (page, href)
            target = (page.parent / parts.path).resolve() if parts.path else page
            assert target.is_file() and target.is_relative_to(out.resolve()), (page, href)
            if parts.fragment:
                assert f'id="{parts.fragment}"' in target.read_text(encoding="utf-8"), (page, href)
            count += 1
    return count


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build_site(FROZEN, out, pdf=False)
    return out


def test_site_has_index_machine_workload_and_accuracy_pages_and_the_csv(site):
    names = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert {"index.html", ACCURACY_NAME, CSV_NAME, MANIFEST_NAME, "machines/h100-80gb/index.html",
            "workloads/gpt-small.html", "workloads/resnet50.html"} <= names
    assert not any(name.endswith(".pdf") for name in names)  # pdf=False: none, and no link to one
    assert "report.pdf" not in "".join(p.read_text(encoding="utf-8") for p in html_files(site))


def test_every_link_of_every_page_is_relative_and_resolves(site):
    assert check_links(site) > 50


def test_index_puts_each_machines_main_workload_throughput_beside_its_ceilings(site):
    html = (site / "index.html").read_text(encoding="utf-8")
    report = build_report_for(FROZEN / "h100-80gb")
    gpt = next(r for r in next(s for s in report.sections if isinstance(s, SummarySection)).verdicts
               if r.workload == "gpt-small")
    assert f'title="bf16, batch 32">{format_number(gpt.throughput)}</td>' in html
    assert "sequences/s" in html and "Dense matmul, peak" in html and "Workloads: throughput" in html
    assert re.search(r'<td class="num tiny" data-sort="[^"]+" title="bf16, batch 2 \(reduced sizes', html)
    assert 'class="machines sortable"' in html and f'href="{CSV_NAME}" download' in html


def test_workload_page_compares_the_machines_that_ran_it(site):
    html = (site / "workloads" / "gpt-small.html").read_text(encoding="utf-8")
    for machine in ("h100-80gb", "h200", "vm-cpu"):
        assert f'href="../machines/{machine}/index.html">{machine}</a>' in html
    h200 = load_machine(FROZEN / "h200").workloads
    gpt = next(w for w in h200 if w.workload == "gpt-small")
    main = judged_point(gpt, main_batch(gpt))  # the page shows the verdict's point
    assert f'data-sort="{main.throughput_per_s}">{format_number(main.throughput_per_s)}</td>' in html
    # the GPUs' verdicts are the one bound of their profiled step (math 61-66 % of it); the CPU run has no roofs
    assert "compute-bound" in html and "undetermined" in html and "memory-bandwidth-bound" not in html


def test_csv_is_the_tidy_export_of_the_whole_root(site):
    assert (site / CSV_NAME).read_text(encoding="utf-8") == to_csv(load_frame([FROZEN]))


def test_accuracy_page_says_there_is_no_data_yet_without_rows(tmp_path):
    build_site(FIXTURES, tmp_path, pdf=False)  # one GPU machine: no pair to predict one from the other
    html = (tmp_path / ACCURACY_NAME).read_text(encoding="utf-8")
    assert 'id="no-accuracy-data"' in html and "No accuracy data yet." in html
    assert "<table" not in html and "vegaEmbed" not in html  # no empty table, no chart bundle


def test_the_site_predicts_each_measured_gpu_from_the_other_by_default(site):
    html = (site / ACCURACY_NAME).read_text(encoding="utf-8")
    assert 'id="no-accuracy-data"' not in html
    assert "h100-80gb → h200" in html and "h200 → h100-80gb" in html


def accuracy_rows() -> list[AccuracyRow]:
    return [AccuracyRow("gpt-small", "bf16", 32, "h100-80gb", "h200", 216.0, 227.1),
            AccuracyRow("resnet50", "bf16", 256, "h100-80gb", "h200", 5121.0, 4655.0),
            AccuracyRow("mlp-stgan", "bf16", 4096, "h100-80gb", "h200", 1.69e6, 1.74e6)]


def test_accuracy_rows_give_signed_errors_and_a_summary_per_source_and_target():
    page = build_accuracy_page(accuracy_rows())
    errors = {r.workload: r.error for r in page.rows}
    assert errors["resnet50"] == pytest.approx(5121.0 / 4655.0 - 1) and errors["gpt-small"] < 0
    (summary,) = page.summaries
    assert (summary.source, summary.target, summary.n) == ("h100-80gb", "h200", 3)
    assert summary.median_abs_error == pytest.approx(abs(216.0 / 227.1 - 1))
    assert summary.max_abs_error == pytest.approx(5121.0 / 4655.0 - 1) and summary.within_target == 2
    assert summary.meets_goal  # median under 8%, none over 20%
    worse = build_accuracy_page([*accuracy_rows(), AccuracyRow("conv-rollout", "bf16", 40, "h100-80gb", "h200",
                                                                 120.0, 160.9)])
    assert not worse.summaries[0].meets_goal  # one prediction 25% low: over the 20% limit



@pytest.mark.parametrize("bad", [0.0, -3.0, float("nan"), float("inf")])
def test_accuracy_row_refuses_a_figure_that_is_not_a_positive_number(bad):
    with pytest.raises(ValueError, match="measured is"):
        AccuracyRow("gpt-small", "bf16", 32, "a", "b", 1.0, bad)


def test_accuracy_page_with_rows_has_the_table_and_the_chart(tmp_path):
    out = tmp_path / "site"
    build_site(FIXTURES, out, pdf=False, accuracy=accuracy_rows())
    html = (out / ACCURACY_NAME).read_text(encoding="utf-8")
    assert "No accuracy data yet" not in html and 'data-chart="chart-accuracy"' in html
    assert "+10.0%" in html and html.count("<tr>") >= 4  # resnet50: 5121 / 4655 − 1


def test_a_machine_gone_from_the_root_loses_its_pages_and_other_files_stay(tmp_path):
    root, out = tmp_path / "results", tmp_path / "site"
    for name in ("a", "b"):
        copy_machine(FIXTURES / "cpu-test", root / name, f"box-{name}")
    build_site(root, out, pdf=False)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    shutil.rmtree(root / "b")
    build_site(root, out, pdf=False)
    assert (out / "machines" / "box-a" / "index.html").is_file() and not (out / "machines" / "box-b").exists()
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert "box-b" not in (out / "index.html").read_text(encoding="utf-8")


def test_only_the_pdf_of_a_machine_whose_results_changed_is_rendered_again(tmp_path):
    root, out = tmp_path / "results", tmp_path / "site"
    for name in ("a", "b"):
        copy_machine(FIXTURES / "cpu-test", root / name, f"box-{name}")
    build_site(root, out)
    pdfs = {name: out / "machines" / f"box-{name}" / "report.pdf" for name in ("a", "b")}
    before = {name: path.stat().st_mtime_ns for name, path in pdfs.items()}
    ceilings = root / "b" / "ceilings.json"
    doc = json.loads(ceilings.read_text(encoding="utf-8"))
    doc["created"] = "2026-11-23T01:49:20Z"   # collected again a day later: the PDF's header says so
    ceilings.write_text(json.dumps(doc), encoding="utf-8")
    build_site(root, out)
    assert pdfs["a"].stat().st_mtime_ns == before["a"]
    assert pdfs["b"].stat().st_mtime_ns != before["b"]
    manifest = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert set(manifest["pdf"]) == {"machines/box-a/report.pdf", "machines/box-b/report.pdf"}


def test_a_site_built_on_several_cores_is_the_one_built_on_one(tmp_path, monkeypatch):
    root = tmp_path / "results"
    count = site_machines.PARALLEL_FROM + 1
    for i in range(count):
        source = FROZEN / ("h200" if i % 2 else "vm-cpu")
        copy_machine(source, root / f"m{i}", f"machine-{i:02d}")
    parallel = tmp_path / "parallel"
    build_site(root, parallel, pdf=False)
    monkeypatch.setattr(site_machines, "PARALLEL_FROM", 10**6)
    serial = tmp_path / "serial"
    build_site(root, serial, pdf=False)
    files = published(serial)
    assert files == published(parallel)
    workloads = {f.stem for m in ("h200", "vm-cpu") for f in (FROZEN / m).glob("workload-*.json")}
    # each machine's page and appendix, index, accuracy, job chooser, CSV, manifest, the Vega bundle, a page per
    # workload
    assert len(files) == 2 * count + 6 + len(workloads)
    for rel in files:
        if rel.as_posix() != "index.html":  # the index differs in its build stamp only (test_site.py)
            assert (serial / rel).read_bytes() == (parallel / rel).read_bytes(), rel


def published(out: Path) -> list[Path]:
    """The site's files, its cache (planner/site/cache.py) left out."""
    return sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and CACHE_DIR not in p.parts)


def test_a_machine_page_is_the_short_report_and_loads_the_sites_one_vega_bundle(site):
    """Issue 42: the machine page is the answer and a page per workload (the appendix a page of its own), and
    the Vega bundle is one file of the site, not a megabyte inlined in every page."""
    bundle = site / "assets" / "vega.js"
    code = bundle.read_text(encoding="utf-8")
    assert len(code) > 500_000 and "vegaEmbed" in code
    report = build_report_for(FROZEN / "h100-80gb")
    folder = site / "machines" / "h100-80gb"
    short, appendix = ((folder / name).read_text(encoding="utf-8") for name in ("index.html", "appendix.html"))
    for section in report.sections:
        anchor = f'id="{section.anchor}"' if getattr(section, "anchor", None) else None
        if anchor and any(section is s for s in report.appendix):
            assert anchor in appendix and anchor not in short, anchor
        elif anchor:
            assert anchor in short and anchor not in appendix, anchor
    assert 'href="appendix.html"' in short and 'href="index.html"' in appendix
    for page in folder.parent.glob("*/*.html"):
        html = page.read_text(encoding="utf-8")
        assert '<script src="../../assets/vega.js"></script>' in html and code[1000:1200] not in html, page
        assert page.stat().st_size < 1_500_000, page
    assert (folder / "index.html").stat().st_size < 600_000


def test_the_accuracy_page_says_how_far_a_second_measurement_moved(site, results_machines):
    from planner.check.repeatability import all_repeat_pairs, repeat_summaries
    html = (site / ACCURACY_NAME).read_text(encoding="utf-8")
    assert 'class="accuracy-repeats"' in html and "What one measurement can check" in html
    for host in (s for s in repeat_summaries(all_repeat_pairs(results_machines)) if s.regime == "host"):
        assert re.search(rf'<th scope="row">host</th><td>{host.scope}</td><td class="num">{host.n}</td>', html)


def test_the_accuracy_page_publishes_how_often_the_bands_held_out_of_sample(site, results_machines):
    from planner.check.coverage import band_coverage, overall
    from planner.site.accuracy import build_crosschecks
    groups = band_coverage(results_machines, build_crosschecks(results_machines))
    inside, n = overall(groups)
    html = (site / ACCURACY_NAME).read_text(encoding="utf-8")
    assert 'class="accuracy-coverage"' in html and f"{inside} of {n} inside" in html
    for g in groups:
        assert re.search(rf'<th scope="row">{g.scope}</th><td>{g.regime}</td><td class="num">{g.n}</td>'
                         rf'<td class="num">{g.inside}</td>', html)


def test_the_accuracy_page_publishes_the_cross_architecture_errors_by_role_family_and_gpu(site, results_machines):
    from planner.site.accuracy import build_crosschecks
    html = (site / ACCURACY_NAME).read_text(encoding="utf-8")
    assert 'class="accuracy-cross-groups"' in html and "none over 20%" in html
    for check in build_crosschecks(results_machines):
        for by in ("role", "family", "gpu"):
            for g in check.groups(by):
                assert re.search(rf'<th scope="row">{by}: {re.escape(g.name)}</th><td class="num">{g.n}</td>', html)
    assert "no: only checked" in html or "<abbr title=" in html


def test_the_accuracy_page_publishes_the_multi_gpu_scaling_check(site, results_machines):
    from planner.check.scaling_check import check_published_scaling, summarize_scaling
    from planner.scaling.intra_node import load_link_runs
    checks = check_published_scaling(load_link_runs(results_machines))
    total = summarize_scaling(checks)
    html = (site / ACCURACY_NAME).read_text(encoding="utf-8")
    assert checks and 'class="accuracy-scaling sortable"' in html
    assert f"{total.covered} of {total.judged} inside" in html and f"against {total.rows} published" in html
    rows = html.split('class="accuracy-scaling sortable"', 1)[1].split("</table>", 1)[0]
    assert rows.count("<tr><th scope=\"row\">") == len(checks)
    worst = min(checks, key=lambda c: c.published)
    assert f'<th scope="row">{worst.row.system}</th><td>{worst.row.model}</td>' in rows
