"""Focal calibration loss (FCL): focal loss plus a squared-Euclidean (Brier) term.

``FL_gamma + lam * sum_k (p_k - y_k)^2`` with ``y`` the one-hot label: the squared distance
to the label, summed over classes, no square root, as in the authors' ``FCLUngated``
(EagleAdelaide/Focal-Calibration-Loss-FCL). The paper's Appendix A.15 ablation replaces the
squared L2 distance by the L1 distance ``sum_k |p_k - y_k|``, which equals ``2 (1 - p_t)``.
"""

from __future__ import annotations

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
from calibnb.losses.baselines import squared_distance_to_label


def focal_calibration_loss(
    logits: Tensor,
    targets: Tensor,
    gamma: float = 2.0,
    lam: float = 0.5,
    norm: str = "l2",
    reduction: str = "mean",
) -> Tensor:
    """Focal calibration loss ``-(1 - p_t)^gamma log p_t + lam * ||p - y||`` (FCL paper, §3).

    ``norm="l2"`` is the squared Euclidean distance ``sum_k (p_k - y_k)^2`` (the paper's loss);
    ``norm="l1"`` the L1 distance of the Appendix A.15 ablation. Defaults ``gamma = 2``,
    ``lam = 0.5`` are the paper's choice for WRN-26-10 and DenseNet-121 on CIFAR-10
    (Appendix A.10). ``lam = 0`` is focal loss; ``gamma = 0`` is cross-entropy plus the term.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    lam = check_real(lam, "lam", minimum=0.0)
    norm = check_choice(norm, "norm", ("l1", "l2"))
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets)
    logp, logp_t = target_log_prob(logits, targets)
    one_minus_p_t = one_minus_exp(logp_t)
    focal = -focal_weight(one_minus_p_t, gamma) * logp_t
    if norm == "l2":
        distance = squared_distance_to_label(logp.exp(), targets)
    else:
        distance = 2.0 * one_minus_p_t
    return reduce(focal + lam * distance, reduction)
