"""The metrics in scikit-learn's argument order, ``metric(y_true, y_prob)``, and ready scorers.

calibnb's metrics take ``(probs, labels)``, as the papers write them; scikit-learn's
``make_scorer`` calls ``score_func(y_true, y_pred, **kwargs)``. The ``*_score`` functions are
the metrics in that order (errors name ``y_true`` and ``y_prob``); lower is better for all of
them. The ``*_SCORER`` objects are ``make_scorer(..., response_method="predict_proba",
greater_is_better=False)``: usable as ``scoring=`` in ``cross_val_score`` or ``GridSearchCV``
with any estimator that has ``predict_proba`` (their values are the negated metric, as
scikit-learn's ``neg_log_loss``). ``y_prob`` may be one column ``(N,)``: the probability of
class 1 of two.

Examples
--------
>>> import numpy as np
>>> from sklearn.model_selection import cross_val_score
>>> from calibnb.calibration import TemperatureScaling
>>> from calibnb.metrics.scorers import ECE_SCORER, ece_score
>>> rng = np.random.default_rng(0)
>>> logits = rng.normal(scale=3.0, size=(600, 3))
>>> labels = (logits / 2 + rng.gumbel(size=(600, 3))).argmax(axis=1)
>>> cross_val_score(TemperatureScaling("nll"), logits, labels, cv=3, scoring=ECE_SCORER).round(3)
array([-0.103, -0.095, -0.108])
>>> round(ece_score([1, 0, 1], [0.8, 0.3, 0.6]), 4)  # y_true first; one column: P(class 1)
0.3
"""

from __future__ import annotations

from sklearn.metrics import make_scorer

from calibnb._validation import check_probs_labels
from calibnb.metrics.binned import adaptive_ece, classwise_ece, ece
from calibnb.metrics.scores import brier_unchecked, nll_unchecked

__all__ = [
    "ADAPTIVE_ECE_SCORER",
    "BRIER_SCORER",
    "CLASSWISE_ECE_SCORER",
    "ECE_SCORER",
    "NLL_SCORER",
    "adaptive_ece_score",
    "brier_score",
    "classwise_ece_score",
    "ece_score",
    "nll_score",
]


def _checked(y_true, y_prob):
    return check_probs_labels(y_prob, y_true, names=("y_prob", "y_true"))


def ece_score(y_true, y_prob, n_bins: int = 15, binning: str = "width") -> float:
    """:func:`calibnb.metrics.ece` with scikit-learn's argument order.

    Examples
    --------
    >>> from calibnb.metrics.scorers import ece_score
    >>> round(ece_score([0, 2], [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]]), 4)
    0.425
    """
    p, y = _checked(y_true, y_prob)
    return ece(p, y, n_bins, binning)


def adaptive_ece_score(y_true, y_prob, n_bins: int = 15) -> float:
    """:func:`calibnb.metrics.adaptive_ece` with scikit-learn's argument order.

    Examples
    --------
    >>> from calibnb.metrics.scorers import adaptive_ece_score
    >>> round(adaptive_ece_score([0, 2], [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]]), 4)
    0.425
    """
    p, y = _checked(y_true, y_prob)
    return adaptive_ece(p, y, n_bins)


def classwise_ece_score(y_true, y_prob, n_bins: int = 15) -> float:
    """:func:`calibnb.metrics.classwise_ece` with scikit-learn's argument order.

    Examples
    --------
    >>> from calibnb.metrics.scorers import classwise_ece_score
    >>> round(classwise_ece_score([0, 2], [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]]), 4)
    0.3167
    """
    p, y = _checked(y_true, y_prob)
    return classwise_ece(p, y, n_bins)


def nll_score(y_true, y_prob) -> float:
    """:func:`calibnb.metrics.nll` with scikit-learn's argument order.

    Examples
    --------
    >>> from calibnb.metrics.scorers import nll_score
    >>> round(nll_score([0, 2], [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]]), 4)
    0.7033
    """
    return nll_unchecked(*_checked(y_true, y_prob))


def brier_score(y_true, y_prob) -> float:
    """:func:`calibnb.metrics.brier` (summed over the classes) with scikit-learn's argument order.

    Examples
    --------
    >>> from calibnb.metrics.scorers import brier_score
    >>> round(brier_score([0, 2], [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]]), 4)
    0.4375
    """
    return brier_unchecked(*_checked(y_true, y_prob))


def _scorer(metric):
    return make_scorer(metric, response_method="predict_proba", greater_is_better=False)


#: Scorers for ``scoring=``: the negated metric of ``predict_proba`` (higher is better).
ECE_SCORER = _scorer(ece_score)
ADAPTIVE_ECE_SCORER = _scorer(adaptive_ece_score)
CLASSWISE_ECE_SCORER = _scorer(classwise_ece_score)
NLL_SCORER = _scorer(nll_score)
BRIER_SCORER = _scorer(brier_score)
