"""AdaFocal's ImageNet run, end to end on the CPU at a tiny size.

A tree of a few JPEGs in torchvision's ImageFolder layout (``train/<wnid>/``, ``val/<wnid>/``,
written by ``tests/data_files.py``) goes through the training notebook as a user runs it
(``python -m calibnb run nbs/train.md -p ...`` in a fresh process, papermill executing the
notebook), with torchvision's ImageNet ResNet-50 at 224×224 and AdaFocal's ImageNet recipe shrunk
to two epochs and a batch of 4: so every line an ImageNet row of the sweep executes has run once
(the folder index, the streaming mode's DataLoader workers with the random-resized crops, the
split of the published validation images, the mean loss without clipping, the last model,
checkpointing, evaluation, temperature and focal temperature scaling, the artifacts).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from data_files import write_imagenet
from train_runs import run_train_notebook

from calibnb.data import train_val_split
from calibnb.runs import load_logits



@pytest.mark.slow
def test_the_papers_imagenet_run_executes_end_to_end(tmp_path):
    write_imagenet(tmp_path / "data" / "imagenet", np.random.default_rng(0), train_per_class=3, val_per_class=2)
    out = tmp_path / "run"
    params = {"dataset": "imagenet", "data_root": str(tmp_path / "data"), "verify_data": False,
              "model": "resnet50", "recipe": "ghosh2022_imagenet", "loss": "adafocal", "epochs": 2,
              "batch_size": 4, "val_size": 3, "workers": 2, "progress": False}
    run_train_notebook(params, out, cwd=tmp_path)

    metrics = json.loads((out / "metrics.json").read_text())
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 3 and history[0].startswith("epoch,lr,train_loss")  # two epochs
    assert float(history[1].split(",")[1]) == 0.01  # the recipe's learning rate
    assert "selected_epoch" not in metrics and len(metrics["gammas"]) == 2  # the last model
    val_logits, val_labels = load_logits(out / "logits_val.npz")
    test_logits, test_labels = load_logits(out / "logits_test.npz")
    # the published validation images (2 a class, in ImageFolder order) split 3 / 3
    test_idx, val_idx = train_val_split(6, 3, 1)
    labels = np.array([0, 0, 1, 1, 2, 2])
    assert val_logits.shape == (3, 3) and test_logits.shape == (3, 3)
    assert val_labels.tolist() == labels[val_idx].tolist() and test_labels.tolist() == labels[test_idx].tolist()
    assert not (out / "checkpoint.pt").exists()  # removed once the run finished
    assert 0 < metrics["temperature"] <= 10 and set(metrics["test"]) == {"pre", "ts", "fts"}
    assert all(np.isfinite(metrics["test"][part]["ece"]) for part in ("pre", "ts", "fts"))
