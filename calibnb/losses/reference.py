"""Every loss written like its paper's equation, with plain autograd.

This is what the chapters show: each function is the equation, a few
lines long, and fits the book's code column. The public losses in
:mod:`calibnb.losses` compute the same values and gradients with a fused,
closed-form backward (what training uses);
``tests/test_losses_reference.py`` holds each pair equal in float64.
Signatures are the public ones, their defaults written out for the
reader (``tests/test_loss_declarations.py`` holds them equal to the
declarations); inputs and hyper-parameters are checked against the
loss's declaration (:mod:`calibnb.losses.declarations`), as the public
forms do; ``log p`` comes from ``log_softmax``, never from
``log(softmax)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from calibnb.losses._common import (
    check_logits_targets, check_reduction, lookup, reduce,
)
from calibnb.losses.declarations import (
    ADAFOCAL, DUAL_FOCAL, DUAL_FOCAL_SD, FCL, FOCAL, FOCAL_SD, INVERSE_FOCAL,
    LABEL_SMOOTHING, MMCE,
)
from calibnb.losses.focal import scheduled_gamma

__all__ = [
    "adafocal_loss", "brier_loss", "cross_entropy", "dual_focal_loss",
    "dual_focal_loss_sd", "dual_probability", "focal_calibration_loss",
    "focal_loss", "focal_loss_sd", "inverse_focal_loss",
    "label_smoothing_loss", "mmce_loss",
]


def _log_softmax(logits: Tensor, targets: Tensor, reduction: str):
    """Checked inputs as ``(log p (N, K), log p_t (N,))``."""
    check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    log_p = F.log_softmax(logits, dim=1)
    return log_p, log_p.gather(1, targets[:, None]).squeeze(1)


def cross_entropy(logits: Tensor, targets: Tensor,
                  reduction: str = "mean") -> Tensor:
    """Cross-entropy ``L_CE = -log p_t``."""
    _, log_p_t = _log_softmax(logits, targets, reduction)
    return reduce(-log_p_t, reduction)


def focal_loss(logits: Tensor, targets: Tensor, gamma: float = 3.0,
               reduction: str = "mean") -> Tensor:
    """Focal loss ``L_FL = -(1 - p_t)^γ log p_t`` (Mukhoti et al. 2020,
    Eq. 1; Lin et al. 2017)."""
    [gamma] = FOCAL.checked(gamma=gamma)
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_t = log_p_t.exp()
    return reduce(-(1 - p_t) ** gamma * log_p_t, reduction)


def focal_loss_sd(logits: Tensor, targets: Tensor,
                  gammas=(5.0, 3.0, 3.0), thresholds=(0.2, 0.5),
                  reduction: str = "mean") -> Tensor:
    """Sample-dependent focal loss (Mukhoti et al. 2020, §5): γ is read
    off each sample's own ``p_t``; FLSD-53 is γ = 5 for ``p_t < 0.2``,
    else 3."""
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_t = log_p_t.exp()
    gamma = scheduled_gamma(p_t, *FOCAL_SD.checked(
        gammas=gammas, thresholds=thresholds))  # no gradient through γ
    return reduce(-(1 - p_t) ** gamma * log_p_t, reduction)


def inverse_focal_loss(logits: Tensor, targets: Tensor,
                       gamma: float = 1.0,
                       reduction: str = "mean") -> Tensor:
    """Inverse focal loss ``-(1 + p_t)^γ log p_t`` (Ghosh et al. 2022,
    Eq. 1)."""
    [gamma] = INVERSE_FOCAL.checked(gamma=gamma)
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_t = log_p_t.exp()
    return reduce(-(1 + p_t) ** gamma * log_p_t, reduction)


def dual_probability(logits: Tensor, targets: Tensor,
                     dual: str | float = "largest") -> Tensor:
    """``p_j`` of Tao et al. (2023), Eq. 3 and Table 4. The classes
    strictly below the target, ranked by their logits (softmax keeps
    that order; ties by class index): the largest probability (DFL), the
    2nd or 3rd, the mean of the top 2 or 3 (missing ones count as 0), or
    the mean of all. A number is a fixed ``p_j``."""
    [dual] = DUAL_FOCAL.checked(dual=dual)
    if not isinstance(dual, str):
        return logits.new_full(targets.shape, float(dual))
    p = F.softmax(logits, dim=1)
    below = logits < logits.gather(1, targets[:, None])
    if dual == "mean_all":
        return (p * below).sum(1) / below.sum(1).clamp_min(1)
    masked = torch.where(below, logits, -torch.inf)
    order = masked.sort(dim=1, descending=True, stable=True).indices
    ranked = torch.where(below.gather(1, order), p.gather(1, order), 0)
    ranked = F.pad(ranked, (0, 3))  # fewer than 3 below: 0 for the rest
    rank = {"largest": 1, "second": 2, "third": 3,
            "mean_top2": 2, "mean_top3": 3}[dual]
    if dual.startswith("mean"):
        return ranked[:, :rank].mean(1)
    return ranked[:, rank - 1]


def dual_focal_loss(logits: Tensor, targets: Tensor, gamma: float = 5.0,
                    dual: str | float = "largest",
                    reduction: str = "mean") -> Tensor:
    """Dual focal loss ``L_DFL = -(1 - p_t + p_j)^γ log p_t`` (Tao et al.
    2023, Eq. 3), gradient through ``p_j`` as in the authors' code."""
    gamma, dual = DUAL_FOCAL.checked(gamma=gamma, dual=dual)
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_j = dual_probability(logits.to(log_p_t.dtype), targets, dual)
    base = 1 - log_p_t.exp() + p_j
    return reduce(-base ** gamma * log_p_t, reduction)


def dual_focal_loss_sd(logits: Tensor, targets: Tensor,
                       gammas=(5.0, 3.0, 3.0), thresholds=(0.2, 0.5),
                       reduction: str = "mean") -> Tensor:
    """DFL-SD (the authors' ``dual_focal_loss_sd.py``): DFL with FLSD's
    γ schedule read off ``p_t - p_j``."""
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_j = dual_probability(logits.to(log_p_t.dtype), targets)
    margin = log_p_t.exp() - p_j
    gamma = scheduled_gamma(margin, *DUAL_FOCAL_SD.checked(
        gammas=gammas, thresholds=thresholds))  # no gradient through γ
    return reduce(-(1 - margin) ** gamma * log_p_t, reduction)


def brier_loss(logits: Tensor, targets: Tensor,
               reduction: str = "mean") -> Tensor:
    """Brier score ``sum_k (p_k - y_k)^2``, ``y`` the one-hot label
    (Brier 1950)."""
    log_p, _ = _log_softmax(logits, targets, reduction)
    y = F.one_hot(targets.long(), log_p.shape[1])
    return reduce(((log_p.exp() - y) ** 2).sum(1), reduction)


def focal_calibration_loss(logits: Tensor, targets: Tensor,
                           gamma: float = 2.0, lam: float = 0.5,
                           norm: str = "l2",
                           reduction: str = "mean") -> Tensor:
    """Focal calibration loss ``L_FCL = L_FL + λ ||p - y||^2`` (FCL
    paper, §3; squared L2 as in the authors' ``FCLUngated``);
    ``norm="l1"`` is the L1 distance of its Appendix A.15 ablation."""
    gamma, lam, norm = FCL.checked(gamma=gamma, lam=lam, norm=norm)
    log_p, log_p_t = _log_softmax(logits, targets, reduction)
    y = F.one_hot(targets.long(), log_p.shape[1])
    gap = (log_p.exp() - y).abs()
    distance = (gap ** 2).sum(1) if norm == "l2" else gap.sum(1)
    focal = -(1 - log_p_t.exp()) ** gamma * log_p_t
    return reduce(focal + lam * distance, reduction)


def label_smoothing_loss(logits: Tensor, targets: Tensor,
                         alpha: float = 0.05,
                         reduction: str = "mean") -> Tensor:
    """Cross-entropy against the smoothed label ``s = (1 - α) y + α / K``
    (Müller et al. 2019): ``-sum_k s_k log p_k``."""
    [alpha] = LABEL_SMOOTHING.checked(alpha=alpha)
    log_p, _ = _log_softmax(logits, targets, reduction)
    k = log_p.shape[1]
    y = F.one_hot(targets.long(), k).to(log_p.dtype)
    smoothed = (1 - alpha) * y + alpha / k
    return reduce(-(smoothed * log_p).sum(1), reduction)


def mmce_loss(logits: Tensor, targets: Tensor, lam: float = 2.0,
              width: float = 0.4, reduction: str = "mean") -> Tensor:
    """Cross-entropy plus ``λ MMCE_w`` of the batch (Kumar et al. 2018):
    ``MMCE_w^2 = v^T K v``, Laplacian kernel ``K_ij = exp(-|r_i - r_j| /
    width)`` on the top-label confidences ``r``, ``v_i = (1 - r_i) / m``
    for the ``m`` correct predictions and ``-r_i / n`` for the ``n``
    wrong ones; 0 when either group is empty."""
    lam, width = MMCE.checked(lam=lam, width=width)
    log_p, log_p_t = _log_softmax(logits, targets, reduction)
    log_r, predicted = log_p.max(dim=1)
    r, correct = log_r.exp(), predicted == targets
    m, n = int(correct.sum()), int((~correct).sum())
    mmce = log_r.new_zeros(())
    if m and n:
        v = torch.where(correct, (1 - r) / m, -r / n)
        kernel = torch.exp(-(r[:, None] - r[None, :]).abs() / width)
        mmce = torch.sqrt(v @ kernel @ v + 1e-10)
    return reduce(-log_p_t + lam * mmce, reduction)


def adafocal_loss(logits: Tensor, targets: Tensor, gammas, edges,
                  base: str = "focal", reduction: str = "mean") -> Tensor:
    """AdaFocal (Ghosh et al. 2022, Eq. 5) given the bins' γ: a sample
    takes the γ of the bin ``[edges[b], edges[b+1])`` its ``d`` falls in,
    ``d = p_t`` (``base="dual"``: ``p_t - p_j``); ``-(1 - d)^γ log p_t``
    for γ ≥ 0, inverse focal ``-(1 + d)^|γ| log p_t`` for γ < 0."""
    [base] = ADAFOCAL.checked(base=base)
    _, log_p_t = _log_softmax(logits, targets, reduction)
    z = logits.to(log_p_t.dtype)
    p_j = dual_probability(z, targets) if base == "dual" else 0
    d = log_p_t.exp() - p_j
    table = torch.as_tensor(gammas, dtype=d.dtype, device=d.device)
    edges = torch.as_tensor(edges, dtype=d.dtype, device=d.device)
    gamma = lookup(table, d, edges[1:-1])  # no gradient through γ
    base_d = torch.where(gamma < 0, 1 + d, 1 - d)
    return reduce(-base_d ** gamma.abs() * log_p_t, reduction)
