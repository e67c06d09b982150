"""What a reader downloads from the built book: each chapter's source and executed notebook, and a
training notebook that papermill runs as it is. Run after ``make book`` (``make test-browser``)."""

import re

import papermill
import pytest

from book_pages import REPO, notebook_chapters

HTML = REPO / "_build" / "html"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", autouse=True)
def built_book():
    if not (HTML / "index.html").is_file():
        pytest.fail("run `make book` first: _build/html/index.html is missing")


@pytest.mark.parametrize("path", notebook_chapters(), ids=lambda p: p.name)
def test_every_chapter_offers_its_source_and_executed_notebook(path):
    page = path.relative_to(REPO).with_suffix("")
    html = (HTML / page).with_suffix(".html").read_text()
    links = set(re.findall(r'href="\.\./_sources/([^"]+)"', html))
    assert links == {f"{page}.md", f"{page}.ipynb"}
    for link in links:
        assert (HTML / "_sources" / link).is_file(), link


def test_the_downloaded_training_notebook_runs_under_papermill(tmp_path):
    """The reader's path: download train.ipynb, run it with their own parameters."""
    downloaded = HTML / "_sources" / "nbs" / "train.ipynb"
    out = tmp_path / "train-run.ipynb"
    params = {"epochs": 1, "train_size": 2000, "val_size": 1000, "progress": False,
              "loss": "focal_loss", "gamma": 2, "out_dir": str(tmp_path / "run")}
    notebook = papermill.execute_notebook(str(downloaded), str(out), parameters=params,
                                          kernel_name="python3", progress_bar=False,
                                          cwd=str(REPO / "nbs"))
    injected = [cell for cell in notebook.cells if "injected-parameters" in cell.metadata.get("tags", [])]
    assert len(injected) == 1 and "loss = \"focal_loss\"" in injected[0].source
    assert (tmp_path / "run" / "metrics.json").is_file()
