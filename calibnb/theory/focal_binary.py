"""The binary focal calibration map and the proper part of binary focal loss.

Komisarenko & Kull (2024), Proposition 2: binary focal loss
``L(q, 1) = -(1 - q)**gamma * log(q)`` is a proper loss ``L*`` composed with a fixed,
bijective, confidence-raising map ``p_hat``,

    p_hat(q) = 1 / (1 + ((1-q)/q)**gamma * ((1-q) - gamma*q*log q) / (q - gamma*(1-q)*log(1-q))).

``p_hat`` sends the focal-loss minimiser back to the true probability (Charoenphakdee et al.
2021), so its inverse is the focal-loss minimiser ``argmin_q eta*L(q,1) + (1-eta)*L(1-q,0)``.

Everything here works on the logit ``s = log(q / (1 - q))``, where the map reads

    logit p_hat(s) = (gamma + 1) * s + log1p(gamma * g(-s)) - log1p(gamma * g(s)),
    g(s) = q * (-log q) / (1 - q) = exp(s) * softplus(-s)  in (0, 1),

an odd, strictly increasing function of ``s`` that is exact in float64 for any finite logit
(no ``1 - q`` is ever formed). ``gamma`` may be any real number above -1 (the paper's Fig. 1
right also plots negative gamma); gamma = 0 is the identity.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import elementwise
from scipy.special import expit, log_expit, logit

from .._validation import check_real, to_numpy

__all__ = [
    "binary_focal_calibration",
    "binary_focal_calibration_logit",
    "inverse_binary_focal_calibration",
    "inverse_binary_focal_calibration_logit",
    "binary_focal_minimizer",
    "binary_focal_loss",
    "proper_binary_focal_loss",
]


def _check_gamma(gamma) -> float:
    return check_real(gamma, "gamma", minimum=-1.0, strict_minimum=True)


def _finite_array(x, name: str) -> np.ndarray:
    arr = to_numpy(x, name)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def _unit_interval(x, name: str) -> np.ndarray:
    arr = _finite_array(x, name)
    if ((arr < 0) | (arr > 1)).any():
        raise ValueError(f"{name} must lie in [0, 1]; got values in [{arr.min():g}, {arr.max():g}]")
    return arr


def _g(s: np.ndarray) -> np.ndarray:
    """``g(s) = q (-log q) / (1 - q)`` with ``q = sigmoid(s)``, stable for every finite ``s``."""
    s = np.asarray(s, dtype=np.float64)
    t = np.exp(-np.abs(s))  # in (0, 1]
    # s <= 0: exp(s) * log1p(exp(-s)) = t * (-s + log1p(t)); s > 0: log1p(t) / t (-> 1 as t -> 0)
    safe_t = np.where(t > 0, t, 1.0)
    positive = np.where(t > 0, np.log1p(safe_t) / safe_t, 1.0)
    negative = t * (np.abs(s) + np.log1p(t))
    return np.where(s > 0, positive, negative)


def binary_focal_calibration_logit(s, gamma: float) -> np.ndarray:
    """The binary focal calibration map on the logit scale: ``logit(p_hat(sigmoid(s)))``.

    Komisarenko & Kull (2024), Proposition 2, rewritten in logits (module docstring). Exact for
    every finite logit; ``s`` may be any real array (numpy or torch), returned as float64.
    """
    gamma = _check_gamma(gamma)
    s = _finite_array(s, "s")
    return (gamma + 1.0) * s + np.log1p(gamma * _g(-s)) - np.log1p(gamma * _g(s))


def binary_focal_calibration(q, gamma: float) -> np.ndarray:
    """The binary focal calibration map ``p_hat(q)`` of Komisarenko & Kull (2024), Prop. 2.

    ``q`` is the predicted probability of the positive class (any shape, values in [0, 1]);
    ``p_hat(0) = 0`` and ``p_hat(1) = 1``. For gamma > 0 the map raises confidence (a
    sigmoid-shaped curve through (1/2, 1/2)); for -1 < gamma < 0 it lowers it.
    """
    gamma = _check_gamma(gamma)
    q = _unit_interval(q, "q")
    if gamma == 0:
        return q
    with np.errstate(divide="ignore"):
        s = logit(q)
    inner = np.clip(s, -1e300, 1e300)  # q = 0 or 1 gives s = -inf / inf; their images are 0 / 1
    out = expit(binary_focal_calibration_logit(inner, gamma))
    return np.where(q == 0, 0.0, np.where(q == 1, 1.0, out))


def inverse_binary_focal_calibration_logit(t, gamma: float) -> np.ndarray:
    """The inverse of :func:`binary_focal_calibration_logit`: the ``s`` with ``F(s) = t``.

    No closed form exists (Komisarenko & Kull 2024, §3.2); the root is bracketed exactly, since
    ``|F(s) - (gamma + 1) s| < |log(gamma + 1)|``, and found with SciPy's elementwise
    Chandrupatla solver to float64 precision.
    """
    gamma = _check_gamma(gamma)
    t = _finite_array(t, "t")
    if gamma == 0:
        return t.copy()
    width = abs(np.log1p(gamma)) + 1.0
    lo, hi = (t - width) / (gamma + 1.0), (t + width) / (gamma + 1.0)
    res = elementwise.find_root(
        lambda s, target: binary_focal_calibration_logit(s, gamma) - target,
        (lo, hi),
        args=(t,),
        tolerances={"xatol": 1e-15, "xrtol": 4 * np.finfo(float).eps, "fatol": 0.0, "frtol": 0.0},
    )
    if not np.all(res.success):  # cannot happen for a valid bracket; never return garbage
        raise RuntimeError("root finding for the inverse focal calibration map did not converge")
    return np.asarray(res.x, dtype=np.float64)


def inverse_binary_focal_calibration(p, gamma: float) -> np.ndarray:
    """``p_hat^{-1}(p)``: the prediction that the focal calibration map sends to ``p``."""
    gamma = _check_gamma(gamma)
    p = _unit_interval(p, "p")
    with np.errstate(divide="ignore"):
        t = np.clip(logit(p), -1e300, 1e300)
    interior = (p > 0) & (p < 1)
    s = np.zeros_like(p)
    if interior.any():
        s[interior] = inverse_binary_focal_calibration_logit(t[interior], gamma)
    return np.where(p == 0, 0.0, np.where(p == 1, 1.0, expit(s)))


def binary_focal_minimizer(eta, gamma: float) -> np.ndarray:
    """The minimiser over ``q`` of the binary focal conditional risk at true probability ``eta``.

    ``argmin_q  eta * L(q, 1) + (1 - eta) * L(1 - q, 0)`` with ``L(q, 1) = -(1-q)^gamma log q``
    (Komisarenko & Kull 2024, §3.1: 80 positives in 100 give about 0.62 at gamma = 2). Setting the
    derivative to zero gives ``eta = p_hat(q)``, so the minimiser is ``p_hat^{-1}(eta)``; the risk
    is convex in ``q`` (their Proposition 1), so this stationary point is the unique minimiser.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    return inverse_binary_focal_calibration(_unit_interval(eta, "eta"), gamma)


def _log_q_pair(s: np.ndarray):
    """``(log q, log(1 - q))`` for ``q = sigmoid(s)``."""
    return log_expit(s), log_expit(-s)


def binary_focal_loss(s, y, gamma: float) -> np.ndarray:
    """Binary focal loss on a logit: ``-(1 - q_y)^gamma log q_y`` with ``q_1 = sigmoid(s)``.

    ``y`` holds 0/1 labels broadcastable with ``s``. Written in log space, finite for any finite
    logit (Lin et al. 2017; the binary case of Mukhoti et al. 2020).
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    s = _finite_array(s, "s")
    y = _labels01(y)
    log_q, log_1mq = _log_q_pair(np.where(y == 1, s, -s))
    return -np.exp(gamma * log_1mq) * log_q


def proper_binary_focal_loss(q, y, gamma: float) -> np.ndarray:
    """The proper part ``L*(q, y) = L(p_hat^{-1}(q), y)`` of binary focal loss (Prop. 2).

    ``q`` is the (calibrated) probability of the positive class, ``y`` 0/1 labels broadcastable
    with it. ``L*`` has no closed form; it is evaluated through the numerical inverse of the
    focal calibration map, on the logit scale (so ``q`` near 0 or 1 stays accurate). ``q = 0``
    or ``1`` gives ``inf`` on the wrong label, as for cross-entropy.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    q = _unit_interval(q, "q")
    y = _labels01(y)
    q, y = np.broadcast_arrays(q, y)
    with np.errstate(divide="ignore"):
        t = logit(q)
    wrong_end = ((q == 0) & (y == 1)) | ((q == 1) & (y == 0))
    right_end = ((q == 0) & (y == 0)) | ((q == 1) & (y == 1))
    interior = ~(wrong_end | right_end)
    out = np.where(wrong_end, np.inf, 0.0)
    if interior.any():
        s = inverse_binary_focal_calibration_logit(t[interior], gamma)
        out[interior] = binary_focal_loss(s, y[interior], gamma)
    return out


def _labels01(y) -> np.ndarray:
    arr = to_numpy(y, "y")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.bool_)):
        raise TypeError(f"y must hold 0/1 integer labels, got dtype {arr.dtype}")
    if ((arr != 0) & (arr != 1)).any():
        raise ValueError("y must hold binary labels 0 or 1")
    return arr.astype(np.int64)
