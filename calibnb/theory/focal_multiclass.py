"""The inverse of the multiclass focal calibration map and the proper part of focal loss.

Komisarenko & Kull (2024), Proposition 4: ``p_hat_j(q) ∝ w(q_j)`` with

    log w(v) = log v - gamma log(1 - v) - log(1 + gamma x(v)),   x(v) = -v log v / (1 - v),

strictly increasing in ``v`` (the map itself is :func:`calibnb.calibration.focal_calibration_map`).
Its inverse has no closed form. With ``u = logit(v)`` every term of ``log w`` is exact in float64
(:func:`~calibnb.theory.focal_binary` has ``x = g(u)``), so inverting is two nested monotone
root searches (SciPy's elementwise bracketing and Chandrupatla solvers): given the top class's
logit, each other class solves ``log w(u_j) = log w(u_top) + log(p_j / p_top)``, and the top
logit is chosen so that the row sums to 1.

The proper part of focal loss is ``L*(q, y) = FL(p_hat^{-1}(q), y)`` (Proposition 4): a proper
loss whose conditional risk is minimised at the true distribution.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import elementwise
from scipy.special import log_expit

from .._validation import check_labels, check_probs, check_real, to_numpy
from .focal_binary import _g, proper_binary_focal_loss

__all__ = ["log_focal_weight", "inverse_focal_calibration_map", "proper_focal_loss", "proper_focal_loss_all"]

_TOL = {"xatol": 1e-15, "xrtol": 4 * np.finfo(float).eps, "fatol": 0.0, "frtol": 0.0}


def log_focal_weight(u, gamma: float) -> np.ndarray:
    """``log w`` of Eq. (1) at the logit ``u = log(v / (1 - v))`` of a probability ``v``."""
    gamma = check_real(gamma, "gamma", minimum=-1.0, strict_minimum=True)
    u = np.asarray(u, dtype=np.float64)
    return log_expit(u) - gamma * log_expit(-u) - np.log1p(gamma * _g(u))


def _inverse_weight(target: np.ndarray, upper: np.ndarray, gamma: float) -> np.ndarray:
    """The logit ``u <= upper`` with ``log_focal_weight(u) = target`` (elementwise).

    Requires ``target <= log_focal_weight(upper)``; the bracket grows leftwards from ``upper``.
    """
    f = lambda u, t: log_focal_weight(u, gamma) - t  # noqa: E731
    br = elementwise.bracket_root(f, upper - 1.0, upper, xmax=upper, args=(target,))
    res = elementwise.find_root(f, br.bracket, args=(target,), tolerances=_TOL)
    if not (np.all(br.success) and np.all(res.success)):
        raise RuntimeError("root finding for the inverse focal calibration map did not converge")
    return np.asarray(res.x, dtype=np.float64)


def _inverse_logits(p: np.ndarray, gamma: float) -> np.ndarray:
    """Logits ``u`` of ``q = p_hat^{-1}(p)`` for strictly positive rows ``p`` of shape (N, K).

    The outer unknown is the logit ``u_top`` of the top class: it fixes the multiplier, every
    other class solves ``log w(u_j) = log w(u_top) + log p_j - log p_top`` with ``u_j <= u_top``,
    and ``u_top`` is found where the row sums to 1 (at ``q_top = 1/K`` the sum is at most 1).
    """
    log_rel = np.log(p) - np.log(p.max(axis=1, keepdims=True))  # <= 0
    cols = tuple(log_rel.T)

    def others(u_top, *rel):
        level = log_focal_weight(u_top, gamma)
        return [_inverse_weight(level + r, u_top, gamma) for r in rel]

    def excess(u_top, *rel):
        return sum(np.exp(log_expit(u)) for u in others(u_top, *rel)) - 1.0

    start = np.full(p.shape[0], -np.log(p.shape[1] - 1.0))  # logit(1/K)
    br = elementwise.bracket_root(excess, start, start + 1.0, xmin=start, args=cols)
    res = elementwise.find_root(excess, br.bracket, args=cols, tolerances=_TOL)
    if not (np.all(br.success) and np.all(res.success)):
        raise RuntimeError("root finding for the inverse focal calibration map did not converge")
    return np.stack(others(res.x, *cols), axis=1)


def inverse_focal_calibration_map(probs, gamma: float) -> np.ndarray:
    """``p_hat^{-1}``: the prediction ``q`` that the focal calibration map sends to ``probs``.

    ``probs`` is ``(N, K)`` with strictly positive rows (a zero has no preimage inside the
    simplex). Inverse of :func:`calibnb.calibration.focal_calibration_map` for ``gamma >= 0``
    (for negative gamma ``w`` is not monotone near 1 and the inverse is not unique);
    also the multiclass focal-loss risk minimiser at true distribution ``probs`` (Charoenphakdee
    et al. 2021), since ``p_hat`` maps that minimiser back to the truth.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    p = check_probs(probs, "probs")
    if (p <= 0).any():
        raise ValueError("probs must be strictly positive to be inverted by the focal map")
    p = p / p.sum(axis=1, keepdims=True)
    if gamma == 0:
        return p
    q = np.exp(log_expit(_inverse_logits(p, gamma)))
    return q / q.sum(axis=1, keepdims=True)


def proper_focal_loss(q, y, gamma: float) -> np.ndarray:
    """The proper part ``L*(q, y) = FL(p_hat^{-1}(q), y)`` of focal loss, per sample.

    Komisarenko & Kull (2024): Proposition 2 (binary) and Proposition 4 (multiclass).

    - Binary: ``q`` 1-D (or any shape) probabilities of the positive class, ``y`` 0/1 labels
      broadcastable with it (see :func:`~calibnb.theory.focal_binary.proper_binary_focal_loss`).
    - Multiclass: ``q`` an ``(N, K)`` probability matrix with strictly positive rows and ``y``
      integer labels ``(N,)``.

    Returns float64 losses, one per sample. ``gamma = 0`` gives cross-entropy.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    arr = to_numpy(q, "q")
    if arr.ndim != 2:
        return proper_binary_focal_loss(arr, y, gamma)
    p = check_probs(arr, "q")
    if (p <= 0).any():
        raise ValueError("q must be strictly positive (its preimage must lie inside the simplex)")
    labels = check_labels(y, p.shape[0], p.shape[1], "y")
    return proper_focal_loss_all(p, gamma)[np.arange(p.shape[0]), labels]


def proper_focal_loss_all(probs, gamma: float) -> np.ndarray:
    """``L*(q, y)`` for every row of ``probs`` ``(N, K)`` and every label ``y``: shape (N, K)."""
    gamma = check_real(gamma, "gamma", minimum=0.0)
    p = check_probs(probs, "probs")
    if (p <= 0).any():
        raise ValueError("probs must be strictly positive (its preimage must lie inside the simplex)")
    u = _inverse_logits(p / p.sum(axis=1, keepdims=True), gamma)
    return -np.exp(gamma * log_expit(-u)) * log_expit(u)
