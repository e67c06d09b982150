"""The built book works offline in a real browser.

Run after `make book` (`make test-browser`). A local HTTP server on 127.0.0.1 serves
`_build/html`; Debian's headless Chromium (never a browser downloaded by a test tool) opens
every page of the table of contents and we check that

- MathJax, served from the site itself, typeset the page's math (`mjx-container` elements),
- no request failed or went anywhere but the local server (the book needs no internet),
- no JavaScript error was raised,

then read each page as a reader sees it at 1280 px (:func:`page_defects`): no cell output and no
code block wider than its column (hidden behind a scroll bar), no `$` rendered as text
(math that failed to parse), no stderr output, no absolute path of the builder's machine in an
output, no figure drawn wider than the column (shrunk to fit, its labels below legible size);
and every method chapter ends with exercises whose solutions are hidden until asked for.
A screenshot of each page goes under `_build/screenshots/`.
"""

import functools
import http.server
import os
import shutil
import threading
from urllib.parse import urlparse

import pytest

from book_pages import REPO, source_of, toc_files

HTML = REPO / "_build" / "html"
SCREENSHOTS = REPO / "_build" / "screenshots"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str:
    path = os.environ.get("CALIBNB_CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.fail("Chromium not found: install Debian's `chromium` or set CALIBNB_CHROMIUM")
    return path


@pytest.fixture(scope="module")
def server():
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML}/index.html does not exist: run `make book` first")
    handler = functools.partial(QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS
        )
        yield chromium
        chromium.close()


def has_math(doc: str) -> bool:
    text = source_of(doc).read_text()
    return "$" in text or "{math}" in text


PAGES = ["index"] + toc_files()

#: The chapters that teach a method: each ends with at least three exercises, solutions hidden.
METHOD_CHAPTERS = ["nbs/measuring_calibration", "nbs/focal_analysis", "nbs/focal_loss_code", "nbs/adafocal",
                   "nbs/dual_focal", "nbs/focal_calibration_loss", "nbs/focal_temperature_scaling"]

#: What a reader would see that they should not, found with the DOM of the rendered page.
DEFECTS_JS = r"""() => {
  const describe = e => (e.innerText || '').trim().slice(0, 80).replace(/\s+/g, ' ');
  const main = document.querySelector('main') || document.body;
  // a table wider than the column scrolls inside its own box (issue 27), marked by a shadow:
  // tests/test_browser_reading.py checks that box; any other output hidden behind a scroll bar is a defect
  const tableBox = e => e.matches('div.output.text_html') && e.querySelector('table');
  const wide = [...main.querySelectorAll('.cell_output, .cell_output *, pre')].filter(e =>
      e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 2 && getComputedStyle(e).overflowX !== 'visible'
      && !e.closest('details:not([open])') && !tableBox(e) && !e.closest('table')
      // inline math (a γ in a caption) overhangs its box by an italic's few pixels: nothing is hidden
      && !(e.matches('span.math, span.math *, mjx-container:not([display="true"]), mjx-container:not([display="true"]) *')
           && e.scrollWidth <= e.clientWidth + 6));
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  const dollars = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeValue.includes('$') && !node.parentElement.closest('pre, code, mjx-container, script, style, .highlight, .MathJax'))
      dollars.push(node.nodeValue.trim().slice(0, 80));
  }
  const outputs = [...main.querySelectorAll('.cell_output')];
  const absolute = /(^|[\s'"(=])\/(home|root|work|tmp|usr|opt|var)\/|\.venv\//;
  const paths = outputs.flatMap(e => (e.innerText || '').split('\n')).filter(line => absolute.test(line));
  return {
    wide: wide.map(e => e.tagName + '.' + (e.className || '').toString().split(' ')[0] + ' ' + e.scrollWidth + '>' + e.clientWidth + ': ' + describe(e)),
    dollars: dollars,
    stderr: [...main.querySelectorAll('.cell_output .stderr, .cell_output .output.error, .cell_output .traceback')].map(describe),
    paths: [...new Set(paths.map(text => text.trim().slice(0, 80)))],
    shrunk: [...main.querySelectorAll('.cell_output img')].filter(i => i.naturalWidth && i.clientWidth < 0.9 * i.naturalWidth)
        .map(i => `${i.naturalWidth} px figure shown at ${i.clientWidth} px`),
    exercises: main.querySelectorAll('.exercise').length,
    solutions: main.querySelectorAll('.solution').length,
    open_solutions: [...main.querySelectorAll('.solution')].filter(e => e.offsetParent !== null && !(e.classList.contains('dropdown') || e.closest('details'))).length,
  };
}"""


def page_defects(page) -> dict:
    """What a reader of ``page`` (loaded, math typeset) sees that the book promises not to show."""
    return page.evaluate(DEFECTS_JS)


@pytest.mark.browser
@pytest.mark.parametrize("page_name", PAGES)
def test_page_renders_offline_with_typeset_math(browser, server, page_name):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    failed, foreign, errors = [], [], []
    page.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})"))
    page.on(
        "response", lambda r: r.status >= 400 and failed.append(f"{r.url} (HTTP {r.status})")
    )
    page.on(
        "request",
        lambda r: urlparse(r.url).hostname not in (None, "127.0.0.1") and foreign.append(r.url),
    )
    page.on("pageerror", lambda e: errors.append(str(e)))

    page.goto(f"{server}/{page_name}.html", wait_until="networkidle")
    doc = "book/intro" if page_name == "index" else page_name
    if has_math(doc):
        page.wait_for_selector("mjx-container", state="attached", timeout=30_000)
        assert page.locator("mjx-container").count() > 0
        assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{page_name.replace('/', '_')}.png"), full_page=False)
    defects = page_defects(page)
    page.close()

    assert not defects["wide"], f"cell outputs or code wider than their column: {defects['wide']}"
    assert not defects["dollars"], f"raw $ rendered as text (math that did not parse): {defects['dollars']}"
    assert not defects["stderr"], f"stderr or error outputs: {defects['stderr']}"
    assert not defects["paths"], f"absolute paths in outputs: {defects['paths']}"
    # a figure drawn wider than the column is shrunk, and its 10-point labels with it
    assert not defects["shrunk"], f"figures not drawn for the column (calibnb.plots.COLUMN_WIDTH): {defects['shrunk']}"
    if page_name in METHOD_CHAPTERS:
        assert defects["exercises"] >= 3, f"{page_name} has {defects['exercises']} exercises (at least 3)"
        assert defects["solutions"] == defects["exercises"] and defects["open_solutions"] == 0, defects
    assert not failed, f"requests failed: {failed}"
    assert not foreign, f"the page requested other hosts: {foreign}"
    assert not errors, f"JavaScript errors: {errors}"


#: What does not fit the screen on an API page: the page itself scrolling sideways, or a signature,
#: table or code block wider than its box.
OVERFLOW_JS = r"""() => {
  const root = document.documentElement;
  const main = document.querySelector('main') || document.body;
  const wide = [...main.querySelectorAll('dt.sig, table, pre, dd')].filter(e =>
      e.getBoundingClientRect().right > root.clientWidth + 1
      || (e.scrollWidth > e.clientWidth + 2 && getComputedStyle(e).overflowX !== 'visible'));
  return {page: root.scrollWidth - root.clientWidth, entries: main.querySelectorAll('dl.py').length,
          wide: wide.map(e => e.tagName + ' ' + e.scrollWidth + '>' + e.clientWidth + ': '
                              + (e.innerText || '').trim().slice(0, 60).replace(/\s+/g, ' '))};
}"""


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("page_name", [doc for doc in toc_files() if doc.startswith("book/api/") and doc != "book/api/index"])
def test_api_pages_fit_a_desktop_and_a_phone(browser, server, page_name, width):
    """The API pages (generated from the docstrings) read on a 1280 px screen and a 390 px phone:
    every entry rendered, long signatures wrapped one parameter a line, nothing scrolls sideways."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(f"{server}/{page_name}.html", wait_until="networkidle")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{page_name.replace('/', '_')}_{width}.png"), full_page=False)
    found = page.evaluate(OVERFLOW_JS)
    page.close()
    assert found["entries"] > 0, f"{page_name} shows no API entry"
    assert found["page"] <= 0, f"{page_name} scrolls sideways by {found['page']} px at {width} px"
    assert not found["wide"], f"wider than their box at {width} px: {found['wide']}"
