"""Every CPU chapter executes from a fresh kernel without error (the book build does the same
through jupyter-cache; this test runs them in isolation, so an error names its notebook)."""

from fnmatch import fnmatch

import jupytext
import nbclient
import pytest
import yaml

from book_pages import REPO, notebook_chapters

EXCLUDED = yaml.safe_load((REPO / "_config.yml").read_text())["execute"]["exclude_patterns"]
CPU_CHAPTERS = [p for p in notebook_chapters() if not any(fnmatch(str(p), pat) for pat in EXCLUDED)]


@pytest.mark.notebooks
@pytest.mark.parametrize("path", CPU_CHAPTERS, ids=lambda p: p.name)
def test_chapter_executes(path, tmp_path):
    notebook = jupytext.read(path)
    timeout = notebook.metadata["mystnb"]["execution_timeout"]  # the book build's own limit
    client = nbclient.NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors


@pytest.mark.parametrize("path", CPU_CHAPTERS, ids=lambda p: p.name)
def test_each_executed_chapter_has_its_own_cell_time_limit(path):
    """A hung cell fails the build after its chapter's limit, with the chapter's name, instead of
    after a limit fitted to the slowest chapter. Limits are about four times the chapter's whole
    run on 2 cores, so no single cell comes near them unless it hangs."""
    timeout = jupytext.read(path).metadata.get("mystnb", {}).get("execution_timeout")
    assert isinstance(timeout, int) and 60 <= timeout <= 180, timeout
