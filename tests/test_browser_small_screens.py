"""On a phone every figure can be read and every wide table says that it scrolls (issue 27, items 3
and 4).

Run after `make book` (`make test-browser`). The book's figures are drawn for its 700-px column
(``calibnb.plots.COLUMN_WIDTH``); at 390 px the browser shrinks them to half their size, too small to
read a grid of panels. ``_static/calibnb-figures.js`` makes every article image a button that opens
it at its full size: we check, on every page of the table of contents at 1280 and 390 px, that an
image is either shown at (about) the size it was drawn, or can be opened, and that opening the first
shrunk one shows it at its full width, with its caption, in a dialog that Escape closes.
``_static/calibnb-tables.js`` marks a table box whose table is wider than the box; its CSS writes
"Scroll sideways for more columns" above the table: we check that every such box carries the cue.
"""

import pytest

from book_pages import toc_files
from test_browser import browser, server  # noqa: F401 (fixtures)

WIDTHS = [1280, 390]
PAGES = toc_files()

#: Every article image: its drawn and shown widths, and whether its button opens it.
FIGURES_JS = r"""() => [...document.querySelectorAll('main article img')]
    .filter(img => !img.closest('.explorable') && img.getClientRects().length > 0 && img.naturalWidth > 0)
    .map(img => ({src: img.getAttribute('src').slice(-40), natural: img.naturalWidth,
                  shown: img.getBoundingClientRect().width,
                  button: img.parentElement.matches('button.calibnb-zoom') ? !img.parentElement.disabled : null}))"""

#: The table boxes whose table does not fit, and whether they show the cue above it.
TABLES_JS = r"""() => [...document.querySelectorAll('div.cell_output div.output.text_html, article .pst-scrollable-table-container')]
    .filter(box => box.querySelector('table') && box.getClientRects().length > 0 && box.scrollWidth > box.clientWidth + 1)
    .map(box => ({table: box.innerText.trim().slice(0, 50).replace(/\s+/g, ' '),
                  cue: getComputedStyle(box, '::before').content}))"""


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page_name", PAGES)
def test_every_figure_can_be_read_and_every_wide_table_says_it_scrolls(browser, server, page_name, width):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(f"{server}/{page_name}.html", wait_until="networkidle")
    page.wait_for_function("() => [...document.images].every(i => i.complete)")
    figures = page.evaluate(FIGURES_JS)
    unreadable = [f for f in figures if f["shown"] < 0.9 * f["natural"] and not f["button"]]
    assert not unreadable, f"figures shown shrunk that cannot be opened at full size: {unreadable}"
    if width >= 1280:  # a laptop shows every figure at about the size it was drawn
        shrunk = [f for f in figures if f["shown"] < 0.9 * f["natural"]]
        assert not shrunk, f"figures shrunk at {width} px: {shrunk}"
    opens = [i for i, f in enumerate(figures) if f["button"]]
    if opens:
        image = page.locator("main article button.calibnb-zoom:not([disabled]) img").first
        image.scroll_into_view_if_needed()
        image.click()
        dialog = page.locator("dialog.calibnb-figure-dialog")
        assert dialog.evaluate("d => d.open")
        full = dialog.locator("img").evaluate("i => [i.getBoundingClientRect().width, i.naturalWidth]")
        assert abs(full[0] - full[1]) <= 1, f"the dialog shows the figure at {full[0]} px, not its {full[1]} px"
        assert full[0] > figures[opens[0]]["shown"] + 1, "the dialog does not enlarge the figure"
        caption = dialog.locator(".calibnb-figure-caption")
        assert caption.count() == 0 or caption.inner_text().startswith("Fig.")
        page.keyboard.press("Escape")
        assert not dialog.evaluate("d => d.open")
    wide = page.evaluate(TABLES_JS)
    silent = [t["table"] for t in wide if "Scroll" not in t["cue"]]
    assert not silent, f"tables wider than their box without the scroll cue: {silent}"
    page.close()
