"""Sphinx tweaks for the calibnb book.

Under Jupyter Book 1.0.4, sphinx-togglebutton and sphinx-thebe register their inline
configuration scripts twice (``var togglebuttonSelector``, ``const THEBE_JS_URL``), which makes
every page raise "Identifier 'THEBE_JS_URL' has already been declared" in the browser. We keep
the first of any inline scripts with the same body.
"""


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


def setup(app):
    app.connect("html-page-context", _drop_duplicate_inline_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
