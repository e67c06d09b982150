"""``get_loss(name, **params)``: the losses by the names that notebooks and sweep files use."""

from __future__ import annotations

from calibnb.losses import modules
from calibnb.losses.adafocal import AdaFocalLoss, CalFocalLoss
from calibnb.losses.base import TrainingLoss

#: Each loss module by its declaration's name (``calibnb.losses.declarations``): the functional
#: losses' names, and the stateful ``"adafocal"`` and ``"calfocal"``.
LOSSES: dict[str, type[TrainingLoss]] = {
    cls.declaration.name: cls
    for cls in (
        modules.CrossEntropyLoss,
        modules.FocalLoss,
        modules.FocalLossSD,
        modules.InverseFocalLoss,
        modules.DualFocalLoss,
        modules.DualFocalLossSD,
        modules.FocalCalibrationLoss,
        modules.BrierLoss,
        modules.LabelSmoothingLoss,
        modules.MMCELoss,
        AdaFocalLoss,
        CalFocalLoss,
    )
}


def get_loss(name: str, **params) -> TrainingLoss:
    """Build the loss module registered as ``name`` with hyper-parameters ``params``.

    ``get_loss("focal_loss", gamma=3)`` is ``FocalLoss(gamma=3)``; ``get_loss("adafocal")``
    is ``AdaFocalLoss()``. Raises ``ValueError`` for an unknown name and the loss's own
    ``TypeError``/``ValueError`` for unknown or invalid parameters.

    Examples
    --------
    >>> from calibnb.losses import LOSSES, get_loss
    >>> get_loss("focal_loss", gamma=3)
    FocalLoss(gamma=3.0, reduction='mean', validate=True)
    >>> get_loss("adafocal", n_bins=10)
    AdaFocalLoss(n_bins=10, lam=1.0, gamma_max=20.0, gamma_min=-2.0, switch=0.2, base='focal', reduction='mean')
    >>> sorted(LOSSES)
    ['adafocal', 'brier_loss', 'calfocal', 'cross_entropy', 'dual_focal_loss', 'dual_focal_loss_sd',
     'focal_calibration_loss', 'focal_loss', 'focal_loss_sd', 'inverse_focal_loss', 'label_smoothing_loss',
     'mmce_loss']
    """
    if name not in LOSSES:
        raise ValueError(f"name must be one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name](**params)
