"""Dual focal loss (Tao et al. 2023, Eq. 3), its Table 4 ablations, and DFL-SD.

``-(1 - p_k + p_j)^gamma log p_k`` with ``p_k`` the target's probability and ``p_j`` the
*dual* probability: the largest probability strictly below ``p_k`` (classes tied with ``p_k``
are excluded; ``p_j = 0`` when none is below). Gradients flow through ``p_j``, as in the
authors' code. Classes are compared by their log-probabilities (the authors compare
probabilities; the order is the same up to the rounding of ``exp``).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
from torch import Tensor

from calibnb._validation import check_choice, check_real
from calibnb.losses._common import (
    check_logits_targets,
    check_reduction,
    focal_weight,
    one_minus_exp,
    reduce,
    target_log_prob,
)
from calibnb.losses.focal import FLSD53_GAMMAS, FLSD_THRESHOLDS, check_schedule, scheduled_gamma

#: Subtracted from the search score of classes tied with or above the target (finite, so that
#: it never turns a finite log-probability into -inf or NaN in float32).
_EXCLUDED = 1e30

#: The choices of ``p_j`` in Table 4 of Tao et al. (2023): rank below ``p_k`` and how to combine.
DUAL_CHOICES = {
    "largest": (1, "rank"),  # the paper's DFL
    "second": (2, "rank"),
    "third": (3, "rank"),
    "mean_top2": (2, "mean"),
    "mean_top3": (3, "mean"),
    "mean_all": (None, "mean"),
}


def dual_focal_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float = 5.0,
    dual: str | float = "largest",
    reduction: str = "mean",
) -> Tensor:
    """Dual focal loss ``-(1 - p_k + p_j)^gamma log p_k`` (Tao et al. 2023, Eq. 3).

    ``dual`` chooses ``p_j`` (Table 4 of the paper): ``"largest"`` (DFL) is the largest
    probability strictly below ``p_k``; ``"second"``/``"third"`` the 2nd/3rd largest below it;
    ``"mean_top2"``/``"mean_top3"`` the mean of the 2/3 largest below it (missing ones count
    as 0); ``"mean_all"`` the mean of all probabilities below it; a number in ``[0, 1]`` is a
    fixed offset in place of ``p_j`` (the table's "+0.1", "+0.2"; 0 is focal loss).
    The default ``gamma = 5`` is the authors' setting for ResNet-50 on CIFAR-10/100.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    dual = check_dual(dual)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    if isinstance(dual, float):
        _, logp_t = target_log_prob(logits, targets)
        p_j = dual
    else:
        logp_t, p_j = target_and_dual(torch.log_softmax(logits, dim=1), targets, dual)
    base = one_minus_exp(logp_t) + p_j
    return reduce(-focal_weight(base, gamma) * logp_t, reduction)


def dual_focal_loss_sd(
    logits: Tensor,
    targets: Tensor,
    gammas: Sequence[float] = FLSD53_GAMMAS,
    thresholds: Sequence[float] = FLSD_THRESHOLDS,
    reduction: str = "mean",
) -> Tensor:
    """DFL-SD: dual focal loss with FLSD's gamma schedule applied to ``p_k - p_j``.

    The sample-dependent variant in the authors' research code (``dual_focal_loss_sd.py``):
    ``gammas[i]`` where ``thresholds[i-1] <= p_k - p_j < thresholds[i]``, no gradient through
    gamma. Defaults are FLSD-53's schedule.
    """
    gammas, thresholds = check_schedule(gammas, thresholds)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    logp_t, p_j = target_and_dual(torch.log_softmax(logits, dim=1), targets)
    gamma = scheduled_gamma((logp_t.exp() - p_j).detach(), gammas, thresholds)
    base = one_minus_exp(logp_t) + p_j
    return reduce(-focal_weight(base, gamma) * logp_t, reduction)


def target_and_dual(logp: Tensor, targets: Tensor, dual: str = "largest") -> tuple[Tensor, Tensor]:
    """``(log p_t, p_j)`` per sample, both with gradient, from log-probabilities ``(N, K)``.

    Only classes whose log-probability is strictly below the target's count (ties are
    excluded); absent ranks contribute 0. The search runs without autograd on a score that is
    ``log p`` below the target and pushed down by ``_EXCLUDED`` (once for ties, twice above),
    built from arithmetic only (comparisons and ``where`` on ``(N, K)`` cost several times
    more on CPUs); one gather brings ``log p_t`` and the chosen ``log p_j`` into the graph.
    """
    rank, how = DUAL_CHOICES[dual]
    lp = logp.detach()
    score = torch.sign(lp.gather(1, targets[:, None]) - lp).sub_(1).mul_(_EXCLUDED).add_(lp)
    if rank is None:
        below = (score > -_EXCLUDED / 2).to(logp.dtype)
        logp_t = logp.gather(1, targets[:, None]).squeeze(1)
        return logp_t, (logp.exp() * below).sum(1) / below.sum(1).clamp_min(1)
    if rank == 1:
        top, index = score.max(dim=1, keepdim=True)
    else:
        top, index = score.topk(min(rank, lp.shape[1]), dim=1)
    picked = logp.gather(1, torch.cat([targets[:, None], index], dim=1))
    p = picked[:, 1:].exp() * (top > -_EXCLUDED / 2)
    if how == "mean":
        p_j = p.sum(1) / rank
    else:
        p_j = p[:, rank - 1] if rank <= p.shape[1] else torch.zeros_like(picked[:, 0])
    return picked[:, 0], p_j


def check_dual(dual: str | float) -> str | float:
    """Validate ``dual``: one of :data:`DUAL_CHOICES` or a fixed offset in ``[0, 1]``."""
    if isinstance(dual, str):
        return check_choice(dual, "dual", DUAL_CHOICES)
    if isinstance(dual, numbers.Real) and not isinstance(dual, bool):
        return check_real(dual, "dual", minimum=0.0, maximum=1.0)
    raise TypeError(f"dual must be one of {sorted(DUAL_CHOICES)} or a number in [0, 1], got {dual!r}")
