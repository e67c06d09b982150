"""``torch.nn.Module`` forms of the functional losses, written out as ``torch.nn`` writes its own.

``FocalLoss(gamma=2)(logits, targets)`` is ``focal_loss(logits, targets, gamma=2)``. Each class
takes the keyword parameters of its functional (same names, same defaults), checks them in
``__init__`` with the functional's own checks, so a bad hyper-parameter fails where the loss is
built, stores them as attributes, and calls the functional in ``forward``. ``validate=False``
builds a loss for a training loop that checked its data once: it reads nothing back to the host
(:func:`calibnb.losses.focal_loss`).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from torch import Tensor, nn

from calibnb._validation import check_choice, check_real
from calibnb.losses._common import check_focal_gamma, check_reduction, check_term_weight, check_validate
from calibnb.losses.baselines import brier_loss, label_smoothing_loss, mmce_loss
from calibnb.losses.dual_focal import check_dual, dual_focal_loss, dual_focal_loss_sd
from calibnb.losses.fcl import focal_calibration_loss
from calibnb.losses.focal import (
    FLSD53_GAMMAS,
    FLSD_THRESHOLDS,
    check_inverse_gamma,
    check_schedule,
    cross_entropy,
    focal_loss,
    focal_loss_sd,
    inverse_focal_loss,
)


class _Loss(nn.Module):
    """What the loss modules share: their functional, and their hyper-parameters by name."""

    functional = staticmethod(cross_entropy)

    def __init__(self, reduction: str, validate: bool) -> None:
        super().__init__()
        self.reduction = check_reduction(reduction)
        self.validate = check_validate(validate)

    def hyperparameters(self) -> dict:
        """The functional's keyword arguments, as stored (``reduction`` included)."""
        names = list(inspect.signature(self.functional).parameters)[2:]
        return {name: getattr(self, name) for name in names}

    def extra_repr(self) -> str:
        return ", ".join(f"{key}={value!r}" for key, value in self.hyperparameters().items())


class CrossEntropyLoss(_Loss):
    """Module form of :func:`calibnb.losses.cross_entropy`: ``-log p_t``."""

    functional = staticmethod(cross_entropy)

    def __init__(self, reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return cross_entropy(logits, targets, reduction=self.reduction, validate=self.validate)


class FocalLoss(_Loss):
    """Module form of :func:`calibnb.losses.focal_loss`: ``-(1 - p_t)^γ log p_t`` (Mukhoti et al.
    2020, Eq. 1)."""

    functional = staticmethod(focal_loss)

    def __init__(self, gamma: float = 3.0, reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)
        self.gamma = check_focal_gamma(gamma)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return focal_loss(logits, targets, self.gamma, reduction=self.reduction, validate=self.validate)


class FocalLossSD(_Loss):
    """Module form of :func:`calibnb.losses.focal_loss_sd` (FLSD, Mukhoti et al. 2020, §5)."""

    functional = staticmethod(focal_loss_sd)

    def __init__(self, gammas: Sequence[float] = FLSD53_GAMMAS, thresholds: Sequence[float] = FLSD_THRESHOLDS,
                 reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)
        self.gammas, self.thresholds = check_schedule(gammas, thresholds)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return focal_loss_sd(logits, targets, self.gammas, self.thresholds, reduction=self.reduction, validate=self.validate)


class InverseFocalLoss(_Loss):
    """Module form of :func:`calibnb.losses.inverse_focal_loss`: ``-(1 + p_t)^γ log p_t`` (Ghosh
    et al. 2022, Eq. 1)."""

    functional = staticmethod(inverse_focal_loss)

    def __init__(self, gamma: float = 1.0, reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)
        self.gamma = check_inverse_gamma(gamma)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return inverse_focal_loss(logits, targets, self.gamma, reduction=self.reduction, validate=self.validate)


class DualFocalLoss(_Loss):
    """Module form of :func:`calibnb.losses.dual_focal_loss`: ``-(1 - p_t + p_j)^γ log p_t`` (Tao
    et al. 2023, Eq. 3)."""

    functional = staticmethod(dual_focal_loss)

    def __init__(self, gamma: float = 5.0, dual: str | float = "largest", reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)
        self.gamma = check_focal_gamma(gamma)
        self.dual = check_dual(dual)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return dual_focal_loss(logits, targets, self.gamma, self.dual, reduction=self.reduction, validate=self.validate)


class DualFocalLossSD(FocalLossSD):
    """Module form of :func:`calibnb.losses.dual_focal_loss_sd` (DFL with FLSD's γ schedule,
    the same parameters as :class:`FocalLossSD`)."""

    functional = staticmethod(dual_focal_loss_sd)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return dual_focal_loss_sd(logits, targets, self.gammas, self.thresholds, reduction=self.reduction, validate=self.validate)


class FocalCalibrationLoss(_Loss):
    """Module form of :func:`calibnb.losses.focal_calibration_loss`: ``L_FL + λ ||p - y||^2``."""

    functional = staticmethod(focal_calibration_loss)

    def __init__(self, gamma: float = 2.0, lam: float = 0.5, norm: str = "l2", reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)
        self.gamma = check_focal_gamma(gamma)
        self.lam = check_term_weight(lam)
        self.norm = check_choice(norm, "norm", ("l1", "l2"))

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return focal_calibration_loss(logits, targets, self.gamma, self.lam, self.norm, reduction=self.reduction, validate=self.validate)


class BrierLoss(_Loss):
    """Module form of :func:`calibnb.losses.brier_loss`: ``sum_k (p_k - y_k)^2``."""

    functional = staticmethod(brier_loss)

    def __init__(self, reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return brier_loss(logits, targets, reduction=self.reduction, validate=self.validate)


class LabelSmoothingLoss(_Loss):
    """Module form of :func:`calibnb.losses.label_smoothing_loss` (Müller et al. 2019)."""

    functional = staticmethod(label_smoothing_loss)

    def __init__(self, alpha: float = 0.05, reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)
        self.alpha = check_real(alpha, "alpha", minimum=0.0, maximum=1.0)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return label_smoothing_loss(logits, targets, self.alpha, reduction=self.reduction, validate=self.validate)


class MMCELoss(_Loss):
    """Module form of :func:`calibnb.losses.mmce_loss`: cross-entropy plus ``λ MMCE_w`` (Kumar et
    al. 2018)."""

    functional = staticmethod(mmce_loss)

    def __init__(self, lam: float = 2.0, width: float = 0.4, reduction: str = "mean", validate: bool = True) -> None:
        super().__init__(reduction, validate)
        self.lam = check_term_weight(lam)
        self.width = check_real(width, "width", minimum=0.01)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return mmce_loss(logits, targets, self.lam, self.width, reduction=self.reduction, validate=self.validate)
