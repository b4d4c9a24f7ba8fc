"""Report of the real fixtures: typed structure, self-contained HTML, PDF, escaping, atomic output."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import vl_convert
from paths import FIXTURES
from pypdf import PdfReader

from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import DocumentError, load_document
from gpuplan_schema.stats import Stat
from planner.charts.base import build_roofline_chart, with_width
from planner.render.filters import script_json
from planner.render.report import render_report, render_report_html, vega_javascript
from planner.report.frame import CeilingsSection, NotCollectedSection, build_report_for
from planner.units import format_bytes, format_duration, format_number, format_spread, format_stat

H100 = FIXTURES / "h100-80gb"
CPU = FIXTURES / "cpu-test"
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def out_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reports")


@pytest.fixture(scope="module")
def h100(out_root: Path) -> tuple[Path, Path]:
    return render_report(H100, out_root)


@pytest.fixture(scope="module")
def cpu(out_root: Path) -> tuple[Path, Path]:
    return render_report(CPU, out_root)


def pdf_text(path: Path) -> str:
    text = " ".join(page.extract_text() for page in PdfReader(path).pages)
    return re.sub(r"\s+", " ", text)


def bf16_peak(folder: Path) -> Stat:
    ceilings = load_document(folder / "ceilings.json").payload
    return next(m.flops_per_s for m in ceilings.matmul if m.dtype == "bf16")


def test_outputs_land_in_the_sanitised_machine_folder(h100, out_root):
    html, pdf = h100
    assert html == (out_root / "h100-80gb" / "index.html").resolve()
    assert pdf == (out_root / "h100-80gb" / "report.pdf").resolve()
    assert pdf.read_bytes().startswith(b"%PDF-")


def test_html_references_nothing_online(h100):
    html = h100[0].read_text(encoding="utf-8")
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html, flags=re.IGNORECASE)
    for tag in tags:
        assert not re.search(r"\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", tag, re.IGNORECASE), tag
    assert not re.search(r"url\(\s*[\"']?\s*(?:https?:)?//", html, re.IGNORECASE)
    assert not re.search(r"@import", html)


def test_vega_javascript_is_inlined_exactly_once(h100):
    html = h100[0].read_text(encoding="utf-8")
    assert html.count(str(vega_javascript())) == 1
    assert html.count("window.vegaEmbed=") == 1
    assert 'data-chart="chart-roofline"' in html


def test_chart_json_block_cannot_end_its_script_element(h100):
    html = h100[0].read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', html, re.S)
    assert block and "</" not in block[1] and "<!--" not in block[1]
    assert json.loads(block[1])["layer"]


def test_pdf_names_the_gpu_and_quotes_the_bf16_peak_as_the_report_formats_it(h100):
    text = pdf_text(h100[1])
    assert "H100" in text
    expected = format_stat(bf16_peak(H100), "flops")
    assert expected in text
    assert format_spread(bf16_peak(H100), "flops") in text


def test_pdf_is_a4_with_page_numbers_and_running_header(h100):
    reader = PdfReader(h100[1])
    box = reader.pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (595, 842)
    pages = len(reader.pages)
    assert f"Page 2 of {pages}" in reader.pages[1].extract_text()
    assert "h100-80gb · 2026-11-22" in re.sub(r"\s+", " ", reader.pages[1].extract_text())


def test_pdf_has_the_roofline_as_vector_art_and_no_javascript(h100):
    raw = h100[1].read_bytes()
    assert b"/JavaScript" not in raw and b"/JS " not in raw


def test_rendering_twice_gives_the_same_bytes(h100):
    report = build_report_for(H100)
    assert render_report_html(report) == h100[0].read_text(encoding="utf-8")


def test_cpu_report_builds_and_says_there_is_no_datasheet_entry(cpu):
    html = cpu[0].read_text(encoding="utf-8")
    assert "no datasheet entry" in html
    assert "TF32 is a tensor-core mode of NVIDIA GPUs; the CPU has none" in html  # a skipped row's reason
    text = pdf_text(cpu[1])
    assert "no datasheet entry" in text
    assert format_stat(bf16_peak(CPU), "flops") in text


def test_ceilings_compare_with_the_datasheet():
    report = build_report_for(H100)
    section = next(s for s in report.sections if isinstance(s, CeilingsSection))
    bf16 = next(r for r in section.rows if r.label == "bf16")
    assert section.spec is not None and "H100" in section.spec.name
    assert bf16.reference == section.spec.flops_per_s["bf16"]
    assert bf16.fraction == pytest.approx(bf16_peak(H100).median / bf16.reference)
    copy = next(r for r in section.rows if r.label.startswith("copy"))
    assert copy.reference == section.spec.memory_bandwidth_bytes_per_s


def test_missing_collectors_are_listed_as_not_collected(tmp_path):
    folder = tmp_path / "cpu-test"
    folder.mkdir()
    shutil.copy(CPU / "ceilings.json", folder / "ceilings.json")
    report = build_report_for(folder)
    line = next(s for s in report.sections if isinstance(s, NotCollectedSection))
    assert "environment" in line.kinds
    assert "Not collected: environment" in render_report_html(report)


def test_hostile_names_are_escaped_and_nothing_is_written_outside_the_out_folder(tmp_path):
    results = tmp_path / "results" / "evil"
    shutil.copytree(H100, results)
    for path in results.glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["machine"] = f"../../evil{HOSTILE}"
        payload = doc["payload"]
        if doc["kind"] == "environment":
            payload["hostname"] = HOSTILE
            payload["gpus"][0]["name"] = HOSTILE
        if doc["kind"] == "ceilings":
            payload["device_name"] = "../../evil"
        path.write_text(json.dumps(doc), encoding="utf-8")
    before = {p for p in tmp_path.rglob("*")}
    out = tmp_path / "deep" / "out"
    html_path, pdf_path = render_report(results, out)
    written = {p for p in tmp_path.rglob("*")} - before
    files = [p for p in written if p.is_file()]
    assert files and all(p.resolve().is_relative_to(out.resolve()) for p in files)
    assert [p.name for p in out.iterdir()] == ["evil-script-alert-1-script"]
    html = html_path.read_text(encoding="utf-8")
    assert HOSTILE not in html and "alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert pdf_path.is_file() and HOSTILE in pdf_text(pdf_path)  # shown as text, verbatim


def test_truncated_document_raises_naming_the_file_and_keeps_the_old_report(h100, out_root, tmp_path):
    old = {p: p.read_bytes() for p in h100}
    broken = tmp_path / "h100-80gb"
    shutil.copytree(H100, broken)
    text = (broken / "ceilings.json").read_text(encoding="utf-8")
    (broken / "ceilings.json").write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(DocumentError, match="ceilings.json"):
        render_report(broken, out_root)
    assert {p: p.read_bytes() for p in h100} == old
    assert sorted(p.name for p in h100[0].parent.iterdir()) == ["index.html", "report.pdf"]  # no temp files


def test_roofline_chart_is_log_log_and_renders_to_svg_offline():
    ceilings = load_machine(H100).ceilings
    spec = build_roofline_chart(ceilings)
    assert spec is not None
    encoding = spec["layer"][0]["encoding"]
    assert encoding["x"]["scale"]["type"] == encoding["y"]["scale"]["type"] == "log"
    assert "FLOP/byte" in encoding["x"]["title"] and "TFLOP/s" in encoding["y"]["title"]
    svg = vl_convert.vegalite_to_svg(with_width(spec, 500))
    assert svg.lstrip().startswith("<svg") and "Arithmetic intensity" in svg
    assert spec["layer"][1]["data"] == {"name": "ridges"}
    ridges = spec["datasets"]["ridges"]
    assert {r["series"] for r in ridges} == {m.dtype for m in ceilings.matmul if m.status == "ok"}


def test_script_json_escapes_everything_that_could_break_out():
    value = {"name": "</script><!-- & \u2028", "n": 1}
    text = str(script_json(value))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == value


@pytest.mark.parametrize("value, text", [
    (3006.8, "3007"), (755.178, "755"), (51.32, "51.3"), (0.2178, "0.218"), (9.996, "10.0"), (0.09996, "0.100"),
])
def test_numbers_keep_three_significant_figures_but_never_drop_whole_digits(value, text):
    assert format_number(value) == text


def test_units_follow_the_value_and_spreads_follow_their_median():
    assert format_bytes(85520809984) == "79.6 GiB" and format_bytes(52428800) == "50.0 MiB"
    assert format_duration(1.0073e-5) == "10.1 µs"
    assert format_spread(Stat(4.04e-6, 3.95e-6, 4.21e-6, 3.8e-6, 4.6e-6, 30), "duration") == "± 0.26 µs"


def test_sustained_figures_get_their_columns_when_the_documents_have_them(tmp_path):
    folder = tmp_path / "h100-80gb"
    shutil.copytree(H100, folder)
    doc = json.loads((folder / "ceilings.json").read_text(encoding="utf-8"))
    bf16 = next(m for m in doc["payload"]["matmul"] if m["dtype"] == "bf16")
    bf16["sustained_flops_per_s"] = {k: v * 0.85 if k != "n" else v for k, v in bf16["flops_per_s"].items()}
    bf16["sustained_sm_clock_hz"] = 1.41e9
    (folder / "ceilings.json").write_text(json.dumps(doc), encoding="utf-8")
    assert "SM clock, sustained" not in render_report_html(build_report_for(H100))
    html = render_report_html(build_report_for(folder))
    sustained = load_document(folder / "ceilings.json").payload.matmul[3].sustained_flops_per_s
    assert "SM clock, sustained" in html and "1410 MHz" in html
    assert f'<td class="num">{format_stat(sustained, "flops")}</td>' in html
    assert "reruns the best shape without pause" in html
