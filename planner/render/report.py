"""Render a report to one self-contained HTML page and a PDF from the same templates.

Everything is loaded, checked and rendered in memory first; only then is anything written, each
file atomically, so bad input never leaves partial or overwritten output behind.
"""

from __future__ import annotations

import calendar
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import vl_convert
from gpuplan_templates import TEMPLATES_DIR
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from gpuplan_schema.results import MachineResults
from gpuplan_schema.schema import DocumentError, write_bytes_atomic, write_text_atomic
from planner.charts.base import with_width
from planner.rank.jobs import Job
from planner.render.filters import register_filters
from planner.report.frame import Report, build_report_for

PDF_CHART_WIDTH = 560  # pixels; the SVG then scales to the page's text width
# The PDF's one font. Charts are laid out (legend widths, label limits) with the font they are drawn in,
# so that no label of the PDF's SVG runs past its edge.
PDF_FONT = "DejaVu Sans"
HTML_NAME, PDF_NAME, APPENDIX_NAME = "index.html", "report.pdf", "appendix.html"
PARTS = ("all", "short", "appendix")  # what a report page holds (render_report_html)


@dataclass(frozen=True)
class Paper:
    name: str          # as the command line spells it
    css_size: str      # the CSS @page size keyword
    width_pt: float
    height_pt: float


PAPERS = {"a4": Paper("a4", "A4", 595.28, 841.89), "letter": Paper("letter", "letter", 612.0, 792.0)}
DEFAULT_PAPER = "a4"


@dataclass(frozen=True)
class NavLink:
    """A link of the site's navigation bar; `href` is relative to the page it is on."""

    label: str
    href: str
    current: bool = False


@lru_cache(maxsize=1)
def build_jinja_env() -> Environment:
    # Autoescape everywhere: machine ids, hostnames and GPU names come from files and may hold markup.
    env = Environment(loader=FileSystemLoader(TEMPLATES_DIR), autoescape=True, undefined=StrictUndefined,
                      lstrip_blocks=True, keep_trailing_newline=True)
    register_filters(env)
    env.globals["chart_svg"] = render_chart_svg
    return env


@lru_cache(maxsize=1)
def vega_javascript() -> Markup:
    """vega + vega-lite + vega-embed, for inlining once in a <script> element.

    The bundle holds no '</script' today; should one ever appear, escape it so the element
    cannot end early ('<\\/' reads the same inside JavaScript strings and regular expressions).
    """
    bundle = cached_javascript_bundle()
    return Markup(re.sub(r"</(script)", r"<\\/\1", bundle, flags=re.IGNORECASE).replace("<!--", "<\\!--"))


def cached_javascript_bundle() -> str:
    """vl-convert's bundle of vega, vega-lite and vega-embed: building it takes seconds (a third of a report's time on
    2 cores), and it is the same for one vl-convert version, so it is kept in the user's cache folder
    ($XDG_CACHE_HOME/gpuplan, else ~/.cache/gpuplan) after the first report. An unwritable cache only costs the time."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuplan"
    path = cache / f"vega-bundle-{vl_convert.__version__}.js"
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    bundle = vl_convert.javascript_bundle()
    try:
        write_text_atomic(path, bundle)
    except OSError:
        pass  # a read-only home: the bundle is built again next time
    return bundle


def render_chart_svg(spec: dict, width: int = PDF_CHART_WIDTH, height: int | None = None) -> Markup:
    """The chart as inline SVG for the PDF (`width` pixels wide before it scales to its box; `height` where the
    page has less room than the chart's own). vl-convert writes the SVG and escapes its text itself."""
    spec = with_width(spec, width)
    if height is not None and "height" in spec:
        spec["height"] = height
    spec["config"] = {**spec.get("config", {}), "font": PDF_FONT}
    svg = vl_convert.vegalite_to_svg(spec)
    return Markup(re.sub(r"^<\?xml[^>]*\?>\s*", "", svg))


def paper_of(name: str) -> Paper:
    try:
        return PAPERS[name.lower()]
    except KeyError:
        raise ValueError(f"paper {name!r} is not one of {', '.join(PAPERS)}") from None


def render_report_html(report: Report, *, pdf: bool = False, paper: str = DEFAULT_PAPER,
                       nav: list[NavLink] | None = None, has_pdf: bool = True, full: bool = False,
                       part: str = "all", vega_src: str | None = None) -> str:
    """The report page. `pdf` swaps interactive charts for SVG, drops the JavaScript and sets the paper, and
    leaves the appendix out unless `full`; `nav` is the site's navigation bar, for a page of the site; `has_pdf`
    links the PDF beside the page. The HTML holds the appendix, collapsed, unless `part` says otherwise (the site's
    pages): "short", the answer and a page per workload, linking APPENDIX_NAME beside it; "appendix", every table of
    measurements, open. `vega_src`: the Vega bundle's file, relative to the page (default: inlined)."""
    if part not in PARTS:
        raise ValueError(f"part {part!r} is not one of {', '.join(PARTS)}")
    template = build_jinja_env().get_template("report.html.j2")
    return template.render(report=report, pdf=pdf, paper=paper_of(paper), nav=nav, has_pdf=has_pdf, full=full,
                           part=part, page_name=HTML_NAME, appendix_name=APPENDIX_NAME, vega_src=vega_src,
                           vega_js=Markup("") if pdf or vega_src else vega_javascript())


def layout_report_pdf(report: Report, paper: str = DEFAULT_PAPER, full: bool = False):  # noqa: ANN201 - a Document
    """The PDF laid out in pages (WeasyPrint's Document): what `render_report_pdf` writes, open to inspection."""
    import weasyprint  # late: loading pango is slow and only the PDF needs it
    from weasyprint.urls import URLFetcher

    html = render_report_html(report, pdf=True, paper=paper, full=full)
    # Nothing may be fetched: the page is self-contained, and a document must not pull in files or URLs.
    fetcher = URLFetcher(allowed_protocols=("data",))
    return weasyprint.HTML(string=html, url_fetcher=fetcher).render()


def render_report_pdf(report: Report, paper: str = DEFAULT_PAPER, full: bool = False) -> bytes:
    """The PDF: the decision page, a page per workload and the ceilings; with `full`, the appendix too."""
    with source_date_epoch(report.collected):
        return layout_report_pdf(report, paper, full).write_pdf()


@contextmanager
def source_date_epoch(date: str) -> Iterator[None]:
    """Pin the timestamps fontTools writes into embedded font subsets (it reads SOURCE_DATE_EPOCH),
    so the same report gives the same PDF bytes and the site rewrites nothing that did not change."""
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(calendar.timegm(time.strptime(date, "%Y-%m-%d")))
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved


class UnsafePath(DocumentError):
    """An output path that would leave the output folder (a name with separators, a symbolic link)."""


def safe_child(root: Path, name: str) -> Path:
    """root/name, refusing any name that would land outside root (after resolving links)."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UnsafePath(root, "", f"{name!r} is not a safe folder name")
    base = root.resolve()
    child = (base / name).resolve()
    if child.parent != base:
        raise UnsafePath(root, "", f"{name!r} resolves to {child}, outside {base} (a symbolic link?)")
    return child


def check_inside(root: Path, paths: Iterable[Path]) -> None:
    """Refuse, before anything is written, to write where a symbolic link in the output folder leads out."""
    base = root.resolve()
    for path in paths:
        if not path.parent.resolve().is_relative_to(base):
            raise UnsafePath(path, "", f"its folder resolves to {path.parent.resolve()}, outside the output "
                                       f"folder {base} (a symbolic link?); nothing was written")


def render_report(results_dir: Path, out_root: Path = Path("reports"), paper: str = DEFAULT_PAPER,
                  job: Job | None = None, *, others: Sequence[MachineResults] = (),
                  full: bool = False) -> tuple[Path, Path]:
    """Render RESULTS_DIR to out_root/<machine-id>/index.html and report.pdf (on `paper`); return both paths.
    The instance ranking is for `job` (default: DEFAULT_JOB); `others` (loaded machines, named by the user) join
    the plan: their accuracy sets the ranges, their multi-GPU runs the scaling. `full`: the PDF keeps the
    appendix (the HTML always has it, collapsed)."""
    paper_of(paper)  # a bad paper name fails before anything is loaded
    report = build_report_for(Path(results_dir), job, others)
    html = render_report_html(report)
    pdf = render_report_pdf(report, paper, full)
    folder = safe_child(Path(out_root), report.machine_id)
    html_path, pdf_path = folder / HTML_NAME, folder / PDF_NAME
    check_inside(Path(out_root), (html_path, pdf_path))
    write_text_atomic(html_path, html)
    write_bytes_atomic(pdf_path, pdf)
    return html_path, pdf_path
