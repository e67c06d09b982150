"""Reading a selected run back for the figures: run_of, adafocal_updates, histories, pooled_logits."""

import json

import numpy as np
import pandas as pd
import pytest

from calibnb.runs import adafocal_updates, histories, load_logits, pooled_logits, run_of, select_runs
from conftest import REPO


@pytest.fixture(scope="module")
def selected():
    return select_runs(REPO / "configs/fashion_mnist_cpu.yaml")


def test_run_of_takes_the_seed_or_warns_and_falls_back(selected):
    assert run_of(selected, "CE", 3)["seed"] == 3
    without_1 = selected[~((selected["method"] == "CE") & (selected["seed"] == 1))]
    with pytest.warns(UserWarning, match="no finished run with seed 1; using seed 2"):
        assert run_of(without_1, "CE", 1)["seed"] == 2
    with pytest.raises(ValueError, match="'CE-9' has no selected run"):
        run_of(selected, "CE-9", 1)


def test_adafocal_updates_are_arrays_with_empty_bins_as_nan(selected, tmp_path):
    u = adafocal_updates(run_of(selected, "AdaFocal", 1)["run_dir"])
    epochs = len(pd.read_csv(run_of(selected, "AdaFocal", 1)["run_dir"] + "/history.csv"))
    assert u["gammas"].shape == (epochs, 15) and u["edges"].shape == (epochs, 16)
    (tmp_path / "metrics.json").write_text(json.dumps({"adafocal_updates": [
        {"edges": [0, 0.5, 1], "gaps": [None, 0.1], "gammas": [1.0, 2.0]}]}))
    assert np.isnan(adafocal_updates(tmp_path)["gaps"][0, 0])
    with pytest.raises(ValueError, match="holds no adafocal_updates"):
        adafocal_updates(run_of(selected, "CE", 1)["run_dir"])


def test_histories_and_pooled_logits_read_every_seed(selected):
    ce = selected[selected["method"] == "CE"]
    curves = histories(ce)
    assert list(curves.columns) == [1, 2, 3, 4, 5] and curves.index.name == "epoch"
    logits, labels = pooled_logits(ce)
    first, first_labels = load_logits(f"{ce['run_dir'].iloc[0]}/logits_test.npz")
    assert len(labels) == 5 * len(first_labels)
    np.testing.assert_array_equal(logits[: len(first)], first)
    with pytest.raises(ValueError, match="runs is empty"):
        pooled_logits(ce.iloc[:0])
