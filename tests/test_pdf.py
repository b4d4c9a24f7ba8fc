"""The PDF of the committed H100 results as a reader gets it: by default the decision page, a page per workload and
the ceilings (at most 2 + N pages for N workloads); with --full every section after them, a contents page whose page
numbers are right. A4 or Letter, running header and page numbers, fonts embedded, no chart or table split where it
fits on a page, no chart label cut at the edge, and no blank page (checked on PNGs of the pages)."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from paths import FROZEN, REPO
from PIL import Image, ImageFont
from pypdf import PdfReader

from planner.render.report import PAPERS, layout_report_pdf, render_chart_svg, render_report
from planner.report.frame import build_report_for
from planner.report.workloads import WorkloadSection

H100 = FROZEN / "h100-80gb"
CPU_FIXTURE = REPO / "tests" / "fixtures" / "results" / "cpu-test"
ARTIFACTS = REPO / "test-artifacts" / "pdf"
MM = 72 / 25.4  # PDF points per millimetre


@pytest.fixture(scope="module")
def report():  # noqa: ANN201 - a Report
    return build_report_for(H100)


@pytest.fixture(scope="module")
def a4(report, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_report(H100, tmp_path_factory.mktemp("a4"))[1]


@pytest.fixture(scope="module")
def pages(a4: Path) -> list[str]:
    return [re.sub(r"\s+", " ", page.extract_text()) for page in PdfReader(a4).pages]


@pytest.fixture(scope="module")
def full(report, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_report(H100, tmp_path_factory.mktemp("full"), full=True)[1]


@pytest.fixture(scope="module")
def full_pages(full: Path) -> list[str]:
    return [re.sub(r"\s+", " ", page.extract_text()) for page in PdfReader(full).pages]


def test_the_default_pdf_is_the_answer_a_page_per_workload_and_the_ceilings(report, pages):
    """Issue 37: 195 pages, 63–147 of them per-operation tables. Now page one answers every workload, each workload
    has its page (answer, evidence, where to run it), the ceilings close it: 2 + N pages at most."""
    measured = [b.workload for b in report.sections[0].blocks]
    assert len(pages) <= 2 + len(measured) and "Contents" not in " ".join(pages)
    assert "The answer: settings and instances per workload" in pages[0]
    assert all(workload.split("-")[0] in pages[0] for workload in measured)  # "wide-" may wrap in its cell
    starts = [next(i for i, text in enumerate(pages) if text.lstrip().startswith(f"{w} ")) for w in measured]
    assert starts == list(range(1, 1 + len(measured)))   # one page each, in order
    assert "Measured ceilings" in pages[-1] and "gpuplan report --full" in pages[-1]
    assert "Roofline per op" not in " ".join(pages)


def test_pdf_has_every_section_of_the_report_in_order(report, full_pages):
    text = " ".join(full_pages)
    titles = [s.title for s in report.sections if s.in_toc]
    head = {s.title for s in [*report.head, *report.pages]}  # before the appendix's contents
    at = [text.find(title, text.find("Contents") + 1 if title not in head else 0) for title in titles]
    assert all(i >= 0 for i in at), [t for t, i in zip(titles, at, strict=True) if i < 0]
    for title in ("The answer: settings and instances per workload", "Three things to change",
                  "Measured ceilings", "Roofline",
                  "Workload: gpt-small", "Roofline per op: gpt-small", "Input pipeline", "Recommendations and presets",
                  "Instance ranking", "Predictions for other GPUs", "Multi-GPU", "Method: hardware ceilings",
                  "Method: workloads", "Environment", "Glossary"):
        assert title in text, title
    assert "Not collected: no collective or data-parallel" in text  # a placeholder's line, not just its heading


def test_contents_page_gives_the_page_each_section_starts_on(report, full, full_pages):
    """With --full: the short report's pages, then the appendix, its contents on a page of their own."""
    at = next(i for i, text in enumerate(full_pages) if text.lstrip().startswith("Contents")
              or " Contents " in text[:200])
    assert "Measured ceilings" in full_pages[at - 1] and at <= 2 + len(report.sections[0].blocks)
    contents = PdfReader(full).pages[at].extract_text()  # one line per entry: "Roofline ...... 6"
    listed = dict(re.findall(r"^(\S.*?) ?\.{3,} ?(\d+)$", contents, flags=re.MULTILINE))
    titles = [s.title for s in report.appendix if s.in_toc]
    assert list(listed) == titles
    for title, number in listed.items():
        assert title in full_pages[int(number) - 1], (title, number)
        assert int(number) == 1 + next(i for i, text in enumerate(full_pages) if title in text and i > at)


def test_running_header_names_machine_and_date_and_every_page_is_numbered(report, pages):
    for number, text in enumerate(pages[1:], start=2):
        assert f"gpuplan report · {report.machine} · {report.collected}" in text
        assert f"Page {number} of {len(pages)}" in text


@pytest.mark.parametrize("paper", ["a4", "letter"])
def test_paper_size_is_the_one_asked_for(paper, tmp_path):
    pdf = render_report(CPU_FIXTURE, tmp_path, paper=paper)[1]
    box = PdfReader(pdf).pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (round(PAPERS[paper].width_pt),
                                                                   round(PAPERS[paper].height_pt))


def test_unknown_paper_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="paper 'a5'"):
        render_report(CPU_FIXTURE, tmp_path, paper="a5")
    assert not any(tmp_path.iterdir())


def test_every_font_is_embedded(a4):
    fonts = {}
    for page in PdfReader(a4).pages:
        for ref in (page["/Resources"].get("/Font") or {}).values():
            font = ref.get_object()
            descendants = font.get("/DescendantFonts")
            descriptor = (descendants[0].get_object() if descendants else font).get("/FontDescriptor")
            fonts[str(font.get("/BaseFont"))] = descriptor is not None and any(
                key in descriptor.get_object() for key in ("/FontFile", "/FontFile2", "/FontFile3"))
    assert fonts and all(fonts.values()), fonts


def fragments(document) -> dict[int, list[tuple[int, object]]]:  # noqa: ANN001 - a weasyprint Document
    """(page index, box) of each table and figure element, by element."""
    found: dict[int, list[tuple[int, object]]] = {}
    for index, page in enumerate(document.pages):
        for box in page._page_box.descendants():
            if (box.element_tag == "figure" and type(box).__name__ == "BlockBox") or \
                    type(box).__name__ == "TableBox":
                found.setdefault(id(box.element), []).append((index, box))
    return found


def test_no_chart_or_table_is_split_across_pages_unless_it_is_longer_than_a_page(report):
    document = layout_report_pdf(report, full=True)
    room = document.pages[0]._page_box.height  # the page's content height
    split = 0
    for parts in fragments(document).values():
        if len({index for index, _ in parts}) == 1:
            continue
        box = parts[0][1]
        assert box.element_tag == "table", "a chart is split across pages"
        assert sum(b.height for _, b in parts) > 0.9 * room, "a table that fits on a page is split"
        for _, fragment in parts:  # each page of a long table repeats its heading row
            assert any(getattr(c, "element_tag", None) == "thead" for c in fragment.children)
        split += 1
    # the long ranking, and since issue 39 the per-GPU answer tables (1.2 pages each on the frozen H100: its compiled
    # answers on another GPU carry their own, wider band and say why beside it), each longer than a page
    assert len(fragments(document)) > 20 and split <= 6


def text_overflows(svg: str) -> list[str]:
    """Texts of an SVG that run past its left or right edge, measured in the PDF's font (DejaVu Sans)."""
    root = ET.fromstring(svg)
    width, fonts, out = float(root.get("width")), {}, []

    def walk(node: ET.Element, x: float) -> None:
        moves = re.findall(r"(translate|rotate)\(([^)]*)\)", node.get("transform", ""))
        if any(fn == "rotate" for fn, _ in moves):
            return  # vertical axis titles: their extent is vertical
        x += sum(float(re.split(r"[ ,]+", args.strip())[0]) for _, args in moves)
        if node.tag.endswith("text") and node.text:
            bold = node.get("font-weight") in ("bold", "700")
            size = float(node.get("font-size", "10px").removesuffix("px"))
            font = fonts.setdefault((bold, size), ImageFont.truetype(
                "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf", size))
            length = font.getlength(node.text)
            left = x - {"end": length, "middle": length / 2}.get(node.get("text-anchor", "start"), 0)
            if left < -0.5 or left + length > width + 0.5:
                out.append(f"{node.text!r} spans {left:.0f}..{left + length:.0f} of {width:.0f}")
        for child in node:
            walk(child, x)

    walk(root, 0.0)
    return out


def test_roofline_legend_is_not_clipped_at_the_right_edge_of_the_pdf_chart(report):
    """It was: 'memory (copy' ran past the SVG's edge, laid out in a narrower font than the PDF draws it in."""
    charts = [s.chart for s in report.sections if getattr(s, "chart", None)]
    for section in report.sections:
        if isinstance(section, WorkloadSection):
            charts += [c for c in (section.throughput_chart, section.memory_chart, section.sequence_chart) if c]
    roofline = str(render_chart_svg(charts[0]))
    assert ">memory (copy)</text>" in roofline
    for chart in charts:
        assert text_overflows(str(render_chart_svg(chart))) == []


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) is not installed")
def test_every_page_has_content_in_its_body(a4, pages):
    """Each page as a PNG (kept under test-artifacts/pdf/): ink between the running header and the footer."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("h100-*.png"):
        old.unlink()
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(a4), str(ARTIFACTS / "h100")], check=True)
    images = sorted(ARTIFACTS.glob("h100-*.png"))
    assert len(images) == len(pages)
    for path in images:
        image = Image.open(path).convert("L")
        scale = image.height / (297 * MM)
        body = image.crop((0, int(20 * MM * scale), image.width, int(image.height - 18 * MM * scale)))
        ink = sum(body.histogram()[:200]) / (body.width * body.height)
        assert ink > 0.002, f"{path.name} is blank ({ink:.4%} ink)"
