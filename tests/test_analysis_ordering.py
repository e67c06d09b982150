"""The papers' order of methods (calibnb.analysis.ordering)."""

import numpy as np
import pandas as pd
import pytest

from calibnb.analysis import FAMILIES, method_order
from calibnb.runs import label_methods


def test_methods_come_in_the_papers_order():
    table = pd.DataFrame({"loss": ["focal_calibration_loss", "focal_loss", "cross_entropy", "focal_loss"],
                          "gamma": [2, 3, np.nan, 1], "lam": [0.5, np.nan, np.nan, np.nan]})
    assert method_order(label_methods(table)["method"]) == ["CE", "FL-1", "FL-3", "FCL (γ=2, λ=0.5)"]


def test_every_family_has_its_place_and_unknown_ones_come_last():
    labels = ["FCL (γ=1, λ=1)", "Unknown", *reversed(FAMILIES[:4])]
    assert method_order(labels + labels) == [*FAMILIES[:4], "FCL (γ=1, λ=1)", "Unknown"]


@pytest.mark.parametrize("labels", ["FL-3", b"FL-3", 3])
def test_labels_must_be_an_iterable_of_labels(labels):
    with pytest.raises(TypeError, match="labels"):
        method_order(labels)


def test_a_label_must_be_a_string():
    with pytest.raises(TypeError, match="labels"):
        method_order(["FL-3", 3.0])
