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

**Members from other libraries.** scikit-learn gives every estimator generated methods
(``set_fit_request``, ...) whose docstrings link into scikit-learn's own documentation;
:func:`_skip_foreign_member` leaves a class's members defined outside calibnb off its entry.
"""

import importlib
import shutil
import sys
from pathlib import Path

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


#: Abbreviations after which a summary sentence goes on (the papers' equations and figures).
CITATION_ABBREVIATIONS = ("Eq.", "Eqs.", "Fig.", "Figs.", "Alg.", "Sec.", "cf.")


def setup(app):
    from sphinx.ext import autosummary

    autosummary.WELL_KNOWN_ABBREVIATIONS = tuple(
        dict.fromkeys(autosummary.WELL_KNOWN_ABBREVIATIONS + CITATION_ABBREVIATIONS))
    app.connect("autodoc-skip-member", _skip_foreign_member)
    app.connect("autodoc-process-docstring", _constant_comment)
    app.connect("html-page-context", _drop_duplicate_inline_scripts)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_executed_notebook, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
