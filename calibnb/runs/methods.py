"""Naming the methods of finished runs from their parameters.

The result chapters compare *methods*: a loss with its parameters (focal loss with γ = 3 is
"FL-3", dual focal loss with γ = 2 is "DFL (γ=2)", AdaFocal with ``base="dual"`` is
"AdaDualFocal"), grouped in families ("FL", "DFL", ...) so that a tuned loss is one table row
whatever setting the validation chose. :func:`label_methods` adds those names to a
:func:`calibnb.runs.load_results` table, so that the runs can be selected and read back by
method; ordering the methods and judging claims on them is the book's analysis, not the runs'.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from .._validation import check_table, check_type

_FIXED = {"cross_entropy": "CE", "brier_loss": "Brier", "mmce_loss": "MMCE",
          "label_smoothing_loss": "LS-0.05", "focal_loss_sd": "FLSD-53"}


def loss_params_of(value) -> dict:
    """A run's ``loss_params`` as a dict (a table column holds dicts, NaN, or YAML text)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        return yaml.safe_load(value) or {}
    return {}


def method_label(row) -> str:
    """The papers' name of a run's method, from its ``loss``, ``gamma``, ``lam``, ``loss_params``."""
    check_type(row, "row", (dict, pd.Series), "a table row (a mapping with 'loss')")
    if "loss" not in row:
        raise ValueError("row has no 'loss'")
    loss = row["loss"]
    gamma, lam = row.get("gamma"), row.get("lam")
    if loss == "adafocal":
        return "AdaDualFocal" if loss_params_of(row.get("loss_params")).get("base") == "dual" else "AdaFocal"
    if loss == "focal_loss":
        return f"FL-{gamma:g}"
    if loss == "inverse_focal_loss":
        return f"Inverse FL (γ={gamma:g})"
    if loss == "dual_focal_loss":
        return f"DFL (γ={gamma:g})"
    if loss == "focal_calibration_loss":
        return f"FCL (γ={gamma:g}, λ={lam:g})"
    if loss in _FIXED:
        return _FIXED[loss]
    raise ValueError(f"no method name for loss {loss!r}")


def method_family(label: str) -> str:
    """The family of a method label: ``"FL-3"`` → ``"FL"``, ``"DFL (γ=2)"`` → ``"DFL"``."""
    check_type(label, "label", str, "a method label (str)")
    return "FL" if label.startswith("FL-") else label.split(" (")[0]


def label_methods(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of a :func:`calibnb.runs.load_results` table with ``method`` and ``family`` columns.

    Parameter columns that no run has (``gamma``, ``lam``, ``loss_params``) are added as NaN, so
    that :func:`calibnb.runs.select_by_validation` can group by them.
    """
    table = check_table(table, "table", ("loss",)).copy()
    for column in ("gamma", "lam", "loss_params"):
        if column not in table.columns:
            table[column] = np.nan
    table["method"] = [method_label(row) for _, row in table.iterrows()]
    table["family"] = table["method"].map(method_family)
    return table
