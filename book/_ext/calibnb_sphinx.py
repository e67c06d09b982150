"""Sphinx tweaks for the calibnb book.

**Executed notebooks to download.** sphinx-book-theme offers a chapter's ``.ipynb`` in its
download menu only when a launch service (Binder, Colab, ...) is configured, which this offline
book does not use. :func:`_offer_executed_notebook` does the theme's own step without one: it
copies the notebook that myst-nb executed (``_build/jupyter_execute/<page>.ipynb``) beside the
page's source in ``_sources/`` and tells the theme about it, so every chapter can be downloaded
as ``.md`` and as an executed ``.ipynb`` (the training chapter's runs under papermill as it is).

**Duplicate inline scripts.** Under Jupyter Book 1.0.4, sphinx-togglebutton and sphinx-thebe
register their inline configuration scripts twice (``var togglebuttonSelector``, ``const THEBE_JS_URL``), which makes
every page raise "Identifier 'THEBE_JS_URL' has already been declared" in the browser. We keep
the first of any inline scripts with the same body.

**Constants a package re-exports.** A constant's documentation is the ``#:`` comment above its
assignment. autodoc reads that comment only in the module the directive names, so for
``calibnb.losses.LOSSES`` (assigned in ``calibnb.losses.registry``) it would fall back to the
docstring of the value's type (``dict``'s). :func:`_constant_comment` gives such an entry the
``#:`` comment of the calibnb module that assigns the very same object, and stops the build
when there is none.

**Summaries cut at "Eq.".** autosummary's table shows a docstring's first sentence, which it
ends at the first ". " unless the text before it ends with one of its
``WELL_KNOWN_ABBREVIATIONS`` ("et al.", "e.g.", "i.e."); our summaries cite "Eq. 1", "Eqs. 2
and 3", "Fig. 5" and "Alg. 1", so those abbreviations join the list (:func:`setup`).

**Accessible pages.** Three things that axe-core (and a reader with a screen reader) finds on
every page of a stock Jupyter Book are mended here, at the source of the HTML:

- a hidden code cell's "Show code cell source" toggle was a ``<summary>`` labelled "Toggle hidden
  content", a name that differs from what it shows (label-content-name-mismatch);
  :func:`_visit_hidden_cell` writes myst-nb's ``<details>`` with a ``<summary>`` named by its text;
- the theme's colour mode started from an empty ``default_mode``, and its script reported "Got
  invalid theme mode" in the console of every page: :func:`_default_colour_mode` gives it "auto",
  the theme's own default (following the reader's system);
- the bibliography's entries were ``role="doc-biblioentry"`` (deprecated in DPUB-ARIA 1.1) inside
  a ``role="list"``, which must own list items (aria-required-children, critical):
  :func:`_visit_citation` makes each entry a ``listitem``;
- a long signature, one parameter a line, is a ``<dl>`` of ``<dd>`` without a ``<dt>``, which
  is no definition list (axe-core: definition-list, serious): :func:`_presentational_signature_lists`
  marks it ``role="presentation"``, a layout;
- no page had a ``<meta name="description">``: :func:`_page_description` writes the page's first
  paragraph, its mathematics written plainly (cut at a word, at most :data:`DESCRIPTION_LENGTH` characters) unless the page's front
  matter gives one (``html_meta: {description: ...}``).

The theme's search and colour-mode buttons are overridden by the templates in ``book/_templates``.

**Code names in tables on a phone.** Tables (the API pages' summaries above all) name functions
like ``calibnb.losses.dual_focal_loss_sd``; :func:`_breakable_table_names` lets such a name break
after its dots and underscores and between the humps of a camel-case name (``<wbr>``), so that
on a 390 px screen it wraps between its parts instead of inside a word.

**Members from other libraries.** scikit-learn gives every estimator generated methods
(``set_fit_request``, ...) whose docstrings link into scikit-learn's own documentation;
:func:`_skip_foreign_member` leaves a class's members defined outside calibnb off its entry.
"""

import html
import importlib
import re
import shutil
import sys
from pathlib import Path

from docutils import nodes
from sphinx.pycode import ModuleAnalyzer


def _drop_duplicate_inline_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {}) or {}
        body = attributes.get("body")
        if not getattr(script, "filename", None) and body is not None:
            if body in seen:
                continue
            seen.add(body)
        unique.append(script)
    context["script_files"] = unique


def _offer_executed_notebook(app, pagename, templatename, context, doctree):
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if doctree is None or not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def _constant_comment(app, what, name, obj, options, lines):
    if what != "data" or not name.startswith("calibnb."):
        return
    package, _, attr = name.rpartition(".")
    importlib.import_module(package)
    for modname in sorted(m for m in sys.modules if m == "calibnb" or m.startswith("calibnb.")):
        if getattr(sys.modules[modname], attr, None) is not obj:
            continue
        comment = ModuleAnalyzer.for_module(modname).find_attr_docs().get(("", attr))
        if comment:
            lines[:] = list(comment)
            return
    raise ValueError(f"{name} is documented on an API page but has no '#:' comment where it is assigned")


def _skip_foreign_member(app, what, name, obj, skip, options):
    if what == "class" and not skip:
        module = getattr(obj, "__module__", None)
        if isinstance(module, str) and not module.startswith("calibnb"):
            return True
    return None


def _visit_hidden_cell(self, node):
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{html.escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{html.escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def _depart_hidden_cell(self, node):
    self.body.append("</details>\n")


def _accessible_visitors(app):
    from myst_nb.sphinx_ import HideCodeCellNode

    app.add_node(HideCodeCellNode, override=True, html=(_visit_hidden_cell, _depart_hidden_cell))
    app.add_node(nodes.citation, override=True, html=(_visit_citation, _depart_citation))


def _visit_citation(self, node):
    if not isinstance(node.previous_sibling(), type(node)):
        self.body.append('<div role="list" class="citation-list">\n')
    self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))


def _depart_citation(self, node):
    self.body.append("</div>\n")
    if not isinstance(node.next_node(descend=False, siblings=True), type(node)):
        self.body.append("</div>\n")


_TABLE = re.compile(r'<table\b.*?</table>', re.S)
_PRE = re.compile(r'(<span class="pre">)([^<]*)(</span>)')
#: Where a code name may break: after a dot or an underscore, and between the humps of a
#: camel-case name (``ProbabilitiesAs<wbr>LogitsWarning``).
_NAME_BREAK = re.compile(r"(?<=[._])(?=\w)|(?<=[a-z0-9])(?=[A-Z])")


def _breakable_table_names(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body or '<span class="pre">' not in body:
        return

    def names(table):
        return _PRE.sub(lambda m: m[1] + _NAME_BREAK.sub("<wbr>", m[2]) + m[3], table[0])

    context["body"] = _TABLE.sub(names, body)


#: A signature written one parameter a line (``python_maximum_signature_line_length``): Sphinx
#: lays the parameters out as the ``<dd>`` of a ``<dl>`` without any ``<dt>``.
_SIGNATURE_LIST = '<span class="sig-paren">(</span>\n\n<dl>'


def _presentational_signature_lists(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body and _SIGNATURE_LIST in body:
        context["body"] = body.replace(_SIGNATURE_LIST, _SIGNATURE_LIST[:-1] + ' role="presentation">')


def _default_colour_mode(app, pagename, templatename, context, doctree):
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


#: The longest page description (search engines show about this many characters).
DESCRIPTION_LENGTH = 160


#: TeX commands a description spells as characters; any other command loses its backslash.
_TEX_SYMBOLS = {"gamma": "γ", "lambda": "λ", "eta": "η", "mu": "μ", "sigma": "σ", "alpha": "α",
                "beta": "β", "phi": "φ", "le": "≤", "ge": "≥", "geq": "≥", "leq": "≤", "approx": "≈",
                "cdot": "·", "circ": "∘", "to": "→", "infty": "∞", "times": "×"}


def _plain_text(node) -> str:
    """A paragraph's text with its inline mathematics written plainly (``\\gamma`` as γ)."""
    parts = []
    for child in node.findall(lambda n: isinstance(n, (nodes.Text, nodes.math))):
        if isinstance(child, nodes.math):
            tex = re.sub(r"\\([A-Za-z]+)", lambda m: _TEX_SYMBOLS.get(m[1], m[1] + " "), child.astext())
            parts.append(re.sub(r"[{}]|\\[,;!]", "", tex))
        elif not any(isinstance(a, nodes.math) for a in _ancestors(child)):
            parts.append(child.astext())
    return "".join(parts)


def _ancestors(node):
    while node.parent is not None:
        node = node.parent
        yield node


def _page_description(app, pagename, templatename, context, doctree):
    if doctree is None or 'name="description"' in context.get("metatags", ""):
        return
    text = ""
    for paragraph in doctree.findall(nodes.paragraph):
        # the first paragraph of running text, its mathematics as plain text
        if isinstance(paragraph.parent, (nodes.section, nodes.document)):
            text = " ".join(_plain_text(paragraph).split())
            if len(text) >= 40:
                break
            text = ""
    if not text:
        text = html.unescape(re.sub(r"<[^>]+>", "", context.get("title") or "")) or app.config.project
    if len(text) > DESCRIPTION_LENGTH:
        text = text[:DESCRIPTION_LENGTH - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    context["metatags"] = context.get("metatags", "") + f'\n<meta name="description" content="{html.escape(text)}" />'


#: Abbreviations after which a summary sentence goes on (the papers' equations and figures).
CITATION_ABBREVIATIONS = ("Eq.", "Eqs.", "Fig.", "Figs.", "Alg.", "Sec.", "cf.")


def setup(app):
    from sphinx.ext import autosummary

    autosummary.WELL_KNOWN_ABBREVIATIONS = tuple(
        dict.fromkeys(autosummary.WELL_KNOWN_ABBREVIATIONS + CITATION_ABBREVIATIONS))
    app.connect("autodoc-skip-member", _skip_foreign_member)
    app.connect("autodoc-process-docstring", _constant_comment)
    app.connect("html-page-context", _drop_duplicate_inline_scripts)
    app.connect("html-page-context", _default_colour_mode)
    app.connect("html-page-context", _page_description)
    app.connect("html-page-context", _breakable_table_names)
    app.connect("html-page-context", _presentational_signature_lists)
    app.connect("builder-inited", _accessible_visitors)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_executed_notebook, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
