"""The papers' CIFAR run, end to end on the CPU at a tiny size (issue 15, item 4).

A few hundred random images in the real CIFAR-10 python-pickle format go through the training
notebook exactly as a user runs it (``python -m calibnb run nbs/train.md -p ...`` in a fresh
process, papermill executing the notebook), with the papers' ResNet-50 and the ``mukhoti2020``
recipe shrunk to one epoch by parameters: so every line the papers' run executes has run once
(the pickle reader, the 45k/5k split rule, augmentation, the model, the schedule, the summed
loss and gradient clipping, checkpointing, evaluation, temperature and focal temperature
scaling, the artifacts).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from data_files import write_cifar10
from train_runs import run_train_notebook

from calibnb.runs import load_logits



@pytest.mark.slow
@pytest.mark.parametrize("loss", ["dual_focal_loss"])
def test_the_papers_cifar_run_executes_end_to_end(tmp_path, loss):
    folder, _, labels = write_cifar10(tmp_path / "data", np.random.default_rng(0), per_batch=60, n_test=100)
    out = tmp_path / "run"
    params = {"dataset": "cifar10", "data_root": str(tmp_path / "data"), "verify_data": False,
              "model": "resnet50", "recipe": "mukhoti2020", "loss": loss, "gamma": 5, "epochs": 1,
              "val_size": 50, "progress": False}
    run_train_notebook(params, out, cwd=tmp_path)

    metrics = json.loads((out / "metrics.json").read_text())
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 2 and history[0].startswith("epoch,lr,train_loss")  # one epoch
    assert float(history[1].split(",")[1]) == 0.1  # the recipe's learning rate
    val_logits, val_labels = load_logits(out / "logits_val.npz")
    test_logits, test_labels = load_logits(out / "logits_test.npz")
    assert val_logits.shape == (50, 10) and test_logits.shape == (100, 10)  # 300 - 50 train, 100 test
    np.testing.assert_array_equal(test_labels, labels["test_batch"])
    assert not (out / "checkpoint.pt").exists()  # removed once the run finished
    assert 0 < metrics["temperature"] <= 10 and set(metrics["test"]) == {"pre", "ts", "fts"}
    assert all(np.isfinite(metrics["test"][part]["ece"]) for part in ("pre", "ts", "fts"))
