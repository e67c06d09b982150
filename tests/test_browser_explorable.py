"""The book's explorable figures move in a real browser, offline (issue 27, item 8).

Run after `make book` (`make test-browser`). On each page that shows one (:data:`PAGES`), at 1280
and 390 px: every ``.explorable`` is drawn (an SVG with its axes and data) inside a numbered
figure; moving its slider by keyboard (End, Home, arrows) and by setting its value changes the
readout, the slider's ``aria-valuetext`` and the drawing; the reliability diagram's readout gives
a different ECE at each end of the temperature range; nothing is written to the console as an
error; the page requests nothing from outside the site; and the figures' HTML adds less than
:data:`MAX_ADDED_BYTES` to the page. A figure's output carries its own viewer, so it also moves
on a bare page and when a notebook front end inserts it as JupyterLab does (``innerHTML``, then
each script re-created, before the output is attached to the page).
"""

import re

import numpy as np
import pytest

from calibnb import explorable

from test_browser import HTML, browser, server  # noqa: F401 (fixtures)

#: The pages with explorable figures, and how many each shows.
PAGES = {"nbs/focal_analysis": 1, "nbs/measuring_calibration": 1, "nbs/focal_temperature_scaling": 1}
#: The most the explorable figures may add to a page (issue 27: under 1.5 MB).
MAX_ADDED_BYTES = 1_500_000

STATE_JS = r"""(root) => ({
  readout: root.querySelector('output').textContent,
  valuetext: root.querySelector('input[type=range]').getAttribute('aria-valuetext'),
  drawing: root.querySelector('.explorable-plot svg') ? root.querySelector('.explorable-plot svg').innerHTML : '',
  paths: root.querySelectorAll('.explorable-plot svg path, .explorable-plot svg rect, .explorable-plot svg circle').length,
  figure: ((root.closest("figure") && root.closest("figure").querySelector("figcaption .caption-number") || {}).innerText || "").trim() || null,
  width: root.getBoundingClientRect().width,
  column: (root.closest('figure') || root.parentElement).getBoundingClientRect().width,
})"""


def ece_of(readout: str) -> float:
    return float(re.search(r"ECE = ([\d.]+) %", readout)[1])


@pytest.mark.browser
def test_explorable_pages_carry_little():
    """The figures' data (their JSON, as the built page holds it) stay under the page budget."""
    for page, count in PAGES.items():
        if not (HTML / f"{page}.html").exists():
            pytest.fail(f"{HTML}/{page}.html does not exist: run `make book` first")
        text = (HTML / f"{page}.html").read_text()
        blocks = re.findall(r'<div class="explorable".*?</script><style>.*?</style><script>.*?</script></div>', text, re.S)
        assert len(blocks) == count, f"{page}: {len(blocks)} explorable figures, expected {count}"
        added = sum(len(b.encode()) for b in blocks)
        assert added < MAX_ADDED_BYTES, f"{page}: explorable figures add {added} bytes"


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("page_name", list(PAGES))
def test_explorable_figures_move(browser, server, page_name, width):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 900})
    console, outside = [], []
    page.on("console", lambda m: m.type == "error" and console.append(m.text))
    page.on("pageerror", lambda e: console.append(str(e)))
    page.on("request", lambda r: r.url.startswith(server) or r.url.startswith("data:") or outside.append(r.url))
    page.goto(f"{server}/{page_name}.html", wait_until="networkidle")
    roots = page.locator(".explorable")
    assert roots.count() == PAGES[page_name]
    for i in range(roots.count()):
        root = roots.nth(i)
        root.scroll_into_view_if_needed()
        slider = root.locator("input[type=range]")
        first = root.evaluate(STATE_JS)
        assert re.fullmatch(r"Fig\. \d+\.\d+", first["figure"] or ""), f"not in a numbered figure: {first['figure']}"
        assert first["paths"] > 5, "the figure was not drawn"
        assert first["width"] <= first["column"] + 1, f"wider than its column at {width} px"
        assert root.locator("label").inner_text().strip(), "the slider has no visible label"
        steps = int(slider.get_attribute("max"))
        # keyboard: End and Home go to the ends, an arrow moves one frame
        slider.focus()
        page.keyboard.press("End")
        last = root.evaluate(STATE_JS)
        assert slider.input_value() == str(steps)
        page.keyboard.press("Home")
        low = root.evaluate(STATE_JS)
        assert slider.input_value() == "0"
        page.keyboard.press("ArrowRight")
        assert slider.input_value() == "1"
        one = root.evaluate(STATE_JS)
        for a, b in [(low, last), (low, one)]:
            assert a["readout"] != b["readout"], "the readout did not follow the slider"
            assert a["valuetext"] != b["valuetext"], "aria-valuetext did not follow the slider"
            assert a["drawing"] != b["drawing"], "the drawing did not follow the slider"
        # a value set by a script (or a pointer drag), announced by an input event, is shown too
        slider.fill(str(steps // 2))
        middle = root.evaluate(STATE_JS)
        assert middle["readout"] not in {low["readout"], one["readout"], last["readout"]}
        if page_name == "nbs/measuring_calibration":
            assert ece_of(low["readout"]) != ece_of(last["readout"])
            assert "T = 0.50" in low["readout"] and "T = 3.50" in last["readout"]
    page.close()
    assert not console, f"console errors: {console}"
    assert not outside, f"requests outside the site: {outside}"


#: A notebook front end's way of showing an HTML output: JupyterLab sets the output's innerHTML
#: (whose scripts do not run), re-creates each script so that it runs, and attaches the output.
NOTEBOOK_JS = r"""(output) => {
  const host = document.createElement('div');
  host.innerHTML = output;
  host.querySelectorAll('script').forEach(old => {
    const s = document.createElement('script');
    [...old.attributes].forEach(a => s.setAttribute(a.name, a.value));
    s.textContent = old.textContent;
    old.replaceWith(s);
  });
  document.body.appendChild(host);
}"""


@pytest.mark.browser
@pytest.mark.parametrize("how", ["page", "notebook"])
def test_a_figure_moves_outside_the_book(browser, how):  # noqa: F811
    """Two figures' outputs on a page without the book's scripts: each draws and moves."""
    outputs = [explorable.focal_map([0.0, 1.0, 2.0, 3.0], n_points=21, initial=0.0)._repr_html_(),
               explorable.focal_map(np.arange(6.0), n_points=31, initial=5.0)._repr_html_()]
    page = browser.new_page(viewport={"width": 800, "height": 900})
    console = []
    page.on("console", lambda m: m.type == "error" and console.append(m.text))
    page.on("pageerror", lambda e: console.append(str(e)))
    if how == "page":
        page.set_content(f"<!doctype html><html lang='en'><title>t</title><body>{''.join(outputs)}</body></html>")
    else:
        page.set_content("<!doctype html><html lang='en'><title>t</title><body></body></html>")
        for output in outputs:
            page.evaluate(NOTEBOOK_JS, output)
    roots = page.locator(".explorable")
    assert roots.count() == 2
    for i in range(2):
        root = roots.nth(i)
        before = root.evaluate(STATE_JS)
        assert before["paths"] > 5, f"figure {i} was not drawn ({how})"
        slider = root.locator("input[type=range]")
        slider.focus()
        page.keyboard.press("ArrowLeft" if i else "ArrowRight")
        after = root.evaluate(STATE_JS)
        assert after["readout"] != before["readout"] and after["drawing"] != before["drawing"]
        assert after["readout"].startswith("γ = 1:" if i == 0 else "γ = 4:")
    assert page.evaluate("() => document.querySelectorAll('.explorable-plot svg').length") == 2  # once each
    page.close()
    assert not console, f"console errors: {console}"
