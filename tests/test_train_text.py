"""The papers' text runs, end to end on the CPU at a tiny size.

Tiny files in each published format (``tests/data_files.py``: a 20 Newsgroups release of a few
messages, AG News CSVs, FinSen in calibnb's schema, a 3-word ``glove.6B.100d.txt``) go through
the training notebook as a user runs it (``python -m calibnb run nbs/train.md -p ...`` in a fresh
process), with the global-pooling CNN and each text recipe shrunk to two epochs: so every line a
text row of the sweeps executes has run once (the reader and tokeniser, the fixed 20 Newsgroups
validation set or the drawn one, the GloVe matrix, Adam, the mean-reduced loss, best-validation
selection, evaluation, temperature and focal temperature scaling, the artifacts).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from data_files import TEXT_WORDS, write_ag_news, write_finsen, write_glove, write_newsgroups
from train_runs import run_train_notebook

from calibnb.runs import load_logits



def run_notebook(tmp_path, params):
    out = run_train_notebook({**params, "data_root": str(tmp_path / "data"), "verify_data": False,
                              "model": "global_pooling_cnn", "epochs": 2, "progress": False},
                             tmp_path / "run", cwd=tmp_path)
    metrics = json.loads((out / "metrics.json").read_text())
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 3 and float(history[1].split(",")[1]) == 0.001  # two epochs at Adam's 1e-3
    assert not (out / "checkpoint.pt").exists()
    assert 0 < metrics["temperature"] <= 10 and set(metrics["test"]) == {"pre", "ts", "fts"}
    assert all(np.isfinite(metrics["test"][part]["ece"]) for part in ("pre", "ts", "fts"))
    return out, metrics


@pytest.mark.slow
def test_the_papers_20_newsgroups_run_executes_end_to_end(tmp_path):
    rng = np.random.default_rng(0)
    write_newsgroups(tmp_path / "data", rng, per_group=20)
    write_glove(tmp_path / "data", rng, words=TEXT_WORDS[:3])
    out, metrics = run_notebook(tmp_path, {"dataset": "20newsgroups", "recipe": "ghosh2022_20newsgroups",
                                           "loss": "adafocal", "val_size": 3})
    val_logits, _ = load_logits(out / "logits_val.npz")
    test_logits, test_labels = load_logits(out / "logits_test.npz")
    assert val_logits.shape == (3, 3) and test_logits.shape == (12, 3)  # 60 messages: 45/3/12
    assert "selected_epoch" not in metrics and len(metrics["gammas"]) == 2  # the last epoch's model


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["ag_news", "finsen"])
def test_the_fcl_text_runs_execute_end_to_end(tmp_path, dataset):
    rng = np.random.default_rng(1)
    write = {"ag_news": write_ag_news, "finsen": write_finsen}[dataset]
    write(tmp_path / "data", rng)
    write_glove(tmp_path / "data", rng, words=TEXT_WORDS[:3])
    out, metrics = run_notebook(tmp_path, {"dataset": dataset, "recipe": "liang2024_text",
                                           "loss": "focal_calibration_loss", "gamma": 4, "lam": 3, "val_size": 4})
    val_logits, _ = load_logits(out / "logits_val.npz")
    assert val_logits.shape[0] == 4 and metrics["selected_epoch"] in (1, 2)
