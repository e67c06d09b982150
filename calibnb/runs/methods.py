"""Naming the methods of finished runs, and the paired rule by which the book judges a claim.

The result chapters compare *methods*: a loss with its parameters (focal loss with γ = 3 is
"FL-3", dual focal loss with γ = 2 is "DFL (γ=2)", AdaFocal with ``base="dual"`` is
"AdaDualFocal"), in the order of the papers' tables (DFL's Table 1, extended with the methods of
the other papers). :func:`label_methods` adds those names to a :func:`load_results` table, and
:func:`paired_verdict` says whether per-seed differences support a claim.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import yaml

from .._validation import check_table, check_type

#: Method families in the papers' column order.
FAMILIES = ("CE", "Brier", "MMCE", "LS-0.05", "FL", "Inverse FL", "FLSD-53", "AdaFocal", "DFL",
            "AdaDualFocal", "FCL")

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


def method_order(labels) -> list[str]:
    """Distinct labels in the papers' order (families as :data:`FAMILIES`, then by name)."""
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise TypeError(f"labels must be an iterable of method labels, got {type(labels).__name__}")
    labels = [check_type(m, "labels", str, "method labels (str)") for m in labels]
    rank = {family: i for i, family in enumerate(FAMILIES)}
    return sorted(set(labels), key=lambda m: (rank.get(method_family(m), len(rank)), m))


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


#: Verdicts of :func:`paired_verdict`.
VERDICTS = ("holds", "does not hold", "inconclusive", "inconclusive (too few runs)")


def paired_verdict(differences, inclusive: bool = False, agree: float = 0.8,
                   min_runs: int = 3) -> tuple[str, int, int]:
    """Whether paired differences ``a - b`` (one per seed) support the claim "a is lower than b".

    ``"holds"`` when the mean difference is below 0 (at most 0 with ``inclusive``, for claims of
    the form "a ≤ b") and at least a fraction ``agree`` of the pairs are (they need not all be);
    ``"does not hold"`` when the mean is above 0 and that many pairs are; otherwise
    ``"inconclusive"``, and ``"inconclusive (too few runs)"`` with fewer than ``min_runs`` pairs.
    NaN differences are dropped. Returns ``(verdict, pairs that agree with the claim, pairs)``.
    With 5 seeds and exchangeable methods, "holds" arises by chance with probability 6/32.
    """
    d = pd.Series(differences, dtype=float).dropna()
    n = len(d)
    supporting = int((d <= 0).sum() if inclusive else (d < 0).sum())
    if n < min_runs:
        return VERDICTS[3], supporting, n
    need = math.ceil(agree * n)
    mean = d.mean()
    if (mean <= 0 if inclusive else mean < 0) and supporting >= need:
        return VERDICTS[0], supporting, n
    if mean > 0 and int((d > 0).sum()) >= need:
        return VERDICTS[1], supporting, n
    return VERDICTS[2], supporting, n


def verdict_agreement(first: str, second: str) -> str:
    """How two regimes' verdicts on one claim relate (each a :data:`VERDICTS` entry or ``"n/a"``).

    ``"confirmed in both"``, ``"contradicted in both"``, ``"conflict"`` (holds in one, does not
    in the other), ``"inconclusive in both"`` (either kind of inconclusive), ``"decided in one
    regime only"``, or ``"n/a in one regime"`` when a regime cannot judge the claim.
    """
    for name, verdict in (("first", first), ("second", second)):
        if verdict not in (*VERDICTS, "n/a"):
            raise ValueError(f"{name} must be one of {[*VERDICTS, 'n/a']}, got {verdict!r}")
    pair = {first, second}
    if "n/a" in pair:
        return "n/a in one regime"
    if pair == {"holds"}:
        return "confirmed in both"
    if pair == {"does not hold"}:
        return "contradicted in both"
    if pair == {"holds", "does not hold"}:
        return "conflict"
    if first.startswith("inconclusive") and second.startswith("inconclusive"):
        return "inconclusive in both"
    return "decided in one regime only"
