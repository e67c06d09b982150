"""The papers' Tiny-ImageNet run, end to end on the CPU at a tiny size.

A tree of a few JPEGs in the published ``tiny-imagenet-200/`` layout (written by
``tests/data_files.py``) goes through the training notebook as a user runs it (``python -m
calibnb run nbs/train.md -p ...`` in a fresh process, papermill executing the notebook), with the
reference's 64×64 ResNet-50 and AdaFocal's Tiny-ImageNet recipe shrunk to two epochs: so every
line a Tiny-ImageNet row of the sweeps executes has run once (the JPEG reader, the fixed
450-499 validation split, the 64×64 augmentation, the 2×2-pooled net, the batch of 64, the
best-validation selection, checkpointing, evaluation, temperature and focal temperature scaling,
the artifacts).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from data_files import write_tiny_imagenet
from train_runs import run_train_notebook

from calibnb.runs import load_logits



@pytest.mark.slow
def test_the_papers_tiny_imagenet_run_executes_end_to_end(tmp_path):
    numbers = (0, 1, 2, 3, 4, 5, 450, 451)
    folder, wnids = write_tiny_imagenet(tmp_path / "data", np.random.default_rng(0), n_classes=3,
                                        train_numbers=numbers, val_per_class=2)
    out = tmp_path / "run"
    params = {"dataset": "tiny_imagenet", "data_root": str(tmp_path / "data"), "verify_data": False,
              "model": "resnet50", "recipe": "ghosh2022_tiny_imagenet", "loss": "adafocal", "epochs": 2,
              "val_size": 6, "progress": False}
    run_train_notebook(params, out, cwd=tmp_path)

    metrics = json.loads((out / "metrics.json").read_text())
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 3 and history[0].startswith("epoch,lr,train_loss")  # two epochs
    assert float(history[1].split(",")[1]) == 0.1  # the recipe's learning rate
    assert metrics["selected_epoch"] in (1, 2) and len(metrics["gammas"]) == 2
    val_logits, val_labels = load_logits(out / "logits_val.npz")
    test_logits, test_labels = load_logits(out / "logits_test.npz")
    # the validation set is each class's images 450 and 451; the test set the annotated ones
    assert val_logits.shape == (6, 3) and test_logits.shape == (6, 3)
    assert sorted(val_labels.tolist()) == [0, 0, 1, 1, 2, 2]
    lines = (folder / "val" / "val_annotations.txt").read_text().splitlines()
    assert test_labels.tolist() == [wnids.index(line.split("\t")[1]) for line in lines]
    assert not (out / "checkpoint.pt").exists()  # removed once the run finished
    assert 0 < metrics["temperature"] <= 10 and set(metrics["test"]) == {"pre", "ts", "fts"}
    assert all(np.isfinite(metrics["test"][part]["ece"]) for part in ("pre", "ts", "fts"))
