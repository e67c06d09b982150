"""Proper scores and accuracy: negative log-likelihood, Brier score, error rate.

Each reads the probabilities once, a block of rows at a time
(:func:`calibnb.metrics.rowpass.row_statistics`); torch tensors are reduced on their device and
only the mean comes back. ``nll_unchecked``/``brier_unchecked`` are the whole-matrix forms of
the equations, used by ``calibration_report`` and held equal to the streamed ones by the tests.
"""

from __future__ import annotations

import numpy as np

from calibnb.metrics.rowpass import row_statistics

#: ``nll`` clips the true-class probability below at float64's machine epsilon, as
#: ``sklearn.metrics.log_loss`` does for float64 input, so a probability of exactly 0 costs
#: -log(2.2e-16) = 36.04 instead of infinity.
NLL_EPS = float(np.finfo(np.float64).eps)


def nll(probs, labels) -> float:
    """Mean negative log-likelihood -1/N sum_i log p_{i, y_i} (natural log; clip at ``NLL_EPS``).

    Examples
    --------
    >>> from calibnb.metrics import nll
    >>> round(nll([[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]], [0, 2]), 4)  # -(log 0.7 + log 0.35) / 2
    0.7033

    A true class given probability 0 costs -log(``NLL_EPS``), not infinity:

    >>> round(nll([[1.0, 0.0]], [1]), 2)
    36.04
    """
    _, _, p_true, _ = row_statistics(probs, labels, true_class=True)
    return nll_from_true_class(p_true)


def brier(probs, labels) -> float:
    """Brier score (Brier 1950): 1/N sum_i sum_k (p_ik - 1[y_i = k])^2, in [0, 2].

    Examples
    --------
    >>> from calibnb.metrics import brier
    >>> round(brier([[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]], [0, 2]), 4)
    0.4375
    >>> brier([[0.0, 1.0]], [0])  # the worst prediction
    2.0
    """
    _, _, p_true, sum_sq = row_statistics(probs, labels, true_class=True, squares=True)
    return float((sum_sq - 2.0 * p_true + 1.0).mean())


def error_rate(probs, labels) -> float:
    """Fraction of samples whose argmax (first maximal class on ties) is not the label.

    Examples
    --------
    >>> from calibnb.metrics import error_rate
    >>> error_rate([[0.7, 0.2, 0.1], [0.1, 0.55, 0.35], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], [0, 2, 1, 2])
    0.5
    """
    _, correct, _, _ = row_statistics(probs, labels)
    return float(1.0 - correct.mean())


def nll_unchecked(p: np.ndarray, y: np.ndarray) -> float:
    """``nll`` on validated float64 probabilities and int64 labels."""
    return nll_from_true_class(p[np.arange(p.shape[0]), y])


def nll_from_true_class(p_true) -> float:
    """-mean log max(p_y, ``NLL_EPS``) of the true-class probabilities (numpy or torch)."""
    if isinstance(p_true, np.ndarray):
        return float(-np.log(np.maximum(p_true, NLL_EPS)).mean())
    return float(-p_true.clamp(min=NLL_EPS).log().mean())


def brier_unchecked(p: np.ndarray, y: np.ndarray) -> float:
    """``brier`` on validated inputs: sum_k p_k^2 - 2 p_y + 1 per row, one pass over ``p``."""
    p_true = p[np.arange(p.shape[0]), y]
    return float((np.einsum("ij,ij->i", p, p) - 2.0 * p_true + 1.0).mean())
