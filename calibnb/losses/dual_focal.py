"""Dual focal loss (Tao et al. 2023, Eq. 3), its Table 4 ablations, and DFL-SD.

``-(1 - p_k + p_j)^gamma log p_k`` with ``p_k`` the target's probability and ``p_j`` the
*dual* probability: the largest probability strictly below ``p_k`` (classes tied with ``p_k``
are excluded; ``p_j = 0`` when none is below). Gradients flow through ``p_j``, as in the
authors' code. Classes are compared by their log-probabilities (the authors compare
probabilities; the order is the same up to the rounding of ``exp``). The forward and its
closed-form backward are fused (:mod:`calibnb.losses._fused`; no double backward).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from calibnb._validation import check_choice
from calibnb.losses._common import check_log_probs, check_logits_targets, check_reduction, check_validate
from calibnb.losses._fused import FocalTerm, PerSampleFocalTerm, difference_to_target, dual_classes, focal_family
from calibnb.losses.declarations import DUAL_FOCAL, DUAL_FOCAL_SD, DUALS
from calibnb.losses.focal import scheduled_gamma


def dual_focal_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float = DUAL_FOCAL.default("gamma"),
    dual: str | float = DUAL_FOCAL.default("dual"),
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

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import dual_focal_loss, focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> round(dual_focal_loss(z, t, gamma=5).item(), 4)  # p_j = 0.18 and 0.30
    0.4703
    >>> torch.allclose(dual_focal_loss(z, t, gamma=5, dual=0.0), focal_loss(z, t, gamma=5))  # offset 0: FL
    True
    """
    gamma, dual = DUAL_FOCAL.checked(gamma=gamma, dual=dual)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    if isinstance(dual, float):
        return focal_family(logits, targets, FocalTerm(gamma), offset=dual, reduction=reduction, validate=validate)
    return focal_family(logits, targets, FocalTerm(gamma), dual, reduction=reduction, validate=validate)


def dual_focal_loss_sd(
    logits: Tensor,
    targets: Tensor,
    gammas: Sequence[float] = DUAL_FOCAL_SD.default("gammas"),
    thresholds: Sequence[float] = DUAL_FOCAL_SD.default("thresholds"),
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """DFL-SD: dual focal loss with FLSD's gamma schedule applied to ``p_k - p_j``.

    The sample-dependent variant in the authors' research code (``dual_focal_loss_sd.py``):
    ``gammas[i]`` where ``thresholds[i-1] <= p_k - p_j < thresholds[i]``, no gradient through
    gamma. Defaults are FLSD-53's schedule. ``validate``: see :func:`calibnb.losses.focal_loss`.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import dual_focal_loss, dual_focal_loss_sd
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> dual_focal_loss_sd(z, t, reduction="none")  # p_t - p_j = 0.61 takes gamma 3, 0.03 gamma 5
    tensor([0.0143, 0.9384], dtype=torch.float64)
    >>> dual_focal_loss(z, t, gamma=5, reduction="none")
    tensor([0.0022, 0.9384], dtype=torch.float64)
    """
    gammas, thresholds = DUAL_FOCAL_SD.checked(gammas=gammas, thresholds=thresholds)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    focal = PerSampleFocalTerm(lambda p_t, p_j: scheduled_gamma(p_t - p_j, gammas, thresholds))
    return focal_family(logits, targets, focal, "largest", reduction=reduction, validate=validate)


def target_and_dual(logp: Tensor, targets: Tensor, dual: str = "largest") -> tuple[Tensor, Tensor]:
    """``(log p_t, p_j)`` per sample, both with gradient, from log-probabilities ``(N, K)``.

    Only classes whose log-probability is strictly below the target's count (ties are
    excluded); absent ranks contribute 0. The classes are found without autograd by
    ``calibnb.losses._fused.dual_classes()``; one gather brings ``log p_t`` and the chosen
    ``log p_j`` into the graph. The losses themselves compute the same inside their fused
    forward. ``logp`` (``log_softmax`` of logits) and ``targets`` are checked as
    ``check_log_probs()`` does.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import target_and_dual
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> torch.softmax(z, dim=1)
    tensor([[0.7856, 0.1753, 0.0391],
            [0.3006, 0.3672, 0.3322]], dtype=torch.float64)
    >>> logp = torch.log_softmax(z, dim=1)
    >>> log_p_t, p_j = target_and_dual(logp, t)
    >>> p_j  # the largest probability below p_t: in row 2 class 0's 0.30, not class 1's 0.37
    tensor([0.1753, 0.3006], dtype=torch.float64)
    >>> target_and_dual(logp, t, dual="second")[1]  # row 2 has no second one below p_t
    tensor([0.0391, 0.0000], dtype=torch.float64)
    """
    dual = check_choice(dual, "dual", DUALS)
    logp, targets = check_log_probs(logp, targets)
    with torch.no_grad():
        index, weight = dual_classes(difference_to_target(logp, targets[:, None]), dual)
    picked = logp.gather(1, torch.cat([targets[:, None], index], dim=1))
    return picked[:, 0], (weight * picked[:, 1:].exp()).sum(1)

