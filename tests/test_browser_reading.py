"""Every page of the built book reads well on a laptop (1280 px) and on a phone (390 px).

Run after `make book` (`make test-browser`, which also fetches axe-core into `_axe/`). The same
local server and Debian Chromium as tests/test_browser.py open every page of the table of
contents at both widths, and we check, as a reader would meet it (issue 27):

- tables never break a number: a numeric cell or a short label (at most three words; a code
  name may wrap after its dots and underscores) sits on one line, no word or number in any table
  cell is split across lines, and a table wider than the
  column scrolls inside its own box (the page itself never scrolls sideways: not wider than a
  390 px phone);
- a table shows no pandas index (a header-less first column counting 0, 1, 2, ...);
- the method chapters number their exercises per chapter: "Exercise C.1", "C.2", ... where C is
  the chapter's number;
- axe-core, the accessibility engine of browsers' developer tools (its experimental rules
  included), finds no serious or critical violation;
- nothing is written to the browser console as an error, and no script raises;
- the page has a description (``<meta name="description">``) for search engines and link previews;
- every figure is a numbered figure ("Fig. 4.2") with a caption, and its alt text describes it
  (not the image's file path); no caption stands without its figure, and every code cell
  declared a numbered figure has its figure on the page (a figure cell that drew nothing);
- a method chapter narrates: its visible code (code inputs and printed text, as high as they
  stand on the page) is at most ``MAX_CODE_SHARE`` of the article's height, and it numbers at
  least one display equation ("(4.1)") that its prose can refer to;
- on a laptop no display equation is wider than the column (cut off after "conf(", or scrolling).

axe-core comes from npm at a pinned version and sha256 (the Makefile's `$(AXE)`, as MathJax) and is
injected from disk: no page of the published site carries it, and no test reaches the internet.
"""

import re

import jupytext
import pytest

from book_pages import REPO, toc_files
from test_browser import HTML, METHOD_CHAPTERS, SCREENSHOTS, browser, server  # noqa: F401 (fixtures)

AXE = REPO / "_axe" / "axe.min.js"
WIDTHS = [1280, 390]
#: Every page of the table of contents (index.html only redirects to its root, book/intro).
PAGES = toc_files()


#: The largest share of a method chapter's height that its visible code may take (issue 27).
MAX_CODE_SHARE = 0.30

#: What a reader meets in the tables of a page: wrapped numbers and labels, words split across
#: lines, index columns, tables that push the page wider than the screen. A cell's lines are the
#: line boxes of its text (a Range's client rectangles grouped by their vertical extent). A word
#: is a run of letters (a camel-case name is several: Probabilities, As, Logits), a number a run of
#: digits with its decimal points and separators: a line break inside either is a defect, a break
#: after a dot or an underscore of a code name (``calibnb.losses.<wbr>focal_<wbr>loss``) is not.
TABLES_JS = r"""() => {
  const main = document.querySelector('main') || document.body;
  const visible = e => e.getClientRects().length > 0 && !e.closest('details:not([open])');
  const lineCount = rects => {
    const sorted = [...rects].filter(r => r.width > 0 && r.height > 0).sort((a, b) => a.top - b.top);
    let lines = 0, bottom = -Infinity;
    for (const r of sorted) {
      if (r.top >= bottom - 2) { lines += 1; bottom = r.bottom; }
      else bottom = Math.max(bottom, r.bottom);
    }
    return lines;
  };
  // the text a reader sees: not the body of a closed <details> (a test's name behind its toggle)
  const shown = t => t.nodeValue.trim() && !(t.parentElement.closest('details:not([open])') && !t.parentElement.closest('summary'));
  const texts = cell => {
    const found = [], walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) if (shown(t)) found.push(t);
    return found;
  };
  const linesOf = cell => lineCount(texts(cell).flatMap(t => {
    const range = document.createRange(); range.selectNodeContents(t); return [...range.getClientRects()]; }));
  const numeric = /^[\s\d.,±%()+\-−–×eE\/:;\[\]✓◀≤≥<>=≈|·…*~^]+$/;
  const brokenNumbers = [], brokenLabels = [], brokenWords = [], indexColumns = [], unboxed = [];
  const cells = [...main.querySelectorAll('table td, table th')].filter(visible);
  for (const cell of cells) {
    const text = (cell.innerText || '').trim();
    if (!text) continue;
    const lines = linesOf(cell);
    if (lines > 1 && /\d/.test(text) && numeric.test(text)) brokenNumbers.push(text.slice(0, 40));
    // a code name (calibnb.losses.focal_loss) may wrap after its dots and underscores on a phone
    else if (lines > 1 && text.split(/\s+/).length <= 3 && text.length <= 30 && !cell.querySelector('code'))
      brokenLabels.push(text.slice(0, 40));
    for (const node of texts(cell)) {
      for (const match of node.nodeValue.matchAll(/\p{N}+(?:[.,]\p{N}+)*|\p{Lu}?\p{Ll}+|\p{Lu}{2,}(?!\p{Ll})/gu)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        if (lineCount(range.getClientRects()) > 1) brokenWords.push(match[0].slice(0, 40));
      }
    }
  }
  for (const table of [...main.querySelectorAll('table')].filter(visible)) {
    const rows = [...table.querySelectorAll('tbody tr')];
    const firsts = rows.map(r => r.firstElementChild).filter(Boolean);
    // an index with a name (its header above the column, e.g. "bin" or "epoch") is meaningful
    const named = [...table.querySelectorAll('thead tr')].some(r => r.firstElementChild && r.firstElementChild.innerText.trim());
    if (rows.length >= 2 && !named && firsts.every(c => c.tagName === 'TH')
        && firsts.every((c, i) => c.innerText.trim() === String(i))) {
      indexColumns.push((table.querySelector('caption') || table).innerText.trim().slice(0, 60).replace(/\s+/g, ' '));
    }
    const box = table.parentElement;
    if (table.getBoundingClientRect().right > document.documentElement.clientWidth + 1) {
      let scroller = null;
      for (let e = table.parentElement; e && e !== main; e = e.parentElement) {
        if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) { scroller = e; break; }
      }
      if (!scroller || scroller.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        unboxed.push(table.innerText.trim().slice(0, 60).replace(/\s+/g, ' '));
    }
  }
  const root = document.documentElement;
  return {cells: cells.length, brokenNumbers, brokenLabels, brokenWords, indexColumns, unboxed,
          overflow: root.scrollWidth - root.clientWidth};
}"""

#: The page's description, its chapter number and its exercises' numbers as shown.
PAGE_JS = r"""() => {
  const main = document.querySelector('main') || document.body;
  const meta = document.querySelector('meta[name="description"]');
  const number = main.querySelector('article h1 .section-number');  // not the print-only header's h1
  return {
    description: meta ? meta.getAttribute('content') : null,
    chapter: number ? number.innerText.trim().replace(/\.$/, '') : null,
    exercises: [...main.querySelectorAll('.exercise')].map(e =>
        ((e.querySelector('.admonition-title') || e).innerText || '').trim().split('\n')[0].slice(0, 60)),
  };
}"""

#: How much of the article is code a reader sees (code inputs not behind a toggle, and printed
#: text outputs), its figures with their numbers, captions and alt texts, and its numbered display
#: equations. A figure is any image or interactive figure (``.explorable``) in the article.
READING_JS = r"""() => {
  const article = document.querySelector('main article') || document.querySelector('main') || document.body;
  const shown = e => e.getClientRects().length > 0 && !e.closest('details:not([open])');
  const height = e => e.getBoundingClientRect().height;
  const code = [...article.querySelectorAll('.cell_input, .cell_output .output.stream, .cell_output .output.text_plain')]
      .filter(shown).filter(e => !e.parentElement.closest('.cell_input, .output.stream, .output.text_plain'));
  const figures = [...article.querySelectorAll('img, .explorable')].filter(e => !e.closest('.explorable') || e.matches('.explorable'))
      .filter(e => !e.closest('.sidebar-logo, .navbar-brand, header')).map(e => {
    const figure = e.closest('figure');
    const number = figure && figure.querySelector('figcaption .caption-number');
    const caption = figure && figure.querySelector('figcaption');
    const alt = e.tagName === 'IMG' ? (e.getAttribute('alt') || '') : (e.getAttribute('aria-label') || '');
    return {src: (e.getAttribute('src') || e.className).slice(-60), number: number ? number.innerText.trim() : null,
            caption: caption ? caption.innerText.replace(number ? number.innerText : '', '').trim().length : 0, alt};
  });
  // a display equation wider than the column is cut off or scrolls: on a laptop it must fit
  const wideEquations = [...article.querySelectorAll('div.math, mjx-container[display="true"]')].filter(shown)
      .filter(e => e.scrollWidth > e.clientWidth + 1)
      .map(e => `${(e.closest('[id]') || e).id || e.textContent.slice(0, 40)}: ${e.scrollWidth} > ${e.clientWidth} px`);
  // a caption whose figure holds no picture: a figure cell that drew nothing
  const emptyFigures = [...article.querySelectorAll('figure')].filter(f => f.querySelector('figcaption'))
      .filter(f => !f.querySelector('img, .explorable, svg, video, iframe'))
      .map(f => (f.querySelector('figcaption').innerText || f.id).trim().slice(0, 60));
  return {codeShare: code.reduce((s, e) => s + height(e), 0) / height(article), wideEquations, emptyFigures,
          equations: [...article.querySelectorAll('.math .eqno, span.eqno')].map(e => e.innerText.trim()),
          figures};
}"""

#: axe-core over the whole page, its experimental rules (label-content-name-mismatch) enabled.
AXE_JS = r"""async () => {
  const rules = Object.fromEntries(axe.getRules(['experimental']).map(r => [r.ruleId, {enabled: true}]));
  const result = await axe.run(document, {resultTypes: ['violations'], rules});
  return result.violations.filter(v => ['serious', 'critical'].includes(v.impact)).map(v => ({
    id: v.id, impact: v.impact, nodes: v.nodes.length,
    where: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\n').slice(1, 2).join(''))}));
}"""


def read_page(browser, server, page_name: str, width: int) -> dict:
    """Everything this module checks on ``page_name`` at ``width`` px, from one visit."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `make test-browser` (it fetches axe-core) or `make _axe/axe.min.js`")
    page = browser.new_page(viewport={"width": width, "height": 900})
    console = []
    page.on("console", lambda m: m.type == "error" and console.append(f"{m.text} ({m.location.get('url')})"))
    page.on("pageerror", lambda e: console.append(str(e)))
    page.goto(f"{server}/{page_name}.html", wait_until="networkidle")
    if page.locator("script[src*='mathjax']").count():
        page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise", timeout=30_000)
        page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{page_name.replace('/', '_')}_{width}.png"), full_page=False)
    found = page.evaluate(TABLES_JS) | page.evaluate(PAGE_JS) | page.evaluate(READING_JS)
    # the page's own errors; axe-core's requests (it re-reads @import-ed stylesheets relative to
    # the page, e.g. a 404 for basic.css) are not the page's
    found["console"] = list(console)
    page.add_script_tag(path=str(AXE))
    found["axe"] = page.evaluate(AXE_JS)
    page.close()
    return found


def figure_defects(figures: list[dict]) -> list[str]:
    """What is wrong with a page's figures: each must be numbered, captioned (a sentence at least)
    and described by its alt text, which is not a file path."""
    defects = []
    for figure in figures:
        if not figure["number"]:
            defects.append(f"{figure['src']}: no numbered caption")
        elif figure["caption"] < 20:
            defects.append(f"{figure['number']}: caption too short to say what to look at")
        alt = figure["alt"].strip()
        # a path is one token with a slash, or an image file's name ("softmax(z / T)" is prose)
        path = re.fullmatch(r"\S*[/\\]\S*", alt) or re.search(r"\.(png|svg|jpe?g|gif)$", alt, re.IGNORECASE)
        if len(alt) < 20 or path:
            defects.append(f"{figure['number'] or figure['src']}: alt text {alt!r} does not describe the figure")
    return defects


def exercise_numbering_defects(chapter: str | None, titles: list[str]) -> list[str]:
    """What is wrong with a chapter's exercise titles ("Exercise 4.2 (...)"): each must carry the
    chapter's number and count from 1."""
    defects = []
    for position, title in enumerate(titles, start=1):
        match = re.match(r"Exercise\s+(\d+)\.(\d+)\b", title)
        if not match:
            defects.append(f"{title!r} is not numbered 'C.k'")
        elif chapter is not None and match[1] != chapter:
            defects.append(f"{title!r} is not numbered in chapter {chapter}")
        elif int(match[2]) != position:
            defects.append(f"{title!r} should be exercise {position} of its chapter")
    return defects


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page_name", PAGES)
def test_page_reads_on_a_laptop_and_a_phone(browser, server, page_name, width):  # noqa: F811
    found = read_page(browser, server, page_name, width)
    assert found["overflow"] <= 0, f"the page scrolls sideways by {found['overflow']} px at {width} px"
    assert not found["unboxed"], f"tables wider than the column outside a scrolling box: {found['unboxed']}"
    assert not found["brokenNumbers"], f"numeric cells wrapped across lines: {found['brokenNumbers']}"
    assert not found["brokenLabels"], f"short labels wrapped across lines: {found['brokenLabels']}"
    assert not found["brokenWords"], f"words split across lines in table cells: {found['brokenWords']}"
    assert not found["indexColumns"], f"tables showing a pandas index (0, 1, 2, ...): {found['indexColumns']}"
    assert found["description"] and len(found["description"]) >= 40, f"no page description: {found['description']!r}"
    assert not found["console"], f"console errors: {found['console']}"
    assert not found["axe"], f"axe-core: serious or critical violations: {found['axe']}"
    if page_name in METHOD_CHAPTERS:
        assert len(found["exercises"]) >= 3, f"{page_name} has exercises {found['exercises']}"
        assert found["chapter"], f"{page_name} has no chapter number in its title"
        assert not exercise_numbering_defects(found["chapter"], found["exercises"])
        assert found["codeShare"] <= MAX_CODE_SHARE, (
            f"{page_name}: visible code takes {found['codeShare']:.0%} of the page (at most {MAX_CODE_SHARE:.0%})")
        assert found["equations"], f"{page_name} numbers no display equation"
    assert not figure_defects(found["figures"]), f"figures: {figure_defects(found['figures'])}"
    assert not found["emptyFigures"], f"captions without their figure: {found['emptyFigures']}"
    if width >= 1280:
        assert not found["wideEquations"], f"display equations wider than the column: {found['wideEquations']}"


@pytest.mark.browser
@pytest.mark.parametrize("page_name", PAGES)
def test_every_figure_cell_shows_its_figure(page_name):
    """A code cell declared a numbered figure (``mystnb: figure: name:``) that drew nothing has no
    figure on the page: its prose and references would point at nothing (nbs/train.md's
    fig-train-gammas did, with the notebook's default loss)."""
    source = next((REPO / f"{page_name}{ext}" for ext in (".md", ".ipynb") if (REPO / f"{page_name}{ext}").is_file()))
    names = [cell.metadata.get("mystnb", {}).get("figure", {}).get("name")
             for cell in jupytext.read(source).cells if cell.cell_type == "code"]
    page = (HTML / f"{page_name}.html").read_text(encoding="utf-8")
    missing = [name for name in names if name and f'id="{name}"' not in page]
    assert not missing, f"{page_name}: figure cells that drew no figure: {missing}"


def test_figure_rule():
    """The rule the browser test applies to a page's figures."""
    good = {"src": "a.png", "number": "Fig. 4.2", "caption": 80, "alt": "Reliability diagram of a ResNet-50"}
    assert figure_defects([good]) == []
    assert figure_defects([good | {"number": None}])  # an anonymous image
    assert figure_defects([good | {"caption": 3}])  # "Fig. 4.2 ." says nothing
    assert figure_defects([good | {"alt": "../_build/jupyter_execute/abc123.png"}])  # a path for alt text
    assert figure_defects([good | {"alt": "figure_1_reliability.png"}])
    assert figure_defects([good | {"alt": ""}])
    assert figure_defects([good | {"alt": "/tmp/calibnb/figures/reliability_diagram_of_the_densenet"}])
    assert not figure_defects([good | {"alt": "Reliability diagram of softmax(z / T) as T moves, with its ECE"}])


def test_exercise_numbering_rule():
    """The rule the browser test applies, on titles as sphinx-exercise writes them."""
    assert exercise_numbering_defects("4", ["Exercise 4.1 (A bound)", "Exercise 4.2", "Exercise 4.3 (x)"]) == []
    assert exercise_numbering_defects("6", ["Exercise 7 (Step)"])  # numbered across the book
    assert exercise_numbering_defects("6", ["Exercise 5.1"])  # another chapter's number
    assert exercise_numbering_defects("6", ["Exercise 6.2"])  # not counting from 1
