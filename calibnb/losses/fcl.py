"""Focal calibration loss (FCL): focal loss plus a squared-Euclidean (Brier) term.

``FL_gamma + lam * sum_k (p_k - y_k)^2`` with ``y`` the one-hot label: the squared distance
to the label, summed over classes, no square root, as in the authors' ``FCLUngated``
(EagleAdelaide/Focal-Calibration-Loss-FCL). The paper's Appendix A.15 ablation replaces the
squared L2 distance by the L1 distance ``sum_k |p_k - y_k|``, which equals ``2 (1 - p_t)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from calibnb.losses._common import check_logits_targets, check_reduction, check_validate, reduce
from calibnb.losses._fused import FocalTerm, focal_family
from calibnb.losses.declarations import FCL


def focal_calibration_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float = FCL.default("gamma"),
    lam: float = FCL.default("lam"),
    norm: str = FCL.default("norm"),
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """Focal calibration loss ``-(1 - p_t)^gamma log p_t + lam * ||p - y||`` (FCL paper, §3).

    ``norm="l2"`` is the squared Euclidean distance ``sum_k (p_k - y_k)^2`` (the paper's loss);
    ``norm="l1"`` the L1 distance of the Appendix A.15 ablation. Defaults ``gamma = 2``,
    ``lam = 0.5`` are the paper's choice for WRN-26-10 and DenseNet-121 on CIFAR-10
    (Appendix A.10). ``lam = 0`` is focal loss; ``gamma = 0`` is cross-entropy plus the term.
    ``gamma <= 1000`` and ``lam <= 1e6`` (``FOCAL_GAMMA_MAX``,
    ``TERM_WEIGHT_MAX``) keep float32 values and gradients finite.
    Forward and closed-form backward are fused (``calibnb.losses._fused``).
    ``validate``: see :func:`calibnb.losses.focal_loss`.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import brier_loss, focal_calibration_loss, focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> round(focal_calibration_loss(z, t, gamma=2, lam=0.5).item(), 4)
    0.4386
    >>> round((focal_loss(z, t, gamma=2) + 0.5 * brier_loss(z, t)).item(), 4)  # FL-2 plus half the Brier loss
    0.4386
    >>> round(focal_calibration_loss(z, t, gamma=2, lam=0).item(), 4)  # lam = 0 is focal loss
    0.2512
    """
    gamma, lam, norm = FCL.checked(gamma=gamma, lam=lam, norm=norm)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    term = FocalTerm(gamma)
    if norm == "l2":
        return focal_family(logits, targets, term, brier=lam, reduction=reduction, validate=validate)
    focal = focal_family(logits, targets, term, validate=validate)
    # sum_k |p_k - y_k| = 2 (1 - p_t), computed as -2 expm1(log p_t)
    distance = -2.0 * torch.expm1(torch.log_softmax(logits, dim=1).gather(1, targets[:, None]).squeeze(1))
    return reduce(focal + lam * distance, reduction)
