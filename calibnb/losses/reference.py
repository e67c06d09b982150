"""Every loss written like its paper's equation, differentiated by plain autograd.

This is what the chapters show: each function is the equation, a few lines long. The public
losses in :mod:`calibnb.losses` compute the same values and gradients with a fused, closed-form
backward (what training uses); ``tests/test_losses_reference.py`` holds each pair equal in
float64, and :func:`calibnb.losses.get_loss` builds the fast ones. Signatures are the public
ones, inputs and hyper-parameters are checked the same way (the first lines of each), and
``log p`` comes from ``log_softmax``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from calibnb._validation import check_choice, check_real
from calibnb.losses._common import check_logits_targets, check_reduction, reduce
from calibnb.losses.dual_focal import check_dual
from calibnb.losses.focal import FLSD53_GAMMAS, FLSD_THRESHOLDS, check_schedule

__all__ = [
    "adafocal_loss", "brier_loss", "cross_entropy", "dual_focal_loss", "dual_focal_loss_sd",
    "dual_probability", "focal_calibration_loss", "focal_loss", "focal_loss_sd",
    "inverse_focal_loss", "label_smoothing_loss", "mmce_loss",
]


def _log_softmax(logits: Tensor, targets: Tensor, reduction: str) -> tuple[Tensor, Tensor]:
    """Checked inputs as ``(log p (N, K), log p_t (N,))``."""
    check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    log_p = F.log_softmax(logits, dim=1)
    return log_p, log_p.gather(1, targets[:, None]).squeeze(1)


def _schedule(statistic: Tensor, gammas, thresholds) -> Tensor:
    """FLSD's γ: ``gammas[i]`` where ``thresholds[i-1] <= statistic < thresholds[i]`` (no gradient)."""
    gammas, thresholds = check_schedule(gammas, thresholds)
    bin_of = torch.bucketize(statistic.detach(), statistic.new_tensor(thresholds), right=True)
    return statistic.new_tensor(gammas)[bin_of]


def cross_entropy(logits: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
    """Cross-entropy ``L_CE = -log p_t``."""
    _, log_p_t = _log_softmax(logits, targets, reduction)
    return reduce(-log_p_t, reduction)


def focal_loss(logits: Tensor, targets: Tensor, gamma: float = 3.0, reduction: str = "mean") -> Tensor:
    """Focal loss ``L_FL = -(1 - p_t)^γ log p_t`` (Mukhoti et al. 2020, Eq. 1; Lin et al. 2017)."""
    gamma = check_real(gamma, "gamma", minimum=0.0)
    _, log_p_t = _log_softmax(logits, targets, reduction)
    return reduce(-(1 - log_p_t.exp()) ** gamma * log_p_t, reduction)


def focal_loss_sd(logits: Tensor, targets: Tensor, gammas=FLSD53_GAMMAS, thresholds=FLSD_THRESHOLDS,
                  reduction: str = "mean") -> Tensor:
    """Sample-dependent focal loss (Mukhoti et al. 2020, §5): focal loss whose γ is read off each
    sample's own ``p_t``; FLSD-53 is γ = 5 for ``p_t < 0.2``, else 3."""
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_t = log_p_t.exp()
    return reduce(-(1 - p_t) ** _schedule(p_t, gammas, thresholds) * log_p_t, reduction)


def inverse_focal_loss(logits: Tensor, targets: Tensor, gamma: float = 1.0, reduction: str = "mean") -> Tensor:
    """Inverse focal loss ``-(1 + p_t)^γ log p_t`` (Ghosh et al. 2022, Eq. 1)."""
    gamma = check_real(gamma, "gamma", minimum=0.0)
    _, log_p_t = _log_softmax(logits, targets, reduction)
    return reduce(-(1 + log_p_t.exp()) ** gamma * log_p_t, reduction)


def dual_probability(logits: Tensor, targets: Tensor, dual: str | float = "largest") -> Tensor:
    """``p_j`` of Tao et al. (2023), Eq. 3 and Table 4: from the probabilities strictly below
    ``p_t``, ranked by their logits (softmax keeps that order; ties by class index): the largest
    (DFL), the 2nd or 3rd, the mean of the top 2 or 3 (missing ones count as 0), or the mean of
    all; a number is a fixed ``p_j``."""
    if not isinstance(check_dual(dual), str):
        return logits.new_full(targets.shape, float(dual))
    p = F.softmax(logits, dim=1)
    below = logits < logits.gather(1, targets[:, None])  # softmax keeps the order of the logits
    if dual == "mean_all":
        return (p * below).sum(1) / below.sum(1).clamp_min(1)
    order = torch.where(below, logits, -torch.inf).sort(dim=1, descending=True, stable=True).indices
    ranked = torch.where(below.gather(1, order), p.gather(1, order), 0)  # p below p_t, largest first
    ranked = F.pad(ranked, (0, 3))  # fewer than 3 classes below: the missing ones are 0
    rank = {"largest": 1, "second": 2, "third": 3, "mean_top2": 2, "mean_top3": 3}[dual]
    return ranked[:, :rank].mean(1) if dual.startswith("mean") else ranked[:, rank - 1]


def dual_focal_loss(logits: Tensor, targets: Tensor, gamma: float = 5.0, dual: str | float = "largest",
                    reduction: str = "mean") -> Tensor:
    """Dual focal loss ``L_DFL = -(1 - p_t + p_j)^γ log p_t`` (Tao et al. 2023, Eq. 3), gradient
    through ``p_j`` as in the authors' code."""
    gamma = check_real(gamma, "gamma", minimum=0.0)
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_j = dual_probability(logits.to(log_p_t.dtype), targets, dual)
    return reduce(-(1 - log_p_t.exp() + p_j) ** gamma * log_p_t, reduction)


def dual_focal_loss_sd(logits: Tensor, targets: Tensor, gammas=FLSD53_GAMMAS, thresholds=FLSD_THRESHOLDS,
                       reduction: str = "mean") -> Tensor:
    """DFL-SD (the authors' ``dual_focal_loss_sd.py``): DFL with FLSD's γ schedule read off
    ``p_t - p_j``."""
    _, log_p_t = _log_softmax(logits, targets, reduction)
    margin = log_p_t.exp() - dual_probability(logits.to(log_p_t.dtype), targets)
    return reduce(-(1 - margin) ** _schedule(margin, gammas, thresholds) * log_p_t, reduction)


def brier_loss(logits: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
    """Brier score ``sum_k (p_k - y_k)^2`` with ``y`` the one-hot label (Brier 1950)."""
    log_p, _ = _log_softmax(logits, targets, reduction)
    y = F.one_hot(targets.long(), log_p.shape[1])
    return reduce(((log_p.exp() - y) ** 2).sum(1), reduction)


def focal_calibration_loss(logits: Tensor, targets: Tensor, gamma: float = 2.0, lam: float = 0.5,
                           norm: str = "l2", reduction: str = "mean") -> Tensor:
    """Focal calibration loss ``L_FCL = L_FL + λ ||p - y||^2`` (FCL paper, §3; squared L2 as in the
    authors' ``FCLUngated``); ``norm="l1"`` is the L1 distance of its Appendix A.15 ablation."""
    gamma, lam = check_real(gamma, "gamma", minimum=0.0), check_real(lam, "lam", minimum=0.0)
    norm = check_choice(norm, "norm", ("l1", "l2"))
    log_p, log_p_t = _log_softmax(logits, targets, reduction)
    distance = (log_p.exp() - F.one_hot(targets.long(), log_p.shape[1])).abs()
    distance = (distance**2).sum(1) if norm == "l2" else distance.sum(1)
    return reduce(-(1 - log_p_t.exp()) ** gamma * log_p_t + lam * distance, reduction)


def label_smoothing_loss(logits: Tensor, targets: Tensor, alpha: float = 0.05, reduction: str = "mean") -> Tensor:
    """Cross-entropy against the smoothed label ``s = (1 - α) y + α / K`` (Müller et al. 2019):
    ``-sum_k s_k log p_k``."""
    alpha = check_real(alpha, "alpha", minimum=0.0, maximum=1.0)
    log_p, _ = _log_softmax(logits, targets, reduction)
    k = log_p.shape[1]
    smoothed = (1 - alpha) * F.one_hot(targets.long(), k).to(log_p.dtype) + alpha / k
    return reduce(-(smoothed * log_p).sum(1), reduction)


def mmce_loss(logits: Tensor, targets: Tensor, lam: float = 2.0, width: float = 0.4,
              reduction: str = "mean") -> Tensor:
    """Cross-entropy plus ``λ MMCE_w`` of the batch (Kumar et al. 2018, weighted MMCE):
    ``MMCE_w^2 = v^T K v`` with the Laplacian kernel ``K_ij = exp(-|r_i - r_j| / width)`` on the
    top-label confidences ``r`` and ``v_i = (1 - r_i) / m`` for the ``m`` correct predictions,
    ``-r_i / n`` for the ``n`` wrong ones; 0 when either group is empty."""
    lam, width = check_real(lam, "lam", minimum=0.0), check_real(width, "width", minimum=0.01)
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


def adafocal_loss(logits: Tensor, targets: Tensor, gammas, edges, base: str = "focal",
                  reduction: str = "mean") -> Tensor:
    """AdaFocal (Ghosh et al. 2022, Eq. 5) given the bin γ's: each sample takes the γ of the bin
    ``[edges[b], edges[b+1])`` its ``d`` falls in, ``d = p_t`` (``base="dual"``: ``p_t - p_j``);
    ``-(1 - d)^γ log p_t`` for γ ≥ 0, inverse focal ``-(1 + d)^|γ| log p_t`` for γ < 0."""
    base = check_choice(base, "base", ("focal", "dual"))
    _, log_p_t = _log_softmax(logits, targets, reduction)
    p_j = dual_probability(logits.to(log_p_t.dtype), targets) if base == "dual" else 0
    d = log_p_t.exp() - p_j
    gammas, edges = (torch.as_tensor(x, dtype=d.dtype, device=d.device) for x in (gammas, edges))
    gamma = gammas[torch.bucketize(d.detach(), edges[1:-1], right=True)]
    return reduce(-torch.where(gamma < 0, 1 + d, 1 - d) ** gamma.abs() * log_p_t, reduction)
