"""Method names of runs, from their parameters (calibnb.runs.methods)."""

import numpy as np
import pandas as pd
import pytest

from calibnb.analysis import FAMILIES
from calibnb.runs import label_methods, method_family, method_label


#: Runs of three losses, focal loss with two γ.
TABLE = pd.DataFrame({"loss": ["focal_calibration_loss", "focal_loss", "cross_entropy", "focal_loss"],
                      "gamma": [2, 3, np.nan, 1], "lam": [0.5, np.nan, np.nan, np.nan]})


@pytest.mark.parametrize(
    "row, label",
    [
        ({"loss": "cross_entropy"}, "CE"),
        ({"loss": "brier_loss"}, "Brier"),
        ({"loss": "mmce_loss"}, "MMCE"),
        ({"loss": "label_smoothing_loss"}, "LS-0.05"),
        ({"loss": "focal_loss_sd"}, "FLSD-53"),
        ({"loss": "focal_loss", "gamma": 3.0}, "FL-3"),
        ({"loss": "inverse_focal_loss", "gamma": 1}, "Inverse FL (γ=1)"),
        ({"loss": "dual_focal_loss", "gamma": 2.5}, "DFL (γ=2.5)"),
        ({"loss": "focal_calibration_loss", "gamma": 3, "lam": 1.5}, "FCL (γ=3, λ=1.5)"),
        ({"loss": "adafocal", "loss_params": float("nan")}, "AdaFocal"),
        ({"loss": "adafocal", "loss_params": {"base": "dual"}}, "AdaDualFocal"),
        ({"loss": "adafocal", "loss_params": "{base: dual}"}, "AdaDualFocal"),
    ],
)
def test_method_label_names_each_loss_as_the_papers_do(row, label):
    assert method_label(pd.Series(row)) == label
    assert method_family(label) in FAMILIES


def test_unknown_losses_have_no_name():
    with pytest.raises(ValueError, match="no method name for loss 'hinge'"):
        method_label(pd.Series({"loss": "hinge"}))


def test_label_methods_adds_method_and_family():
    labelled = label_methods(TABLE)
    assert "loss_params" in labelled.columns and "loss_params" not in TABLE.columns
    assert labelled["method"].tolist() == ["FCL (γ=2, λ=0.5)", "FL-3", "CE", "FL-1"]
    assert labelled["family"].tolist() == ["FCL", "FL", "CE", "FL"]
