"""Conditional risks on the probability simplex (Komisarenko & Kull 2024, §3.3, Fig. 4).

The conditional risk of a loss ``L`` at true distribution ``eta`` is ``R(eta, q) = sum_i
eta_i L(q, i)``; a loss is proper when ``q = eta`` minimises it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from .._validation import check_choice, check_probs, check_real, to_numpy
from .focal_multiclass import proper_focal_loss_all

__all__ = ["conditional_risk", "risk_minimizer"]

RISKS = ("brier", "log", "focal", "proper_focal")


def conditional_risk(q, eta, loss: str, gamma: float = 0.0) -> np.ndarray:
    """``sum_i eta_i L(q, i)`` for each row of ``q`` ``(N, K)`` at one true distribution ``eta``.

    ``loss``: ``"brier"`` (``sum_k (q_k - y_k)^2``, Brier 1950), ``"log"`` (cross-entropy),
    ``"focal"`` (``-(1 - q_y)^gamma log q_y``, Lin et al. 2017) or ``"proper_focal"`` (its proper
    part ``L*`` of Komisarenko & Kull 2024, Prop. 4, through the inverse focal map; rows of ``q``
    must then be strictly positive).
    """
    check_choice(loss, "loss", RISKS)
    gamma = check_real(gamma, "gamma", minimum=0.0)
    q = check_probs(q, "q")
    eta = check_probs(np.atleast_2d(to_numpy(eta, "eta")), "eta")
    if eta.shape != (1, q.shape[1]):
        raise ValueError(f"eta must be one distribution over {q.shape[1]} classes, got shape {eta.shape}")
    eta = eta[0]
    if loss == "brier":
        return np.sum(q**2, axis=1) - 2 * q @ eta + 1.0
    if loss == "log":
        with np.errstate(divide="ignore"):
            return -(xlogy(eta, q)).sum(axis=1)
    if loss == "focal":
        with np.errstate(divide="ignore"):
            return -((1.0 - q) ** gamma * xlogy(eta, q)).sum(axis=1)
    return proper_focal_loss_all(q, gamma) @ eta


#: Losses whose per-sample value depends on the rest of the batch or on training state.
_NOT_POINTWISE = ("mmce_loss", "adafocal", "calfocal")


def risk_minimizer(loss: str, eta, **params) -> np.ndarray:
    """The prediction ``q`` on the simplex that minimises ``sum_i eta_i * loss(q, i)``.

    ``loss`` is a name of :func:`calibnb.losses.get_loss` (``"cross_entropy"``, ``"brier_loss"``,
    ``"focal_loss"``, ``"dual_focal_loss"``, ``"focal_calibration_loss"``, ...) and ``params`` its
    hyper-parameters (``gamma=3``, ``lam=1.5``, ...). The loss is evaluated by calibnb's own
    torch implementation on logits ``z`` (``q = softmax(z)``, last logit fixed at 0) in float64,
    and the conditional risk is minimised with L-BFGS-B using autograd gradients, starting at
    ``z = log eta``. ``eta`` is one distribution ``(K,)``; classes with ``eta_i = 0`` are driven
    towards 0 until the optimiser stops, so keep ``eta`` strictly positive for exact answers.

    Dual focal loss' risk jumps where two probabilities tie (its dual is *strictly* smaller);
    a gradient method follows the smooth branch of the starting order and does not visit ties.
    """
    import torch
    from scipy.optimize import minimize

    from ..losses import get_loss

    check_choice(loss, "loss", [name for name in _loss_names() if name not in _NOT_POINTWISE])
    eta = check_probs(np.atleast_2d(to_numpy(eta, "eta")), "eta")
    if eta.shape[0] != 1:
        raise ValueError(f"eta must be one distribution, got shape {eta.shape}")
    eta = eta[0] / eta[0].sum()
    k = eta.size
    module = get_loss(loss, reduction="none", **params)
    targets = torch.arange(k)
    weights = torch.as_tensor(eta, dtype=torch.float64)

    def risk_and_grad(free: np.ndarray):
        head = torch.as_tensor(free, dtype=torch.float64).requires_grad_(True)
        z = torch.cat([head, torch.zeros(1, dtype=torch.float64)])
        value = (weights * module(z.expand(k, k), targets)).sum()
        value.backward()
        return float(value.detach()), head.grad.numpy().astype(np.float64)

    start = np.log(np.clip(eta, 1e-12, None))
    res = minimize(risk_and_grad, start[:-1] - start[-1], jac=True, method="L-BFGS-B",
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000})
    z = np.append(res.x, 0.0)
    q = np.exp(z - z.max())
    return q / q.sum()


def _loss_names():
    from ..losses import LOSSES

    return sorted(LOSSES)
