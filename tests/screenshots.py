"""The issue-15 screenshots: the H100 report's first screen at 1280×800 and at a phone's 390×844 (headless
Chromium), and its PDF's first two pages as PNGs, into docs/. Run from the repository root:

    PYTHONPATH=$PWD python tests/screenshots.py [OUT_DIR]

Each PNG stays under 300 kB: a first screen, and the PDF pages at 100 dpi (at 60 the snippets' 6 pt type
is not legible) reduced to a 64-colour palette.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import Browser, find_chromium  # noqa: E402
from paths import REPO, RESULTS  # noqa: E402
from PIL import Image  # noqa: E402

from planner.render.report import render_report  # noqa: E402

PDF_DPI = 100
CHARTS_DRAWN = ("Array.from(document.querySelectorAll('.vega-chart')).filter(el => !el.closest('details:not([open])'))"
                ".every(el => el.querySelector('svg, canvas') !== null)")   # the appendix's draw when it opens


def first_screen(browser: Browser, url: str, width: int, height: int, path: Path) -> None:
    browser.set_viewport(width, height, mobile=width < 600)
    problems = browser.open(url)
    assert problems.all == [], problems.all
    browser.wait_for(CHARTS_DRAWN)
    shot = browser.call("Page.captureScreenshot", {"format": "png"}, session=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def main(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        html, pdf = render_report(RESULTS / "h100-80gb", Path(tmp))
        with Browser(find_chromium()) as browser:
            first_screen(browser, html.as_uri(), 1280, 800, out / "report-first-screen.png")
            first_screen(browser, html.as_uri(), 390, 844, out / "report-phone.png")
        pages = ["-f", "1", "-l", "2"]
        subprocess.run(["pdftoppm", "-png", "-r", str(PDF_DPI), *pages, str(pdf), str(Path(tmp) / "page")], check=True)
        # pdftoppm pads the page number to the width of the page count: page-01.png in a 54-page PDF
        for n, page in enumerate(sorted(Path(tmp).glob("page-*.png")), start=1):
            Image.open(page).convert("RGB").quantize(64).save(out / f"report-pdf-page{n}.png", optimize=True)
    shots = [out / name for name in ("report-first-screen.png", "report-phone.png", "report-pdf-page1.png",
                                     "report-pdf-page2.png")]
    for shot in shots:
        assert shot.stat().st_size < 300_000, f"{shot} is {shot.stat().st_size} bytes"
    return shots


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs"):
        print(path, path.stat().st_size)
