"""Dual focal loss (Tao et al. 2023, Eq. 3), its Table 4 ablations, and DFL-SD.

``-(1 - p_k + p_j)^gamma log p_k`` with ``p_k`` the target's probability and ``p_j`` the
*dual* probability: the largest probability strictly below ``p_k`` (classes tied with ``p_k``
are excluded; ``p_j = 0`` when none is below). Gradients flow through ``p_j``, as in the
authors' code. Classes are compared by their log-probabilities (the authors compare
probabilities; the order is the same up to the rounding of ``exp``). The forward and its
closed-form backward are fused (:mod:`calibnb.losses._fused`; no double backward).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
from torch import Tensor

from calibnb._validation import check_choice, check_real
from calibnb.losses._common import (
    check_focal_gamma, check_log_probs, check_logits_targets, check_reduction, check_validate,
)
from calibnb.losses._fused import (
    DUAL_CHOICES, FocalTerm, PerSampleFocalTerm, difference_to_target, dual_classes, focal_family,
)
from calibnb.losses.focal import FLSD53_GAMMAS, FLSD_THRESHOLDS, check_schedule, scheduled_gamma

#: The choices of ``dual`` (Table 4 of Tao et al. 2023); ``"none"`` is internal (focal loss).
DUALS = tuple(name for name in DUAL_CHOICES if name != "none")


def dual_focal_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float = 5.0,
    dual: str | float = "largest",
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """Dual focal loss ``-(1 - p_k + p_j)^gamma log p_k`` (Tao et al. 2023, Eq. 3).

    ``dual`` chooses ``p_j`` (Table 4 of the paper): ``"largest"`` (DFL) is the largest
    probability strictly below ``p_k``; ``"second"``/``"third"`` the 2nd/3rd largest below it;
    ``"mean_top2"``/``"mean_top3"`` the mean of the 2/3 largest below it (missing ones count
    as 0); ``"mean_all"`` the mean of all probabilities below it; a number in ``[0, 1]`` is a
    fixed offset in place of ``p_j`` (the table's "+0.1", "+0.2"; 0 is focal loss).
    The default ``gamma = 5`` is the authors' setting for ResNet-50 on CIFAR-10/100.
    ``validate``: see :func:`calibnb.losses.focal_loss`.
    """
    gamma = check_focal_gamma(gamma)
    dual = check_dual(dual)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    if isinstance(dual, float):
        return focal_family(logits, targets, FocalTerm(gamma), offset=dual, reduction=reduction, validate=validate)
    return focal_family(logits, targets, FocalTerm(gamma), dual, reduction=reduction, validate=validate)


def dual_focal_loss_sd(
    logits: Tensor,
    targets: Tensor,
    gammas: Sequence[float] = FLSD53_GAMMAS,
    thresholds: Sequence[float] = FLSD_THRESHOLDS,
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """DFL-SD: dual focal loss with FLSD's gamma schedule applied to ``p_k - p_j``.

    The sample-dependent variant in the authors' research code (``dual_focal_loss_sd.py``):
    ``gammas[i]`` where ``thresholds[i-1] <= p_k - p_j < thresholds[i]``, no gradient through
    gamma. Defaults are FLSD-53's schedule. ``validate``: see :func:`calibnb.losses.focal_loss`.
    """
    gammas, thresholds = check_schedule(gammas, thresholds)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    focal = PerSampleFocalTerm(lambda p_t, p_j: scheduled_gamma(p_t - p_j, gammas, thresholds))
    return focal_family(logits, targets, focal, "largest", reduction=reduction, validate=validate)


def target_and_dual(logp: Tensor, targets: Tensor, dual: str = "largest") -> tuple[Tensor, Tensor]:
    """``(log p_t, p_j)`` per sample, both with gradient, from log-probabilities ``(N, K)``.

    Only classes whose log-probability is strictly below the target's count (ties are
    excluded); absent ranks contribute 0. The classes are found without autograd by
    :func:`calibnb.losses._fused.dual_classes`; one gather brings ``log p_t`` and the chosen
    ``log p_j`` into the graph. The losses themselves compute the same inside their fused
    forward. ``logp`` (``log_softmax`` of logits) and ``targets`` are checked as
    :func:`~calibnb.losses._common.check_log_probs` does.
    """
    dual = check_choice(dual, "dual", DUALS)
    logp, targets = check_log_probs(logp, targets)
    with torch.no_grad():
        index, weight = dual_classes(difference_to_target(logp, targets[:, None]), dual)
    picked = logp.gather(1, torch.cat([targets[:, None], index], dim=1))
    return picked[:, 0], (weight * picked[:, 1:].exp()).sum(1)


def check_dual(dual: str | float) -> str | float:
    """Validate ``dual``: one of :data:`DUALS` or a fixed offset in ``[0, 1]``."""
    if isinstance(dual, str):
        return check_choice(dual, "dual", DUALS)
    if isinstance(dual, numbers.Real) and not isinstance(dual, bool):
        return check_real(dual, "dual", minimum=0.0, maximum=1.0)
    raise TypeError(f"dual must be one of {sorted(DUALS)} or a number in [0, 1], got {dual!r}")
