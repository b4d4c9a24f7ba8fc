"""The site in a real browser (Debian's headless Chromium), opened from disk as a person would open it.

For the index, a machine's report and its appendix, a workload page and the accuracy page: no console error, no uncaught
exception, no failed request; every chart drawn (an SVG of real size with its marks); every internal link
landing on a file and an id; sorting by a column heading works; the report fits a phone's width. A screenshot
of each page is kept under test-artifacts/browser/. The tests skip only where chromium is not installed:
`make setup` installs it, and so does CI.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from browser import Browser, find_chromium
from paths import FROZEN, REPO

from planner.check.accuracy import AccuracyRow
from planner.render.report import render_report_html
from planner.report.frame import build_report_for
from planner.site.build import ACCURACY_NAME, build_site
from planner.site.jobs import JOBS_NAME

ARTIFACTS = REPO / "test-artifacts" / "browser"
CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (`make setup` installs "
                                "Debian's chromium package; CI does)")
PAGES = {"index": "index.html", "machine": "machines/h100-80gb/index.html",
         "appendix": "machines/h100-80gb/appendix.html", "workload": "workloads/gpt-small.html",
         "accuracy": ACCURACY_NAME, "jobs": JOBS_NAME}
CHARTS_DRAWN = ("Array.from(document.querySelectorAll('.vega-chart')).every("
                "el => el.querySelector('svg, canvas') !== null)")
# the charts a reader sees: those outside the collapsed appendix (its charts are drawn when it opens)
SHOWN_DRAWN = ("Array.from(document.querySelectorAll('.vega-chart')).filter(el => !el.closest('details:not([open])'))"
               ".every(el => el.querySelector('svg, canvas') !== null)")
OPEN_APPENDIX = "document.querySelectorAll('details').forEach(d => { d.open = true; }); true"
CHARTS = """Array.from(document.querySelectorAll('.vega-chart')).map(el => {
  const art = el.querySelector('svg, canvas'); const box = art ? art.getBoundingClientRect() : null;
  return {id: el.id, width: box ? box.width : 0, height: box ? box.height : 0,
          marks: art && art.tagName === 'svg' ? art.querySelectorAll('.role-mark path, .role-mark line').length
                                              : (art ? 1 : 0)};
})"""
LINKS = "Array.from(document.querySelectorAll('a[href]')).map(a => [a.getAttribute('href'), a.href])"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed results, with PDFs, and with accuracy rows so that the accuracy page has its chart."""
    out = tmp_path_factory.mktemp("site")
    rows = [AccuracyRow("gpt-small", "bf16", 32, "h100-80gb", "h200", 216.0, 227.1),
            AccuracyRow("resnet50", "bf16", 256, "h100-80gb", "h200", 5121.0, 4655.0)]
    build_site(FROZEN, out, accuracy=rows)
    return out


@pytest.fixture(scope="module")
def browser():  # noqa: ANN201 - a Browser
    with Browser(CHROMIUM) as b:
        b.set_viewport(1280, 900)
        yield b


@pytest.fixture(scope="module", autouse=True)
def fresh_artifacts() -> None:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)


def open_page(browser: Browser, site: Path, page: str) -> list[str]:
    """Load a page, wait for its charts; its problems (console errors, exceptions, failed requests)."""
    problems = browser.open((site / page).as_uri())
    assert browser.wait_for(SHOWN_DRAWN), f"{page}: a chart was not drawn within the time allowed"
    browser.evaluate(OPEN_APPENDIX)   # a collapsed appendix draws its charts as it opens
    assert browser.wait_for(CHARTS_DRAWN), f"{page}: a chart of the appendix was not drawn when it opened"
    return problems.all


def check_link(page: Path, raw: str, resolved: str, browser: Browser) -> None:
    parts = urlsplit(resolved)
    assert parts.scheme == "file", f"{page.name}: {raw} leaves the site"
    assert not urlsplit(raw).scheme and not raw.startswith("/"), f"{page.name}: {raw} is not relative"
    target = Path(unquote(parts.path))
    assert target.is_file(), f"{page.name}: {raw} leads nowhere"
    if parts.fragment:
        if target == page:
            assert browser.evaluate(f"document.getElementById({parts.fragment!r}) !== null"), raw
        else:
            assert f'id="{parts.fragment}"' in target.read_text(encoding="utf-8"), raw


@pytest.mark.parametrize("name", list(PAGES))
def test_page_loads_without_errors_draws_every_chart_and_every_link_resolves(name, site, browser):
    page = site / PAGES[name]
    assert open_page(browser, site, PAGES[name]) == []
    charts = browser.evaluate(CHARTS)
    for chart in charts:
        assert chart["width"] > 200 and chart["height"] > 140 and chart["marks"] >= 2, chart
    expected = page.read_text(encoding="utf-8").count('data-chart="')  # every chart the page carries
    assert len(charts) == expected and (expected > 8 if name == "machine" else True)
    links = browser.evaluate(LINKS)
    assert len(links) > 5
    for raw, resolved in links:
        check_link(page, raw, resolved, browser)
    browser.screenshot(ARTIFACTS / f"{name}.png")


def row_keys(browser: Browser, column: int) -> list[str]:
    return browser.evaluate(f"Array.from(document.querySelectorAll('#machines tbody tr'))"
                            f".map(r => r.cells[{column}].getAttribute('data-sort'))")


def test_clicking_a_column_heading_sorts_the_machines(site, browser):
    open_page(browser, site, "index.html")
    header = "document.querySelectorAll('#machines thead tr:last-child th')[2].querySelector('button')"
    assert browser.evaluate(f"{header}.textContent.trim().startsWith('bf16')")
    browser.evaluate(f"{header}.click()")
    ascending = [float(v) for v in row_keys(browser, 2) if v]  # a machine without ceilings has no figure
    assert ascending == sorted(ascending) and len(ascending) >= 3
    browser.evaluate(f"{header}.click()")
    assert [float(v) for v in row_keys(browser, 2) if v] == sorted(ascending, reverse=True)


def test_report_fits_a_phone_screen_and_its_sweep_table_sorts_within_each_precision(site, browser):
    try:
        browser.set_viewport(390, 844, mobile=True)
        for name in ("machine", "appendix"):  # the appendix (its sweep tables) stays open for what follows
            assert open_page(browser, site, PAGES[name]) == []
            width = browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], f"{name}: the page is {width[0]} px wide on a {width[1]} px screen"
            browser.screenshot(ARTIFACTS / f"{name}-phone.png", max_height=6000)
    finally:
        browser.set_viewport(1280, 900)
    table = "document.querySelector('#workload-gpt-small table.workload-batches')"
    browser.evaluate(f"{table}.querySelectorAll('thead th')[3].querySelector('button').click()")
    groups = browser.evaluate(
        f"Array.from({table}.tBodies).map(b => [b.rows[0].textContent.trim(), "
        "Array.from(b.rows).slice(1).map(r => r.cells.length > 3 ? r.cells[3].textContent.trim() : 'oom')])")
    assert [g[0] for g in groups] == ["bf16"]  # the standard profile sweeps the main precision
    for _, values in groups:  # ascending throughput, the out-of-memory row (no figure) last
        numbers = [float(v) for v in values[:-1]]
        assert numbers == sorted(numbers) and len(numbers) >= 5 and values[-1] == "oom"


RANKING = "Array.from(document.querySelectorAll('#job-ranking tbody tr')).map(r => r.getAttribute('data-instance'))"
HOURS = "Array.from(document.querySelectorAll('#job-ranking tbody tr')).map(r => r.cells[6].textContent)"
RUNS = "Array.from(document.querySelectorAll('#job-ranking tbody tr')).map(r => r.cells[3].textContent)"


def choose(browser: Browser, control: str, value: str) -> None:
    """Set a control as a person would, firing the event the page listens to."""
    event = "input" if control == "job-amount" else "change"
    browser.evaluate(f"(() => {{ const c = document.getElementById({control!r}); c.value = {value!r}; "
                     f"c.dispatchEvent(new Event({event!r})); }})()")


def test_the_job_chooser_ranks_instances_for_the_job_chosen(site, browser):
    assert open_page(browser, site, JOBS_NAME) == []
    labels = browser.evaluate("Array.from(document.querySelectorAll('#job-workload option')).map(o => o.textContent)")
    assert "resnet50 (measured on h100-80gb)" in labels and "sensor-cnn (measured on h100-80gb)" in labels
    choose(browser, "job-workload", str(labels.index("resnet50 (measured on h100-80gb)")))
    assert browser.evaluate("document.getElementById('job-unit').value") == "epochs"
    assert browser.evaluate("document.getElementById('job-amount').value") == "100"
    by_time = browser.evaluate(RANKING)
    hours = browser.evaluate(HOURS)
    assert len(by_time) > 10
    # each instance at what the plan predicts on its own GPU: bf16 at 512 on an H100, fp16 on a T4 (no bf16)
    runs = dict(zip(by_time, browser.evaluate(RUNS), strict=True))
    assert all(re.fullmatch(r"(bf16|fp16) \d+ (compile|eager)", r) for r in runs.values()), runs
    assert {r.split()[0] for i, r in runs.items() if "T4" in i or i.startswith("g4dn")} <= {"fp16"}
    choose(browser, "job-sort", "cost")
    by_cost = browser.evaluate(RANKING)
    assert sorted(by_cost) == sorted(by_time) and by_cost != by_time  # the same instances, another order
    choose(browser, "job-sort", "hours")
    choose(browser, "job-amount", "10")  # a tenth of the work: a tenth of the time, same order
    assert browser.evaluate(RANKING) == by_time
    first = float(hours[0].split()[0].replace(",", "")) * (60 if hours[0].endswith("h") else 1)
    now = browser.evaluate(HOURS)[0]
    assert float(now.split()[0].replace(",", "")) * (60 if now.endswith("h") else 1) == pytest.approx(first / 10,
                                                                                                     rel=0.02)
    choose(browser, "job-precision", "fp32")
    assert browser.evaluate(RANKING) != by_time  # fp32 runs on more GPUs, slower: another ranking
    choose(browser, "job-workload", str(labels.index("gpt-small (measured on h100-80gb)")))
    assert browser.evaluate("document.getElementById('job-unit').value") == "tokens"
    assert "gpt-small at bf16" in browser.evaluate("document.getElementById('job-summary').textContent")
    assert browser.problems.all == []
    browser.screenshot(ARTIFACTS / "jobs.png", max_height=1600)


def test_the_report_opens_with_the_decision_and_fits_a_phone_without_widening_the_page(site, browser):
    """At 390 px, without the mobile zoom-out that would hide an overflow, nothing sticks out of the page."""
    try:
        browser.set_viewport(390, 844)
        assert open_page(browser, site, PAGES["machine"]) == []
        assert browser.evaluate("document.querySelector('main > section').id") == "decision"
        width = browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], f"the page is {width[0]} px wide on a {width[1]} px screen"
        for page in ("index.html", JOBS_NAME):
            assert open_page(browser, site, page) == []
            width = browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], f"{page} is {width[0]} px wide on a {width[1]} px screen"
    finally:
        browser.set_viewport(1280, 900)


def test_at_1280_px_the_tables_show_every_column_without_scrolling(site, browser):
    for page, table in (("index.html", "#machines"), (PAGES["machine"], "table.ceilings")):
        assert open_page(browser, site, page) == []
        box = browser.evaluate(f"(() => {{ const t = document.querySelector({table!r}); "
                               "const w = t.closest('.table-wrap') || t.parentElement; "
                               "return [t.scrollWidth, w.clientWidth]; })()")
        assert box[0] <= box[1] + 1, f"{page} {table}: {box[0]} px of table in {box[1]} px"


def test_the_appendix_is_collapsed_until_asked_for_and_a_link_into_it_opens_it(tmp_path, browser):
    """Issue 37: the report answers first; every table of measurements waits in a collapsed appendix, and a link
    to one of its sections (a bound's glossary entry) opens it. (`gpuplan report`'s one-file page; the site's
    machine page links its appendix page instead.)"""
    page = tmp_path / "index.html"
    page.write_text(render_report_html(build_report_for(FROZEN / "h100-80gb")), encoding="utf-8")
    browser.open(page.as_uri())
    assert browser.wait_for(SHOWN_DRAWN)
    assert browser.evaluate("document.querySelector('details.appendix-details').open") is False
    browser.evaluate("window.location.hash = 'glossary'; true")   # as a click on a bound's glossary link does
    assert browser.wait_for("document.querySelector('details.appendix-details').open === true")
