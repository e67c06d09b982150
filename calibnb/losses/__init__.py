"""Training losses on logits: the focal-loss family of five calibration papers and their baselines.

Functional forms take logits ``(N, K)`` and integer targets ``(N,)`` and a ``reduction``
(``"mean"`` by default, ``"sum"``, ``"none"``), like ``torch.nn.functional``; each has an
``nn.Module`` twin of the same name in CamelCase; :class:`AdaFocalLoss` is stateful; and
:func:`get_loss` builds any of them by name.
"""

from calibnb.losses.adafocal import AdaFocalLoss, CalFocalLoss, adafocal_loss, adafocal_update
from calibnb.losses.baselines import brier_loss, label_smoothing_loss, mmce_loss, mmce_weighted
from calibnb.losses.dual_focal import dual_focal_loss, dual_focal_loss_sd, target_and_dual
from calibnb.losses.curves import loss_along_pt
from calibnb.losses.fcl import focal_calibration_loss
from calibnb.losses.focal import cross_entropy, focal_loss, focal_loss_sd, inverse_focal_loss
from calibnb.losses.modules import (
    BrierLoss,
    CrossEntropyLoss,
    DualFocalLoss,
    DualFocalLossSD,
    FocalCalibrationLoss,
    FocalLoss,
    FocalLossSD,
    InverseFocalLoss,
    LabelSmoothingLoss,
    MMCELoss,
)
from calibnb.losses.registry import LOSSES, get_loss

__all__ = [
    "AdaFocalLoss",
    "BrierLoss",
    "CalFocalLoss",
    "CrossEntropyLoss",
    "DualFocalLoss",
    "DualFocalLossSD",
    "FocalCalibrationLoss",
    "FocalLoss",
    "FocalLossSD",
    "InverseFocalLoss",
    "LOSSES",
    "LabelSmoothingLoss",
    "MMCELoss",
    "adafocal_loss",
    "adafocal_update",
    "brier_loss",
    "cross_entropy",
    "dual_focal_loss",
    "dual_focal_loss_sd",
    "focal_calibration_loss",
    "focal_loss",
    "focal_loss_sd",
    "get_loss",
    "inverse_focal_loss",
    "label_smoothing_loss",
    "loss_along_pt",
    "mmce_loss",
    "mmce_weighted",
    "target_and_dual",
]
