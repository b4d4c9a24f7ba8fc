"""Render a report to one self-contained HTML page and a PDF from the same templates.

Everything is loaded, checked and rendered in memory first; only then is anything written, each
file atomically, so bad input never leaves partial or overwritten output behind.
"""

from __future__ import annotations

import calendar
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import vl_convert
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from collectors.schema import write_bytes_atomic, write_text_atomic
from planner.charts import with_width
from planner.formatting import register_filters
from planner.report import Report, build_report
from planner.results import load_machine

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"
PDF_CHART_WIDTH = 560  # pixels; the SVG then scales to the A4 text width
HTML_NAME, PDF_NAME = "index.html", "report.pdf"


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
    bundle = vl_convert.javascript_bundle()
    return Markup(re.sub(r"</(script)", r"<\\/\1", bundle, flags=re.IGNORECASE).replace("<!--", "<\\!--"))


def render_chart_svg(spec: dict) -> Markup:
    """The chart as inline SVG for the PDF. vl-convert writes the SVG and escapes its text itself."""
    svg = vl_convert.vegalite_to_svg(with_width(spec, PDF_CHART_WIDTH))
    return Markup(re.sub(r"^<\?xml[^>]*\?>\s*", "", svg))


def render_report_html(report: Report, *, pdf: bool = False, back_link: str | None = None) -> str:
    """The report page. `pdf` swaps interactive charts for SVG and drops the JavaScript."""
    template = build_jinja_env().get_template("report.html.j2")
    return template.render(report=report, pdf=pdf, back_link=back_link,
                           vega_js=Markup("") if pdf else vega_javascript())


def render_report_pdf(report: Report) -> bytes:
    import weasyprint  # late: loading pango is slow and only the PDF needs it
    from weasyprint.urls import URLFetcher

    html = render_report_html(report, pdf=True)
    # Nothing may be fetched: the page is self-contained, and a document must not pull in files or URLs.
    fetcher = URLFetcher(allowed_protocols=("data",))
    with source_date_epoch(report.collected):
        return weasyprint.HTML(string=html, url_fetcher=fetcher).write_pdf()


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


def safe_child(root: Path, name: str) -> Path:
    """root/name, refusing any name that would land outside root (after resolving links)."""
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ValueError(f"{name!r} is not a safe folder name")
    base = root.resolve()
    child = (base / name).resolve()
    if child.parent != base:
        raise ValueError(f"{name!r} resolves outside {base}")
    return child


def render_report(results_dir: Path, out_root: Path = Path("reports")) -> tuple[Path, Path]:
    """Render RESULTS_DIR to out_root/<machine-id>/index.html and report.pdf; return both paths."""
    report = build_report(load_machine(Path(results_dir)))
    html = render_report_html(report)
    pdf = render_report_pdf(report)
    folder = safe_child(Path(out_root), report.machine_id)
    html_path, pdf_path = folder / HTML_NAME, folder / PDF_NAME
    write_text_atomic(html_path, html)
    write_bytes_atomic(pdf_path, pdf)
    return html_path, pdf_path
