"""The baselines the papers train against: Brier loss, label smoothing and MMCE.

Mukhoti et al. (2020) compare focal loss with Brier loss (Brier 1950), label smoothing
(Müller et al. 2019) and the weighted MMCE of Kumar et al. (2018); the later papers reuse
their table.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from calibnb._validation import check_real
from calibnb.losses._common import (
    check_logits_targets,
    check_reduction,
    one_hot_like,
    reduce,
    target_log_prob,
)

#: Added under the square root of MMCE_w, as in the reference code: it bounds the gradient
#: of ``sqrt`` at a perfectly calibrated batch.
MMCE_SQRT_EPS = 1e-10


def brier_loss(logits: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
    """Brier loss ``sum_k (p_k - y_k)^2`` with ``y`` the one-hot label (Brier 1950).

    The ``"mean"`` reduction is what Mukhoti et al.'s code trains on (sum over classes, mean
    over the batch).
    """
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    return reduce(squared_distance_to_label(torch.softmax(logits, dim=1), targets), reduction)


def label_smoothing_loss(logits: Tensor, targets: Tensor, alpha: float = 0.05, reduction: str = "mean") -> Tensor:
    """Cross-entropy against the smoothed label ``(1 - alpha) y + alpha / K`` (Müller et al. 2019).

    PyTorch's convention (``cross_entropy(label_smoothing=alpha)``, which computes it): the
    ``alpha / K`` mass also goes to the true class. ``alpha = 0.05`` is the setting in Mukhoti
    et al.'s tables; their code has no label smoothing, and the FCL code spreads
    ``alpha / (K - 1)`` over the other classes instead.
    """
    alpha = check_real(alpha, "alpha", minimum=0.0, maximum=1.0)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    return F.cross_entropy(logits, targets, reduction=reduction, label_smoothing=alpha)


def mmce_loss(
    logits: Tensor,
    targets: Tensor,
    lam: float = 2.0,
    width: float = 0.4,
    reduction: str = "mean",
) -> Tensor:
    """Cross-entropy plus ``lam`` times the weighted MMCE of the batch (Kumar et al. 2018).

    ``"mean"`` is ``mean CE + lam * MMCE_w`` and ``"sum"`` is ``N`` times that, the objective of
    Mukhoti et al.'s training loop (``lam = 2``, kernel width 0.4); ``"none"`` adds the batch
    term to every sample's cross-entropy, so that its mean is the ``"mean"`` value.
    See :func:`mmce_weighted` for the normalisation; ``width >= 0.01`` keeps its prefix sums
    within float32 range.
    """
    lam = check_real(lam, "lam", minimum=0.0)
    width = check_real(width, "width", minimum=0.01)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    logp, logp_t = target_log_prob(logits, targets)
    penalty = lam * mmce_weighted(logp, targets, width)
    ce = -logp_t
    if reduction == "none":
        return ce + penalty
    return reduce(ce, reduction) + penalty * (len(ce) if reduction == "sum" else 1)


def mmce_weighted(logp: Tensor, targets: Tensor, width: float = 0.4) -> Tensor:
    """Weighted MMCE ``MMCE_w`` of a batch (Kumar et al. 2018) with the Laplacian kernel.

    With ``r`` the top-label confidences, ``C`` the ``m`` correct and ``W`` the ``n`` wrong
    predictions and ``k(a, b) = exp(-|a - b| / width)``::

        MMCE_w^2 = sum_{C x C} (1-r_i)(1-r_j) k / m^2 + sum_{W x W} r_i r_j k / n^2
                   - 2 sum_{C x W} (1-r_i) r_j k / (m n)

    and ``MMCE_w = sqrt(MMCE_w^2 + 1e-10)``; zero when ``C`` or ``W`` is empty. The reference
    code (torrvision/focal_calibration, ``MMCE_weighted``) takes means over each block and then
    divides by ``m^2``, ``n^2``, ``m n`` again, i.e. it normalises twice; calibnb normalises
    once, as in Kumar et al.'s definition. ``MMCE_w^2 = v^T K v`` with
    ``v = 1_C (1 - r) / m - 1_W r / n``; for the one-dimensional Laplacian kernel the lower
    triangle of ``K v`` is a prefix sum over the sorted confidences, and symmetry gives the rest,
    so the cost is ``O(N log N)``, not ``O(N^2)``.
    Takes log-probabilities ``(N, K)`` and validated targets.
    """
    log_r, predicted = logp.max(dim=1)
    r = log_r.exp()
    correct = predicted == targets
    m = correct.sum()
    n = correct.numel() - m
    v = torch.where(correct, (1.0 - r) / m.clamp_min(1), -r / n.clamp_min(1))
    s, order = (r / width).sort()
    v = v[order]
    shift = s - 0.5 / width  # centred exponents stay within +-50 for width >= 0.01
    up, down = shift.exp(), (-shift).exp()
    left = down * (v * up).cumsum(0)  # sum_{j <= i} v_j exp(-(s_i - s_j))
    # the kernel is symmetric: v^T K v = 2 sum_{j <= i} v_i v_j k_ij - sum_i v_i^2
    squared = (2.0 * (v * left).sum() - v.square().sum()).clamp_min(0.0)
    return torch.where((m > 0) & (n > 0), (squared + MMCE_SQRT_EPS).sqrt(), torch.zeros_like(squared))


def squared_distance_to_label(probs: Tensor, targets: Tensor) -> Tensor:
    """``sum_k (p_k - y_k)^2`` per sample ``(N,)``, with ``y`` the one-hot label."""
    return F.mse_loss(probs, one_hot_like(probs, targets), reduction="none").sum(dim=1)
