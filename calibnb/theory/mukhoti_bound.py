"""Mukhoti et al. (2020)'s lower bound: focal loss >= KL(q || p) - gamma * H(p).

For a target distribution ``q`` (one-hot for a labelled sample) and a prediction ``p``,

    L_FL(p, q) = -sum_i q_i (1 - p_i)^gamma log p_i  >=  KL(q || p) - gamma * H(p),

so minimising focal loss minimises a KL divergence while *raising* the entropy of the
prediction: the regularisation that curbs over-confidence (Mukhoti et al. 2020, §4, Eq. 1).
The usual derivation uses ``(1 - p)^gamma >= 1 - gamma p``, which holds for ``gamma >= 1``;
:func:`mukhoti_gap` lets the book check the bound for any ``gamma >= 0``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr, rel_entr

from .._validation import check_probs, check_real

__all__ = ["focal_loss_on_simplex", "mukhoti_bound", "mukhoti_gap"]


def _pair(probs, target):
    p = check_probs(probs, "probs")
    q = check_probs(target, "target")
    if q.shape != p.shape:
        raise ValueError(f"target has shape {q.shape} but probs has shape {p.shape}")
    return p, q


def focal_loss_on_simplex(probs, target, gamma: float) -> np.ndarray:
    """``-sum_i q_i (1 - p_i)^gamma log p_i`` per row (``inf`` where ``q_i > 0 = p_i``)."""
    gamma = check_real(gamma, "gamma", minimum=0.0)
    p, q = _pair(probs, target)
    with np.errstate(divide="ignore"):
        return -np.sum(np.where(q > 0, q * (1.0 - p) ** gamma * np.log(p), 0.0), axis=1)


def mukhoti_bound(probs, target, gamma: float) -> np.ndarray:
    """The right-hand side ``KL(q || p) - gamma * H(p)`` of Mukhoti et al. (2020), per row."""
    gamma = check_real(gamma, "gamma", minimum=0.0)
    p, q = _pair(probs, target)
    return rel_entr(q, p).sum(axis=1) - gamma * entr(p).sum(axis=1)


def mukhoti_gap(probs, target, gamma: float) -> np.ndarray:
    """``L_FL - (KL(q || p) - gamma H(p))`` per row: non-negative where the bound holds.

    Computed as ``sum_i q_i (1 - (1 - p_i)^gamma) log p_i + H(q) + gamma H(p)`` so that the
    (possibly huge) cross-entropy terms cancel analytically rather than in floating point.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    p, q = _pair(probs, target)
    with np.errstate(divide="ignore", invalid="ignore"):
        shrink = -np.expm1(gamma * np.log1p(-np.minimum(p, 1.0)))  # 1 - (1 - p)^gamma, exact near 0
        weighted = np.where(q > 0, q * shrink * np.log(p), 0.0)
    return weighted.sum(axis=1) + entr(q).sum(axis=1) + gamma * entr(p).sum(axis=1)
