"""The conditional-risk analysis of dual focal loss (Tao et al. 2023, §4 and Appendix A–B).

At a minimiser ``q*`` of the conditional risk ``sum_i eta_i (1 - q_i + f(q_i))^gamma (-log q_i)``
the Lagrange conditions (Eq. 7–9) give ``eta_i ∝ q*_i / phi(q*_i)`` with

    phi(v) = (1 - v + f(v))^gamma + (f'(v) - 1) gamma (1 - v + f(v))^(gamma-1) v log v.

Focal loss is ``f = 0``: :func:`fl_phi`. Dual focal loss freezes the dual probability
``f(v) = C`` (the largest probability below the target's, ``f' = 0`` for the target class):
:func:`dfl_phi`. Whether a minimiser is under- or over-confident depends on where ``phi`` of its
top probability sits relative to the others (Eq. 11), hence the landmarks of Lemma 1 and the
paper's Fig. 1 (:func:`phi_landmarks`).

For focal loss ``v / phi(v)`` is exactly the weight of Komisarenko & Kull's focal calibration
map, so Eq. 9 *is* that map (:func:`calibnb.calibration.focal_calibration_map`).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import elementwise, minimize_scalar
from scipy.special import logit, xlogy

from .._validation import check_probs, check_real, to_numpy
from .focal_binary import _g

__all__ = ["fl_phi", "dfl_phi", "dfl_phi_slope", "phi_landmarks", "dual_focal_risk"]


def _probabilities(v) -> np.ndarray:
    arr = np.asarray(to_numpy(v, "v"), dtype=np.float64)
    if not np.isfinite(arr).all() or ((arr < 0) | (arr > 1)).any():
        raise ValueError("v must hold probabilities in [0, 1]")
    return arr


def fl_phi(v, gamma: float) -> np.ndarray:
    """``phi`` of focal loss (Tao et al. 2023, Eq. 7 with ``f = 0``; Charoenphakdee et al. 2021).

    ``phi(v) = (1 - v)^gamma - gamma (1 - v)^(gamma - 1) v log v``, evaluated as
    ``(1 - v)^gamma (1 + gamma x(v))`` with ``x(v) = -v log v / (1 - v)`` so that ``v = 1`` gives
    the limit 0 (for gamma > 0) instead of ``0 * inf``.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    v = _probabilities(v)
    with np.errstate(divide="ignore"):
        x = np.where(v == 1, 1.0, np.where(v == 0, 0.0, _g(logit(np.clip(v, 1e-300, 1 - 1e-16)))))
    return (1.0 - v) ** gamma * (1.0 + gamma * x)


def dfl_phi(v, gamma: float, C: float) -> np.ndarray:
    """``phi`` of dual focal loss for a class other than the dual one (Tao et al. 2023, Eq. 7, 12).

    ``phi(v) = (1 - v + C)^gamma - gamma (1 - v + C)^(gamma - 1) v log v`` with the dual
    probability frozen at ``C`` in ``[0, 1)``. Lemma 1: ``phi(0) = (1 + C)^gamma``,
    ``phi(1) = C^gamma``. (For the dual class itself ``f' = 1`` and ``phi = 1``.)
    ``C = 0`` is focal loss' :func:`fl_phi`.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    C = check_real(C, "C", minimum=0.0, maximum=1.0)
    if C == 0:
        return fl_phi(v, gamma)
    v = _probabilities(v)
    base = 1.0 - v + C
    return base ** (gamma - 1.0) * (base - gamma * xlogy(v, v))


def dfl_phi_slope(v, gamma: float, C: float) -> np.ndarray:
    """``d phi / d v`` of :func:`dfl_phi` (Tao et al. 2023, Appendix B, Eq. 25), for ``0 < v < 1``.

    ``gamma (1 - v + C)^(gamma - 2) s(v)`` with ``s(v) = 2(v - 1 - C) + gamma v log v -
    (1 + C) log v``: the sign of ``s`` is the sign of the slope (checked against finite
    differences in the tests).
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    C = check_real(C, "C", minimum=0.0, maximum=1.0)
    v = _probabilities(v)
    if ((v <= 0) | (v >= 1)).any():
        raise ValueError("v must lie strictly inside (0, 1) for the slope")
    log_v = np.log(v)
    s = 2.0 * (v - 1.0 - C) + gamma * v * log_v - (1.0 + C) * log_v
    return gamma * (1.0 - v + C) ** (gamma - 2.0) * s


def phi_landmarks(gamma: float, C: float = 0.0) -> dict[str, float]:
    """The points of Tao et al.'s Fig. 1 / Lemma 1 for ``phi`` with dual probability ``C``.

    ``v_m``: the unique maximiser of ``phi`` on (0, 1) (the over-confident region is
    ``(0, v_m]``); ``v_prime``: the ``v > v_m`` with ``phi(v) = phi(0) = (1 + C)^gamma``;
    ``v_uc``: the ``v > v_m`` with ``phi(v) = 1``, where DFL's under-confident region starts
    (equal to ``v_prime`` for focal loss, ``C = 0``). Found by bounded scalar search and bracketed
    root finding to float64 precision. Requires ``gamma > 0``.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0, strict_minimum=True)
    C = check_real(C, "C", minimum=0.0, maximum=1.0)
    if C >= 1:
        raise ValueError("C must be < 1 (it is a probability below the target's)")
    eps = 1e-12
    peak = minimize_scalar(
        lambda v: -dfl_phi(v, gamma, C), bounds=(eps, 1 - eps), method="bounded", options={"xatol": 1e-13}
    )
    v_m = float(peak.x)
    tol = {"xatol": 0.0, "xrtol": 4 * np.finfo(float).eps, "fatol": 0.0, "frtol": 0.0}

    def level(target: float) -> float:
        res = elementwise.find_root(
            lambda v: dfl_phi(np.clip(v, 0, 1), gamma, C) - target, (v_m, 1.0), tolerances=tol
        )
        return float(res.x)

    return {"v_m": v_m, "v_prime": level((1.0 + C) ** gamma), "v_uc": level(1.0)}


def dual_focal_risk(q, eta, gamma: float) -> np.ndarray:
    """Conditional risk of dual focal loss, Tao et al. (2023) Eq. 4, for each row of ``q``.

    ``sum_i eta_i (1 - q_i + q_j(i))^gamma (-log q_i)`` with ``q_j(i) = max{q_c : q_c < q_i}``
    (strict; 0 when nothing is below, as in the authors' code). ``q`` and ``eta`` are ``(N, K)``
    probability matrices (``eta`` may be one row, broadcast).

    The risk *jumps down* where two entries of ``q`` tie (a tied class loses its dual, which must
    be strictly below it), so its minimiser can sit on a tie; minimise it without gradients.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    q = check_probs(q, "q")
    eta = check_probs(np.atleast_2d(to_numpy(eta, "eta")), "eta")
    below = np.where(q[:, None, :] < q[:, :, None], q[:, None, :], 0.0).max(axis=2)
    with np.errstate(divide="ignore"):
        nll = -np.log(q)
    return np.sum(np.where(eta > 0, eta * (1.0 - q + below) ** gamma * nll, 0.0), axis=1)
