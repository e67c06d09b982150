"""The training notebook's figure of AdaFocal's γ (``nbs/train.md``, ``fig-train-gammas``) as a user
runs the notebook with papermill parameters (``python -m calibnb run nbs/train.md -p ...``).

A run that learns a γ per bin draws its own; any other run (the book's page trains with
cross-entropy) draws the shipped AdaFocal run of the book's Fashion-MNIST sweep, so the published
page never shows a numbered figure without its picture; a copy of the notebook without the book's
results beside it draws its own γ, or nothing, and still runs.
"""

import json
import shutil

import pytest

from conftest import REPO
from train_runs import run_train_notebook

#: A run of a few seconds on the CPU: the chapter's data and network, smaller.
TINY = {"train_size": 600, "val_size": 400, "epochs": 2, "model_params": {"hidden": [32]}, "progress": False}


def gamma_figure_images(run_folder) -> int:
    """How many images the executed notebook's ``fig-train-gammas`` cell drew."""
    notebook = json.loads((run_folder / "train.ipynb").read_text())
    (cell,) = [c for c in notebook["cells"]
               if c.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name") == "fig-train-gammas"]
    return sum("image/png" in output.get("data", {}) for output in cell["outputs"])


@pytest.fixture
def notebook_alone(tmp_path):
    """A copy of the notebook without the book's configs/ and results/ beside it."""
    alone = tmp_path / "alone" / "nbs" / "train.md"
    alone.parent.mkdir(parents=True)
    shutil.copy(REPO / "nbs" / "train.md", alone)
    return alone


@pytest.mark.slow
def test_the_books_page_draws_the_shipped_adafocal_run(tmp_path):
    out = run_train_notebook(TINY, tmp_path / "ce", cwd=REPO)  # cross-entropy learns no γ
    assert not json.loads((out / "metrics.json").read_text())["gammas"]
    assert gamma_figure_images(out) == 1  # the shipped run's


@pytest.mark.slow
def test_an_adafocal_run_draws_its_own_gammas(tmp_path, notebook_alone):
    out = run_train_notebook({**TINY, "loss": "adafocal"}, tmp_path / "ada", cwd=tmp_path, notebook=notebook_alone)
    assert json.loads((out / "metrics.json").read_text())["gammas"]
    assert gamma_figure_images(out) == 1  # no shipped run to draw: the image is the run's own γ


@pytest.mark.slow
def test_without_the_books_results_a_run_without_gammas_draws_nothing(tmp_path, notebook_alone):
    out = run_train_notebook(TINY, tmp_path / "ce", cwd=tmp_path, notebook=notebook_alone)
    assert gamma_figure_images(out) == 0
