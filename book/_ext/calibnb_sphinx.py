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
"""

import shutil
from pathlib import Path


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


def setup(app):
    app.connect("html-page-context", _drop_duplicate_inline_scripts)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_executed_notebook, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
