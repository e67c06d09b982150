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
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
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
